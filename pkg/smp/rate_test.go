package smp

import "testing"

// The width x speed table of diags-formats.md §3.9 (OpenSM's
// ib_port_info_compute_rate), row by row.
func TestLinkRateTable(t *testing.T) {
	widths := []uint8{Width1x, Width2x, Width4x, Width8x, Width12x}
	rows := []struct {
		name           string
		ispeed, espeed uint8
		want           [5]uint8
	}{
		{"SDR", SpeedSDR, 0, [5]uint8{2, 5, 3, 6, 4}},
		{"DDR", SpeedDDR, 0, [5]uint8{5, 3, 6, 7, 8}},
		{"QDR", SpeedQDR, 0, [5]uint8{3, 6, 7, 9, 10}},
		{"FDR", SpeedQDR, ExtSpeedFDR, [5]uint8{11, 19, 12, 13, 14}},
		{"EDR", SpeedQDR, ExtSpeedEDR, [5]uint8{15, 20, 16, 17, 18}},
		{"HDR", SpeedQDR, ExtSpeedHDR, [5]uint8{20, 16, 17, 21, 22}},
		{"NDR", SpeedQDR, ExtSpeedNDR, [5]uint8{16, 17, 21, 23, 24}},
		// OpenSM knows no XDR: it falls back to LinkSpeedActive.
		{"XDR", SpeedQDR, ExtSpeedXDR, [5]uint8{3, 6, 7, 9, 10}},
		{"unknown speed", 3, 0, [5]uint8{2, 2, 2, 2, 2}},
	}
	for _, r := range rows {
		for i, w := range widths {
			if got := LinkRate(w, r.ispeed, r.espeed); got != r.want[i] {
				t.Errorf("%s %s: rate %d, want %d", WidthToken(w), r.name, got, r.want[i])
			}
		}
	}
	if got := LinkRate(3, SpeedQDR, ExtSpeedEDR); got != Rate2_5 {
		t.Errorf("unknown width: %d", got)
	}
}

func TestPortRateFromVectors(t *testing.T) {
	sw0 := portInfoOf(t, "sp-portinfo-0-0")
	tests := []struct {
		pi   string
		caps *PortInfo
		want uint8
	}{
		{"sp-portinfo-0-1", sw0, Rate100}, // 4x EDR
		{"sp-portinfo-0-2", sw0, Rate40},  // 4x FDR10 = QDR for OpenSM
		{"sp-portinfo-0-3", sw0, Rate200}, // 4x HDR
		{"sp-portinfo-0-4", sw0, Rate5},   // 1x DDR
		{"sp-portinfo-0,1", nil, Rate100}, // CA 4x EDR
		{"2sw-portinfo-0,1", nil, Rate10}, // CA 4x SDR
		{"sp-portinfo-0-1", nil, Rate40},  // switch port with its own (zero) caps
	}
	for _, tt := range tests {
		p := portInfoOf(t, tt.pi)
		caps := tt.caps
		if caps == nil {
			caps = p
		}
		if got := PortRate(p, caps); got != tt.want {
			t.Errorf("%s: rate %d (%s), want %d", tt.pi, got, RateText(got), tt.want)
		}
	}
}

func TestRateValues(t *testing.T) {
	gbps := map[uint8]float64{
		0: 0, 1: 0, 2: 2.5, 3: 10, 4: 30, 5: 5, 6: 20, 7: 40, 8: 60, 9: 80, 10: 120,
		11: 14, 12: 56, 13: 112, 14: 168, 15: 25, 16: 100, 17: 200, 18: 300, 19: 28,
		20: 50, 21: 400, 22: 600, 23: 800, 24: 1200, 25: 0, 255: 0,
	}
	for c, want := range gbps {
		if got := RateGbps(c); got != want {
			t.Errorf("RateGbps(%d) = %v, want %v", c, got, want)
		}
	}
	texts := map[uint8]string{2: "2.5 Gb/sec", 3: "10 Gb/sec", 16: "100 Gb/sec", 24: "1200 Gb/sec", 0: "?(0)", 25: "?(25)"}
	for c, want := range texts {
		if got := RateText(c); got != want {
			t.Errorf("RateText(%d) = %q, want %q", c, got, want)
		}
	}
}

// OpenSM's ordered_rates: ascending order of §3.9.
func TestRateRank(t *testing.T) {
	ascending := []uint8{2, 5, 3, 11, 6, 4, 15, 19, 7, 8, 20, 12, 9, 10, 16, 13, 14, 17, 18, 21, 22, 23, 24}
	for i, c := range ascending {
		if RateRank(c) != i+1 {
			t.Errorf("RateRank(%d) = %d, want %d", c, RateRank(c), i+1)
		}
		if i > 0 {
			prev := ascending[i-1]
			if PrevRate(c) != prev || NextRate(prev) != c {
				t.Errorf("PrevRate(%d) = %d, NextRate(%d) = %d", c, PrevRate(c), prev, NextRate(prev))
			}
			if MinRate(c, prev) != prev || MinRate(prev, c) != prev || CompareRates(prev, c) != -1 {
				t.Errorf("MinRate(%d, %d)", c, prev)
			}
		}
	}
	if PrevRate(Rate2_5) != 0 || NextRate(Rate1200) != 0 || PrevRate(0) != 0 || NextRate(99) != 0 {
		t.Error("ends of the rank order")
	}
	// 12x SDR (30G) ranks below 1x EDR (25G).
	if MinRate(Rate30, Rate25) != Rate30 {
		t.Error("30G vs 25G")
	}
	if RateRank(0) != 0 || RateRank(1) != 0 || RateRank(200) != 0 {
		t.Error("unknown codes rank 0")
	}
	if MinRate(Rate10, Rate10) != Rate10 || CompareRates(Rate10, Rate10) != 0 {
		t.Error("ties")
	}
}

package linkinfo_test

import (
	"testing"

	"github.com/ibfabric/ibdiag/pkg/linkinfo"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// end is one end of a link in a hint case.
type end struct {
	sw        bool      // on a switch (capabilities from its port 0)
	noPort0   bool      // a switch whose port 0 was never read
	ext       bool      // IsExtendedSpeedsSupported in the capability mask
	wSup, wAc uint8     // LinkWidthSupported, LinkWidthActive
	sSup, sAc uint8     // LinkSpeedSupported, LinkSpeedActive
	eSup, eAc uint8     // LinkSpeedExtSupported, LinkSpeedExtActive
	mlnx      *[2]uint8 // Mellanox ExtendedPortInfo speed supported, active
}

func (e end) port() *model.PhysPort {
	t := smp.NodeCA
	if e.sw {
		t = smp.NodeSwitch
	}
	n := &model.Node{Info: smp.NodeInfo{NodeType: t, NumPorts: 1}}
	p := n.EnsurePort(1, 1)
	p.HasInfo = true
	pi := &p.Info
	pi.LinkWidthSupported, pi.LinkWidthActive = e.wSup, e.wAc
	pi.LinkSpeedSupported, pi.LinkSpeedActive = e.sSup, e.sAc
	pi.LinkSpeedExtSupported, pi.LinkSpeedExtActive = e.eSup, e.eAc
	caps := pi
	if e.sw {
		caps = &smp.PortInfo{}
		if !e.noPort0 {
			z := n.EnsurePort(0, 1)
			z.HasInfo = true
			caps = &z.Info
		}
	}
	if e.ext {
		caps.CapabilityMask |= smp.CapIsExtendedSpeedsSupp
	}
	if e.mlnx != nil {
		var b [smp.DataSize]byte
		b[7], b[15] = e.mlnx[0], e.mlnx[1]
		p.SetExtInfo(b[:])
	}
	return p
}

// TestHints checks iblinkinfo's "Could be" logic (get_max_msg of
// infiniband-diags 44) case by case.
func TestHints(t *testing.T) {
	const (
		w1, w4, w8, w12, w2 = smp.Width1x, smp.Width4x, smp.Width8x, smp.Width12x, smp.Width2x
		sdr, ddr, qdr       = smp.SpeedSDR, smp.SpeedDDR, smp.SpeedQDR
		fdr, edr, hdr       = 1, 2, 4
	)
	qdrLink := end{wSup: w4, wAc: w4, sSup: sdr | ddr | qdr, sAc: qdr}
	fdr10 := &[2]uint8{smp.MlnxSpeedFDR10, smp.MlnxSpeedFDR10}
	fdr10Idle := &[2]uint8{smp.MlnxSpeedFDR10, 0}
	for _, c := range []struct {
		name         string
		p, q         end
		width, speed string
	}{
		{"at best", qdrLink, qdrLink, "", ""},
		{"12X both, runs 4X", end{wSup: w1 | w4 | w12, wAc: w4, sSup: sdr, sAc: sdr}, end{wSup: w1 | w4 | w12, sSup: sdr}, "Could be 12X", ""},
		{"8X both, runs 4X", end{wSup: w4 | w8, wAc: w4, sSup: sdr, sAc: sdr}, end{wSup: w4 | w8 | w12, sSup: sdr}, "Could be 8X", ""},
		{"2X both, runs 2X", end{wSup: w1 | w2, wAc: w2, sSup: sdr, sAc: sdr}, end{wSup: w2, sSup: sdr}, "", ""},
		{"no common width reads 1X", end{wSup: w4, wAc: w4, sSup: sdr, sAc: sdr}, end{wSup: w1, sSup: sdr}, "Could be 1X", ""},
		{"QDR both, runs SDR", end{wSup: w4, wAc: w4, sSup: 7, sAc: sdr}, end{wSup: w4, sSup: 7}, "", "Could be 10.0 Gbps"},
		{"DDR common, runs SDR", end{wSup: w4, wAc: w4, sSup: 7, sAc: sdr}, end{wSup: w4, sSup: sdr | ddr}, "", "Could be 5.0 Gbps"},
		{"no common speed reads SDR", end{wSup: w4, wAc: w4, sSup: qdr, sAc: qdr}, end{wSup: w4, sSup: ddr}, "", "Could be 2.5 Gbps"},
		{"both at width and speed", end{wSup: 15, wAc: w4, sSup: 7, sAc: sdr}, end{wSup: 15, sSup: 7}, "Could be 12X", "Could be 10.0 Gbps"},
		{"EDR both, runs FDR", end{ext: true, wSup: w4, wAc: w4, sSup: 7, sAc: qdr, eSup: fdr | edr, eAc: fdr},
			end{ext: true, wSup: w4, sSup: 7, eSup: fdr | edr | hdr}, "", "Could be 25.78125 Gbps"},
		{"HDR both, runs HDR", end{ext: true, wSup: w4, wAc: w4, sSup: 7, sAc: qdr, eSup: 7, eAc: hdr},
			end{ext: true, wSup: w4, sSup: 7, eSup: 7}, "", ""},
		{"no common ext speed reads FDR", end{ext: true, wSup: w4, wAc: w4, sSup: 7, sAc: qdr, eSup: edr, eAc: edr},
			end{ext: true, wSup: w4, sSup: 7, eSup: fdr}, "", "Could be 14.0625 Gbps"},
		{"ext speeds on one end only: base speeds", end{ext: true, wSup: w4, wAc: w4, sSup: 7, sAc: ddr, eSup: fdr},
			end{wSup: w4, sSup: 7, eSup: fdr}, "", "Could be 10.0 Gbps"},
		{"ext supported 0 on the peer: base speeds", end{ext: true, wSup: w4, wAc: w4, sSup: 7, sAc: qdr, eSup: fdr},
			end{ext: true, wSup: w4, sSup: 7}, "", ""},
		{"switch port: capabilities of port 0", end{sw: true, ext: true, wSup: w4, wAc: w4, sSup: 7, sAc: qdr, eSup: 3, eAc: fdr},
			end{ext: true, wSup: w4, sSup: 7, eSup: 3}, "", "Could be 25.78125 Gbps"},
		{"switch without port 0: no ext speeds", end{sw: true, noPort0: true, ext: true, wSup: w4, wAc: w4, sSup: 7, sAc: qdr, eSup: 3, eAc: fdr},
			end{ext: true, wSup: w4, sSup: 7, eSup: 3}, "", ""},
		{"FDR10 both, runs FDR10", end{wSup: w4, wAc: w4, sSup: 7, sAc: qdr, mlnx: fdr10}, end{wSup: w4, sSup: 7, mlnx: fdr10}, "", ""},
		{"FDR10 both, runs QDR", end{wSup: w4, wAc: w4, sSup: 7, sAc: qdr, mlnx: fdr10Idle}, end{wSup: w4, sSup: 7, mlnx: fdr10Idle},
			"", "Could be FDR10 (Found link at QDR but expected speed is FDR10)"},
		{"FDR10 both, runs DDR", end{wSup: w4, wAc: w4, sSup: 7, sAc: ddr, mlnx: fdr10Idle}, end{wSup: w4, sSup: 7, mlnx: fdr10Idle},
			"", "Could be FDR10"},
		{"FDR10 on one end only", end{wSup: w4, wAc: w4, sSup: 7, sAc: ddr, mlnx: fdr10Idle}, end{wSup: w4, sSup: 7},
			"", "Could be 10.0 Gbps"},
	} {
		w, s := linkinfo.Hints(c.p.port(), c.q.port())
		if w != c.width || s != c.speed {
			t.Errorf("%s: Hints = %q, %q; want %q, %q", c.name, w, s, c.width, c.speed)
		}
	}
}

package smp

import "strconv"

// PathRecord rate codes (the verbs ibv_rate numbering).
const (
	Rate2_5  uint8 = 2
	Rate10   uint8 = 3
	Rate30   uint8 = 4
	Rate5    uint8 = 5
	Rate20   uint8 = 6
	Rate40   uint8 = 7
	Rate60   uint8 = 8
	Rate80   uint8 = 9
	Rate120  uint8 = 10
	Rate14   uint8 = 11
	Rate56   uint8 = 12
	Rate112  uint8 = 13
	Rate168  uint8 = 14
	Rate25   uint8 = 15
	Rate100  uint8 = 16
	Rate200  uint8 = 17
	Rate300  uint8 = 18
	Rate28   uint8 = 19
	Rate50   uint8 = 20
	Rate400  uint8 = 21
	Rate600  uint8 = 22
	Rate800  uint8 = 23
	Rate1200 uint8 = 24

	// MaxRate is the highest rate code known here.
	MaxRate = Rate1200
)

// rateTable[lane][width column] with columns 1x, 2x, 4x, 8x, 12x.
var rateTable = [...][5]uint8{
	{Rate2_5, Rate5, Rate10, Rate20, Rate30},       // SDR
	{Rate5, Rate10, Rate20, Rate40, Rate60},        // DDR
	{Rate10, Rate20, Rate40, Rate80, Rate120},      // QDR, FDR10
	{Rate14, Rate28, Rate56, Rate112, Rate168},     // FDR
	{Rate25, Rate50, Rate100, Rate200, Rate300},    // EDR
	{Rate50, Rate100, Rate200, Rate400, Rate600},   // HDR
	{Rate100, Rate200, Rate400, Rate800, Rate1200}, // NDR
}

func widthColumn(w uint8) int {
	switch w {
	case Width1x:
		return 0
	case Width2x:
		return 1
	case Width4x:
		return 2
	case Width8x:
		return 3
	case Width12x:
		return 4
	}
	return -1
}

// LinkRate is the PathRecord rate code of a link of width w (a
// LinkWidthActive code) running at LinkSpeedActive ispeed and aggregated
// extended speed espeed, as OpenSM computes it: FDR10 counts as QDR, an
// extended speed OpenSM does not know (XDR) falls back to ispeed, and an
// unknown width or speed gives Rate2_5.
func LinkRate(w, ispeed, espeed uint8) uint8 {
	col := widthColumn(w)
	if col < 0 {
		return Rate2_5
	}
	lane := -1
	switch espeed {
	case ExtSpeedFDR:
		lane = 3
	case ExtSpeedEDR:
		lane = 4
	case ExtSpeedHDR:
		lane = 5
	case ExtSpeedNDR:
		lane = 6
	}
	if lane < 0 {
		switch ispeed {
		case SpeedSDR:
			lane = 0
		case SpeedDDR:
			lane = 1
		case SpeedQDR:
			lane = 2
		default:
			return Rate2_5
		}
	}
	return rateTable[lane][col]
}

// PortRate is LinkRate for a port's PortInfo; caps supplies the
// capability mask that decides whether extended speeds count (the
// switch's port 0 for switch ports, the port itself otherwise).
func PortRate(port, caps *PortInfo) uint8 {
	if port == nil {
		return Rate2_5
	}
	return LinkRate(port.LinkWidthActive, port.LinkSpeedActive, AggregatedExtSpeed(port, caps))
}

// rateInfo per code: nominal Gb/s ×10 and OpenSM's ordered_rates rank.
var rateInfo = [MaxRate + 1]struct {
	deciGbps uint16
	rank     uint8
}{
	Rate2_5: {25, 1}, Rate5: {50, 2}, Rate10: {100, 3}, Rate14: {140, 4},
	Rate20: {200, 5}, Rate30: {300, 6}, Rate25: {250, 7}, Rate28: {280, 8},
	Rate40: {400, 9}, Rate60: {600, 10}, Rate50: {500, 11}, Rate56: {560, 12},
	Rate80: {800, 13}, Rate120: {1200, 14}, Rate100: {1000, 15}, Rate112: {1120, 16},
	Rate168: {1680, 17}, Rate200: {2000, 18}, Rate300: {3000, 19}, Rate400: {4000, 20},
	Rate600: {6000, 21}, Rate800: {8000, 22}, Rate1200: {12000, 23},
}

// RateGbps is the nominal data rate of a rate code in Gb/s, 0 if unknown.
func RateGbps(code uint8) float64 {
	if code > MaxRate {
		return 0
	}
	return float64(rateInfo[code].deciGbps) / 10
}

// RateText names a rate code as the kernel's sysfs rate file does:
// "2.5 Gb/sec", "100 Gb/sec"; unknown codes read "?(n)".
func RateText(code uint8) string {
	if code > MaxRate || rateInfo[code].deciGbps == 0 {
		return unknownQ(code)
	}
	d := rateInfo[code].deciGbps
	s := strconv.Itoa(int(d / 10))
	if d%10 != 0 {
		s += "." + strconv.Itoa(int(d%10))
	}
	return s + " Gb/sec"
}

// RateRank is OpenSM's ordered_rates rank of a rate code (1 = slowest);
// it orders 64/66-coded rates by their 8b/10b-equivalent bandwidth.
// Unknown codes rank 0.
func RateRank(code uint8) int {
	if code > MaxRate {
		return 0
	}
	return int(rateInfo[code].rank)
}

// CompareRates returns -1, 0 or +1 as a ranks below, equal to or above b.
func CompareRates(a, b uint8) int {
	ra, rb := RateRank(a), RateRank(b)
	switch {
	case ra < rb:
		return -1
	case ra > rb:
		return 1
	}
	return 0
}

// MinRate is the lower of two rate codes by RateRank (a on ties).
func MinRate(a, b uint8) uint8 {
	if CompareRates(b, a) < 0 {
		return b
	}
	return a
}

// rankOrder[rank] = code.
var rankOrder = func() (o [MaxRate + 1]uint8) {
	for c := range rateInfo {
		if r := rateInfo[c].rank; r != 0 {
			o[r] = uint8(c)
		}
	}
	return o
}()

// PrevRate is the next slower rate code by rank, or 0 if code is the
// slowest or unknown (OpenSM's rate selector "less than").
func PrevRate(code uint8) uint8 {
	r := RateRank(code)
	if r <= 1 {
		return 0
	}
	return rankOrder[r-1]
}

// NextRate is the next faster rate code by rank, or 0 if code is the
// fastest or unknown (rate selector "greater than").
func NextRate(code uint8) uint8 {
	r := RateRank(code)
	if r == 0 || r >= int(rateInfo[Rate1200].rank) {
		return 0
	}
	return rankOrder[r+1]
}

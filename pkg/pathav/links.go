package pathav

import (
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// ProblemKind classifies a link problem.
type ProblemKind string

// Link problem kinds.
const (
	// MTUCapMismatch: the ends' MTUCaps differ, so the link runs at the
	// lower one (OpenSM's "MTU mismatch between ports").
	MTUCapMismatch ProblemKind = "mtu-cap"
	// NeighborMTU: an end runs a NeighborMTU other than the link MTU
	// OpenSM computes.
	NeighborMTU ProblemKind = "neighbor-mtu"
	// VLCapMismatch: the ends' VLCaps differ (OpenSM's "OP_VLS mismatch
	// between ports").
	VLCapMismatch ProblemKind = "vl-cap"
	// OperationalVLs: an end runs OperationalVLs other than OpenSM's
	// computed value.
	OperationalVLs ProblemKind = "op-vls"
	// Width: the link runs narrower than both ends are enabled for
	// (degraded), or runs 1x while both ends support a wider width.
	Width ProblemKind = "width"
	// Speed: the link runs slower than both ends are enabled for.
	Speed ProblemKind = "speed"
	// NoPortInfo: an end has no PortInfo; nothing could be checked.
	NoPortInfo ProblemKind = "no-portinfo"
)

// Problem is one reason a link is marked.
type Problem struct {
	Kind ProblemKind
	Msg  string
}

func (p Problem) String() string { return string(p.Kind) + ": " + p.Msg }

// Link is the check of one link: both ends, OpenSM's computed values for
// each end, and what differs.
type Link struct {
	A, B *model.PhysPort
	// MTUA, MTUB and VLsA, VLsB are OpenSM's calculations for each end.
	MTUA, MTUB model.LinkCalc
	VLsA, VLsB model.LinkCalc
	// Active and best-possible width (LinkWidthActive codes) and lane
	// speed (see SpeedName) of the link.
	Width, SupportedWidth, EnabledWidth uint8
	Speed, SupportedSpeed, EnabledSpeed LaneSpeed
	Problems                            []Problem
}

// Mismatch reports whether anything on the link is marked.
func (l *Link) Mismatch() bool { return len(l.Problems) > 0 }

// CheckLinks checks every link of f (in model.Fabric.Links order) with
// OpenSM's max_op_vls option maxOpVLs (0 means model.DefaultMaxOpVLs).
func CheckLinks(f *model.Fabric, maxOpVLs uint8) []Link {
	var out []Link
	f.Links(func(a, b *model.PhysPort) {
		out = append(out, CheckLink(a, b, maxOpVLs))
	})
	return out
}

// CheckLink checks the link between a and b (a.Remote == b).
func CheckLink(a, b *model.PhysPort, maxOpVLs uint8) Link {
	l := Link{A: a, B: b}
	if !a.HasInfo || !b.HasInfo {
		for _, p := range [2]*model.PhysPort{a, b} {
			if !p.HasInfo {
				l.Problems = append(l.Problems, Problem{NoPortInfo, PortName(p) + " has no PortInfo"})
			}
		}
		return l
	}
	l.MTUA, l.MTUB = model.CheckLinkMTU(a), model.CheckLinkMTU(b)
	l.VLsA, l.VLsB = model.CheckLinkOpVLs(a, maxOpVLs), model.CheckLinkOpVLs(b, maxOpVLs)
	add := func(k ProblemKind, format string, args ...any) {
		l.Problems = append(l.Problems, Problem{k, fmt.Sprintf(format, args...)})
	}
	ai, bi := &a.Info, &b.Info
	if ai.MTUCap != bi.MTUCap {
		add(MTUCapMismatch, "MTU mismatch between ports: MTUCap %s on %s, %s on %s; link MTU %s",
			smp.MTUText(ai.MTUCap), PortName(a), smp.MTUText(bi.MTUCap), PortName(b), smp.MTUText(l.MTUA.Value))
	}
	for _, e := range [2]struct {
		p *model.PhysPort
		c model.LinkCalc
	}{{a, l.MTUA}, {b, l.MTUB}} {
		if e.c.Current != e.c.Value {
			add(NeighborMTU, "%s runs NeighborMTU %s, link MTU is %s", PortName(e.p), smp.MTUText(e.c.Current), smp.MTUText(e.c.Value))
		}
	}
	if ai.VLCap != bi.VLCap {
		add(VLCapMismatch, "OP_VLS mismatch between ports: VLCap %s on %s, %s on %s; operational VLs %s",
			smp.VLCapText(ai.VLCap), PortName(a), smp.VLCapText(bi.VLCap), PortName(b), smp.VLCapText(l.VLsA.Value))
	}
	for _, e := range [2]struct {
		p *model.PhysPort
		c model.LinkCalc
	}{{a, l.VLsA}, {b, l.VLsB}} {
		if e.c.Current != e.c.Value {
			add(OperationalVLs, "%s runs OperationalVLs %s, OpenSM would set %s", PortName(e.p), smp.OperVLsText(e.c.Current), smp.VLCapText(e.c.Value))
		}
	}

	// Width.
	l.Width = ai.LinkWidthActive
	supW := ai.LinkWidthSupported & bi.LinkWidthSupported
	enW := supW & enabledWidth(ai) & enabledWidth(bi)
	l.SupportedWidth, l.EnabledWidth = widest(supW), widest(enW)
	switch {
	case ai.LinkWidthActive != bi.LinkWidthActive:
		add(Width, "ends disagree on the active width: %s on %s, %s on %s",
			smp.WidthToken(ai.LinkWidthActive), PortName(a), smp.WidthToken(bi.LinkWidthActive), PortName(b))
	case enW != 0 && Lanes(l.Width) < Lanes(l.EnabledWidth):
		add(Width, "link runs %s, both ends are enabled for %s (degraded link)",
			smp.WidthToken(l.Width), smp.WidthToken(l.EnabledWidth))
	case l.Width == smp.Width1x && Lanes(l.SupportedWidth) > 1:
		add(Width, "1x link: both ends support %s", smp.WidthToken(l.SupportedWidth))
	}

	// Speed.
	l.Speed = ActiveSpeed(a)
	ma, mb := possibleSpeeds(a), possibleSpeeds(b)
	l.SupportedSpeed = fastest(ma.supported & mb.supported)
	l.EnabledSpeed = fastest(ma.supported & ma.enabled & mb.supported & mb.enabled)
	switch {
	case ActiveSpeed(b) != l.Speed:
		add(Speed, "ends disagree on the active speed: %s on %s, %s on %s",
			l.Speed, PortName(a), ActiveSpeed(b), PortName(b))
	case l.EnabledSpeed != 0 && l.Speed < l.EnabledSpeed:
		add(Speed, "link runs %s, both ends are enabled for %s (degraded link)", l.Speed, l.EnabledSpeed)
	}
	return l
}

// enabledWidth is a port's LinkWidthEnabled as a mask of widths it may
// run: 0 (no state) and 255 ("set to supported") mean the supported mask.
func enabledWidth(pi *smp.PortInfo) uint8 {
	if pi.LinkWidthEnabled == 0 || pi.LinkWidthEnabled == 255 {
		return pi.LinkWidthSupported
	}
	return pi.LinkWidthEnabled
}

// Lanes is the number of lanes of a LinkWidthActive code (0 if unknown).
func Lanes(w uint8) int {
	switch w {
	case smp.Width1x:
		return 1
	case smp.Width2x:
		return 2
	case smp.Width4x:
		return 4
	case smp.Width8x:
		return 8
	case smp.Width12x:
		return 12
	}
	return 0
}

// widest is the widest width in a mask, 0 for an empty mask.
func widest(mask uint8) uint8 {
	var best uint8
	for _, w := range [...]uint8{smp.Width1x, smp.Width2x, smp.Width4x, smp.Width8x, smp.Width12x} {
		if mask&w != 0 {
			best = w
		}
	}
	return best
}

// LaneSpeed is a lane speed, ordered from slowest: SDR .. XDR (0 unknown).
type LaneSpeed uint8

// Lane speeds.
const (
	SDR LaneSpeed = iota + 1
	DDR
	QDR
	FDR10
	FDR
	EDR
	HDR
	NDR
	XDR
)

var laneNames = [...]string{"?", "SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"}

func (s LaneSpeed) String() string {
	if int(s) < len(laneNames) {
		return laneNames[s]
	}
	return "?"
}

// ActiveSpeed is the lane speed a port runs: the extended speed when its
// capability PortInfo allows extended speeds (libibnetdisc's rule), FDR10
// from the Mellanox ExtendedPortInfo, else LinkSpeedActive.
func ActiveSpeed(p *model.PhysPort) LaneSpeed {
	switch smp.AggregatedExtSpeed(&p.Info, p.CapInfo()) {
	case smp.ExtSpeedFDR:
		return FDR
	case smp.ExtSpeedEDR:
		return EDR
	case smp.ExtSpeedHDR:
		return HDR
	case smp.ExtSpeedNDR:
		return NDR
	case smp.ExtSpeedXDR:
		return XDR
	}
	if p.FDR10() {
		return FDR10
	}
	switch p.Info.LinkSpeedActive {
	case smp.SpeedSDR:
		return SDR
	case smp.SpeedDDR:
		return DDR
	case smp.SpeedQDR:
		return QDR
	}
	return 0
}

// speedSet is a set of lane speeds (bit s = LaneSpeed s).
type speedSet uint16

type speedMasks struct{ supported, enabled speedSet }

// possibleSpeeds is the set of lane speeds a port supports and the set it
// is enabled for.
func possibleSpeeds(p *model.PhysPort) speedMasks {
	pi := &p.Info
	var m speedMasks
	legacy := func(mask uint8) speedSet {
		var s speedSet
		if mask&smp.SpeedSDR != 0 {
			s |= 1 << SDR
		}
		if mask&smp.SpeedDDR != 0 {
			s |= 1 << DDR
		}
		if mask&smp.SpeedQDR != 0 {
			s |= 1 << QDR
		}
		return s
	}
	ext := func(mask uint8) speedSet {
		var s speedSet
		for bit, sp := range [...]LaneSpeed{FDR, EDR, HDR, NDR} {
			if mask&(1<<bit) != 0 {
				s |= 1 << sp
			}
		}
		return s
	}
	m.supported = legacy(pi.LinkSpeedSupported)
	en := pi.LinkSpeedEnabled
	if en == 0 || en == 15 {
		en = pi.LinkSpeedSupported
	}
	m.enabled = legacy(en)
	if c := p.CapInfo(); c != nil && c.CapabilityMask&smp.CapIsExtendedSpeedsSupp != 0 {
		m.supported |= ext(pi.LinkSpeedExtSupported)
		switch e := pi.LinkSpeedExtEnabled; e {
		case 30: // extended speeds disabled
		case 0, 31:
			m.enabled |= ext(pi.LinkSpeedExtSupported)
		default:
			m.enabled |= ext(e & pi.LinkSpeedExtSupported)
		}
		if c.CapabilityMask&smp.CapIsCapabilityMask2Supp != 0 && c.CapabilityMask2&smp.Cap2IsExtendedSpeeds2Supp != 0 &&
			pi.LinkSpeedExtSupported2&1 != 0 {
			m.supported |= 1 << XDR
			if pi.LinkSpeedExtEnabled2&1 != 0 {
				m.enabled |= 1 << XDR
			}
		}
	}
	if p.HasExtInfo {
		// Mellanox ExtendedPortInfo: byte 7 supported, byte 11 enabled.
		if p.ExtInfo[7]&smp.MlnxSpeedFDR10 != 0 {
			m.supported |= 1 << FDR10
		}
		if p.ExtInfo[11]&smp.MlnxSpeedFDR10 != 0 {
			m.enabled |= 1 << FDR10
		}
	}
	return m
}

func fastest(s speedSet) LaneSpeed {
	for sp := XDR; sp >= SDR; sp-- {
		if s&(1<<sp) != 0 {
			return sp
		}
	}
	return 0
}

package portcounters

import (
	"fmt"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// capInfo is the PortInfo whose CapabilityMask libibnetdisc reads for
// p: a switch's port 0, else p's own (nil when not read).
func capInfo(p *model.PhysPort) *smp.PortInfo {
	if p.Node.IsSwitch() {
		if z := p.Node.Port(0); z != nil && z.HasInfo {
			return &z.Info
		}
		return nil
	}
	return &p.Info
}

func hasExtSpeeds(p *model.PhysPort) bool {
	c := capInfo(p)
	return c != nil && c.CapabilityMask&smp.CapIsExtendedSpeedsSupp != 0
}

// mlnxFDR10 reports the FDR10 bit of the Mellanox ExtendedPortInfo's
// LinkSpeedSupported (byte 7) or LinkSpeedActive (byte 15).
func mlnxFDR10(p *model.PhysPort, b int) bool {
	return p.HasExtInfo && p.ExtInfo != nil && p.ExtInfo[b]&smp.MlnxSpeedFDR10 != 0
}

// maxWidth is infiniband-diags' get_max_width: the widest width of a
// LinkWidthSupported mask.
func maxWidth(m uint8) uint8 {
	switch {
	case m&8 != 0:
		return 8
	case m&4 != 0:
		return 4
	case m&2 != 0:
		return 2
	case m&0x10 != 0:
		return 0x10
	}
	return 1
}

// maxBit is infiniband-diags' get_max: the highest bit of a mask (1 for 0).
func maxBit(m uint8) uint8 {
	r := uint8(1)
	for m >>= 1; m != 0; m >>= 1 {
		r <<= 1
	}
	return r
}

// maxMsg is infiniband-diags' get_max_msg: "Could be ..." for a link
// that runs below the width or speed both ends support.
func maxMsg(p, r *model.PhysPort) (width, speed string) {
	if w := maxWidth(p.Info.LinkWidthSupported & r.Info.LinkWidthSupported); w&p.Info.LinkWidthActive == 0 {
		width = "Could be " + smp.LinkWidthText(w)
	}
	if hasExtSpeeds(p) && hasExtSpeeds(r) && p.Info.LinkSpeedExtSupported != 0 && r.Info.LinkSpeedExtSupported != 0 {
		if m := maxBit(p.Info.LinkSpeedExtSupported & r.Info.LinkSpeedExtSupported); m&p.Info.LinkSpeedExtActive == 0 {
			speed = "Could be " + smp.LinkSpeedExtText(m)
		}
		return
	}
	if mlnxFDR10(p, 7) && mlnxFDR10(r, 7) {
		if !mlnxFDR10(p, 15) {
			speed = "Could be FDR10"
			if p.Info.LinkSpeedActive == smp.SpeedQDR {
				speed = "Could be FDR10 (Found link at QDR but expected speed is FDR10)"
			}
		}
		return
	}
	if m := maxBit(p.Info.LinkSpeedSupported & r.Info.LinkSpeedSupported); m&p.Info.LinkSpeedActive == 0 {
		speed = "Could be " + smp.LinkSpeedText(m)
	}
	return
}

// extPort is the external port number text of a chassis line port ("").
func extPort(ext func(*model.PhysPort) int, p *model.PhysPort) string {
	if n := ext(p); n != 0 {
		return fmt.Sprint(n)
	}
	return ""
}

// appendPortConfig appends ibqueryerrors -r's "Link info" line of port p
// (print_port_config) with peer as its peer (nil: none); ext gives chassis
// line ports' external numbers.
func (r *Report) appendPortConfig(b []byte, p, peer *model.PhysPort, ext func(*model.PhysPort) int) []byte {
	pi := &p.Info
	var espeed uint8
	if hasExtSpeeds(p) {
		espeed = pi.LinkSpeedExtActive
	}
	var link string
	if pi.PortState != smp.PortStateDown {
		speed := smp.LinkSpeedExtText(espeed)
		if espeed == 0 {
			speed = smp.LinkSpeedText(pi.LinkSpeedActive)
			if mlnxFDR10(p, 15) {
				speed = "10.0 Gbps (FDR10)"
			}
		}
		link = fmt.Sprintf("(%3s %18s %6s/%8s)", smp.LinkWidthText(pi.LinkWidthActive), speed, smp.PortStateText(pi.PortState), smp.PhysStateText(pi.PortPhysicalState))
	} else {
		link = fmt.Sprintf("(              %6s/%8s)", smp.PortStateText(pi.PortState), smp.PhysStateText(pi.PortPhysicalState))
	}
	remote := "           [  ] \"\" ( )\n"
	if rp := peer; rp != nil {
		w, s := maxMsg(p, rp)
		lid := rp.BaseLID()
		remote = fmt.Sprintf("0x%016x %6d %4d[%2s] \"%s\" (%s %s)\n", rp.GUID, lid, rp.Num, extPort(ext, rp), r.nodeName(rp.Node), w, s)
	}
	return fmt.Appendf(b, "       Link info: %6d%4d[%2s] ==%s==>  %s", p.BaseLID(), p.Num, extPort(ext, p), link, remote)
}

package netfile

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteTo writes f as a net file that both ibsim and Parse load back to
// the same fabric: explicit GUID lines before every node, vendid=, devid=
// and sysimgguid= where needed, one line per linked port with w=/s=/e=
// when the enable masks differ from ibsim's defaults (and our mtu=/vl=
// extension), switch LIDs on the header and CA LIDs as "# lid N lmc M",
// then the do-commands. Ports with the FDR10 bit are written with the
// ibnetdiscover token ("4xEDR", "1xFDR10", ...) that sets the same masks;
// FDR10 combined with masks no token gives is written without FDR10.
// Load big files into ibsim with the limits from Counts (-N, -S, -P).
func (f *Fabric) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	cw := &countWriter{w: bw}
	nodes, switches, ports := f.Counts()
	fmt.Fprintf(cw, "# ibsim net file: %d nodes, %d switches, %d ports\n", nodes, switches, ports)
	fmt.Fprintf(cw, "# load with: ibsim -s -N %d -S %d -P %d <file>\n", max(nodes, 2048), max(switches, 256), max(ports, 13312))
	devid := uint16(0)
	prefix := ""
	var b []byte
	for i := range f.Nodes {
		n := &f.Nodes[i]
		b = b[:0]
		b = append(b, '\n')
		pfx, base := splitModule(n.ID)
		if pfx != prefix {
			b = append(b, "module=\""...)
			b = append(b, pfx...)
			b = append(b, "\"\n"...)
			prefix = pfx
		}
		if n.VendorID != 0 {
			b = append(b, "vendid=0x"...)
			b = strconv.AppendUint(b, uint64(n.VendorID), 16)
			b = append(b, '\n')
		}
		if n.DeviceID != devid {
			b = append(b, "devid=0x"...)
			b = strconv.AppendUint(b, uint64(n.DeviceID), 16)
			b = append(b, '\n')
			devid = n.DeviceID
		}
		if n.SysImageGUID != n.GUID && n.SysImageGUID != 0 {
			b = append(b, "sysimgguid=0x"...)
			b = strconv.AppendUint(b, n.SysImageGUID, 16)
			b = append(b, '\n')
		}
		switch n.Type {
		case Switch:
			b = append(b, "switchguid=0x"...)
		case CA:
			b = append(b, "caguid=0x"...)
		default:
			b = append(b, "rtguid=0x"...)
		}
		b = strconv.AppendUint(b, n.GUID, 16)
		b = append(b, '\n')
		b = append(b, n.Type.String()...)
		b = append(b, '\t')
		b = strconv.AppendInt(b, int64(n.NumPorts), 10)
		b = append(b, " \""...)
		b = append(b, base...)
		b = append(b, '"')
		lid := n.Type == Switch && (n.Ports[0].LID != 0 || n.Ports[0].LMC != 0)
		if n.Desc != "" || lid || n.EnhancedPort0 != 0 {
			b = append(b, "\t# \""...)
			b = append(b, n.Description()...)
			b = append(b, '"')
			switch n.EnhancedPort0 {
			case 1:
				b = append(b, " enhanced port 0"...)
			case -1:
				b = append(b, " base port 0"...)
			}
			if lid {
				b = appendLID(b, n.Ports[0].LID, n.Ports[0].LMC)
			}
		}
		b = append(b, '\n')
		for p := 1; p <= n.NumPorts; p++ {
			pp := &n.Ports[p]
			if pp.Remote < 0 || int(pp.Remote) >= len(f.Nodes) {
				continue
			}
			r := &f.Nodes[pp.Remote]
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(p), 10)
			b = append(b, "]\t\""...)
			rid := r.ID
			if prefix != "" && strings.HasPrefix(rid, prefix+"#") {
				rid = rid[len(prefix)+1:]
			}
			b = append(b, rid...)
			b = append(b, "\"["...)
			b = strconv.AppendInt(b, int64(pp.RemotePort), 10)
			b = append(b, ']')
			b = appendOpts(b, pp)
			if n.Type == CA && (pp.LID != 0 || pp.LMC != 0) {
				b = append(b, "\t#"...)
				b = appendLID(b, pp.LID, pp.LMC)
				if tok, ok := token(pp); ok {
					b = append(b, " \""...)
					b = append(b, r.Description()...)
					b = append(b, "\" lid 0 "...)
					b = append(b, tok...)
				}
			} else if tok, ok := token(pp); ok && n.Type != Router {
				b = append(b, "\t# \""...)
				b = append(b, r.Description()...)
				b = append(b, "\" lid 0 "...)
				b = append(b, tok...)
			}
			b = append(b, '\n')
		}
		if _, err := cw.Write(b); err != nil {
			return cw.n, err
		}
	}
	if len(f.Commands) > 0 {
		if prefix != "" {
			fmt.Fprintf(cw, "\nmodule=\"\"\n")
		}
		fmt.Fprintf(cw, "\n")
		for _, c := range f.Commands {
			fmt.Fprintf(cw, "do %s\n", c.String())
		}
	}
	if cw.err != nil {
		return cw.n, cw.err
	}
	return cw.n, bw.Flush()
}

func splitModule(id string) (string, string) {
	if i := strings.IndexByte(id, '#'); i >= 0 {
		return id[:i], id[i+1:]
	}
	return "", id
}

func appendLID(b []byte, lid uint16, lmc uint8) []byte {
	b = append(b, " lid "...)
	b = strconv.AppendUint(b, uint64(lid), 10)
	b = append(b, " lmc "...)
	return strconv.AppendUint(b, uint64(lmc), 10)
}

// token returns the ibnetdiscover width/speed token that sets exactly
// pp's masks with the FDR10 bit, which only such a token can set.
func token(pp *Port) (string, bool) {
	if !pp.FDR10 || pp.SpeedEnabled != SpeedSDR|SpeedDDR|SpeedQDR {
		return "", false
	}
	var w, s string
	switch pp.WidthEnabled {
	case Width1x:
		w = "1"
	case Width2x:
		w = "2"
	case Width8x:
		w = "8"
	case Width1x | Width4x:
		w = "4"
	case Width1x | Width4x | Width12x:
		w = "12"
	default:
		return "", false
	}
	switch pp.ExtSpeedEnabled {
	case 0:
		s = "FDR10"
	case ExtSpeedFDR:
		s = "FDR"
	case ExtSpeedFDR | ExtSpeedEDR:
		s = "EDR"
	case ExtSpeedFDR | ExtSpeedEDR | ExtSpeedHDR:
		s = "HDR"
	default:
		return "", false
	}
	return w + "x" + s, true
}

func appendOpts(b []byte, pp *Port) []byte {
	if _, ok := token(pp); ok {
		// The token sets the masks; options would be overridden.
		return b
	}
	if pp.WidthEnabled != DefaultWidth {
		b = append(b, " w="...)
		b = strconv.AppendUint(b, uint64(pp.WidthEnabled), 10)
	}
	if pp.SpeedEnabled != DefaultSpeed {
		b = append(b, " s="...)
		b = strconv.AppendUint(b, uint64(pp.SpeedEnabled), 10)
	}
	if pp.ExtSpeedEnabled != DefaultExtSpeed {
		b = append(b, " e="...)
		b = strconv.AppendUint(b, uint64(pp.ExtSpeedEnabled), 10)
	}
	if pp.MTUCap != 0 {
		b = append(b, " mtu="...)
		b = strconv.AppendUint(b, uint64(pp.MTUCap), 10)
	}
	if pp.VLCap != 0 {
		b = append(b, " vl="...)
		b = strconv.AppendUint(b, uint64(pp.VLCap), 10)
	}
	return b
}

// String formats c as a console command line.
func (c Command) String() string {
	switch c.Verb {
	case "Error", "Unlink", "ReLink", "Link", "Clear", "Guid", "Baselid", "Kill", "Revive", "Inconsistent":
	case "Drop", "Latency", "After", "At":
		if c.Node == "" {
			s := c.Verb
			for _, a := range c.Args {
				s += " " + a
			}
			if c.Then != nil {
				s += " " + c.Then.String()
			}
			return s
		}
	default:
		return strings.TrimSpace(c.Text)
	}
	var sb strings.Builder
	sb.WriteString(c.Verb)
	tgt := func(id string, port int) {
		sb.WriteString(" \"")
		sb.WriteString(id)
		sb.WriteByte('"')
		if port >= 0 {
			fmt.Fprintf(&sb, "[%d]", port)
		}
	}
	tgt(c.Node, c.Port)
	if c.Verb == "Link" {
		tgt(c.Node2, c.Port2)
	}
	for _, a := range c.Args {
		sb.WriteByte(' ')
		sb.WriteString(a)
	}
	return sb.String()
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

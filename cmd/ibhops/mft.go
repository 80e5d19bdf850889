package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// jsonMFT is --mft's JSON document.
type jsonMFT struct {
	Schema    string         `json:"schema"` // "ibdiag.mft/v1"
	Switch    jsonPort       `json:"switch"`
	FirstMLID uint16         `json:"first_mlid"`
	LastMLID  uint16         `json:"last_mlid"`
	Entries   []jsonMFTEntry `json:"entries"` // MLIDs with a non-empty mask
}

type jsonMFTEntry struct {
	MLID  uint16 `json:"mlid"`
	Ports []int  `json:"ports"` // the ports whose bit is set, ascending
}

// mftRange is the MLID range ibroute -M dumps for a switch (no range
// given, no -a): 0xC000 up to the MulticastFDBCap'th MLID, cut at
// MulticastFDBTop when that is set and below it. warn is ibroute's
// warning about a top below the multicast range ("" if none).
func mftRange(si *smp.SwitchInfo) (first, last int, warn string) {
	first = int(smp.MulticastLIDBase)
	last = first + int(si.MulticastFDBCap) - 1
	if top := int(si.MulticastFDBTop); top != 0 && top < last {
		if top < first-1 {
			warn = fmt.Sprintf("illegal top mlid %x", top)
		} else {
			last = top
		}
	}
	if last > 0xFFFE {
		warn = fmt.Sprintf("illegal end mlid %x, truncate to %x", last, 0xFFFE)
		last = 0xFFFE
	}
	return first, last, warn
}

// mftHeader writes ibroute -M's column header for a switch of nports
// ports: a tens line above 9 ports, the units line and " MLid".
func mftHeader(w io.Writer, nports int) {
	var b strings.Builder
	if nports > 9 {
		for i := 0; i <= nports; i++ {
			if i%10 != 0 {
				b.WriteByte(' ')
			} else {
				b.WriteByte(byte('0' + i/10)) // as ibroute: ':' from port 100
			}
			b.WriteByte(' ')
		}
		fmt.Fprintf(w, "            %s\n", b.String())
		b.Reset()
	}
	for i := 0; i <= nports; i++ {
		fmt.Fprintf(&b, "%d ", i%10)
	}
	fmt.Fprintf(w, "     Ports: %s\n", b.String())
	fmt.Fprintf(w, " MLid\n")
}

// mft prints a switch's MulticastForwardingTable as ibroute -M does
// (SubnGet of blocks of 32 MLIDs, one per 16-port position).
func (t *tool) mft(w io.Writer, sw *model.Node) error {
	nports := sw.NumPorts()
	first, last, warn := mftRange(&sw.SwitchInfo)
	if warn != "" {
		t.note("--mft: %s", warn)
	}
	portID := fmt.Sprintf("Lid %d", sw.SMALID())
	if sw.SMALID() == 0 {
		portID = "DR path slid 0; dlid 0; " + sw.Path.String()
	}
	jm := jsonMFT{Schema: "ibdiag.mft/v1", Switch: t.nodePort(sw), FirstMLID: uint16(first), LastMLID: uint16(last), Entries: []jsonMFTEntry{}}
	if !t.json {
		fmt.Fprintf(w, "Multicast mlids [0x%x-0x%x] of switch %s guid 0x%016x (%s):\n", first, last, portID, sw.GUID(), t.name(sw))
		mftHeader(w, nports)
	}
	positions := (nports + smp.MFTPortsPerMask) / smp.MFTPortsPerMask
	var tables [16]smp.MulticastForwardingTable
	var buf [smp.DataSize]byte
	var line []byte
	n := 0
	base := int(smp.MulticastLIDBase) / smp.MFTBlockSize
blocks:
	for block := first / smp.MFTBlockSize; block <= last/smp.MFTBlockSize; block++ {
		for pos := 0; pos < positions; pos++ {
			mod := smp.MFTModifier(uint16(block-base), uint8(pos))
			if err := t.q.Get(t.ctx, sw.Path, smp.AttrMulticastFwdTable, mod, buf[:]); err != nil {
				if t.ctx.Err() != nil {
					return t.ctx.Err()
				}
				// ibroute stops at a failed block.
				t.partial = true
				t.note("--mft: reading block %d position %d (AM 0x%x) of %q: %v", block-base, pos, mod, t.name(sw), err)
				break blocks
			}
			if err := tables[pos].UnmarshalBinary(buf[:]); err != nil {
				return err
			}
		}
		lo, hi := max(block*smp.MFTBlockSize, first), min(block*smp.MFTBlockSize+smp.MFTBlockSize, last+1)
		for mlid := lo; mlid < hi; mlid++ {
			i := mlid % smp.MFTBlockSize
			nonzero := false
			for pos := 0; pos < positions; pos++ {
				if tables[pos][i] != 0 {
					nonzero = true
				}
			}
			if !nonzero {
				continue
			}
			n++
			line = line[:0]
			ports := []int{}
			for p := 0; p <= nports; p++ {
				if tables[p/smp.MFTPortsPerMask][i]&(1<<(p%smp.MFTPortsPerMask)) != 0 {
					line = append(line, 'x', ' ')
					ports = append(ports, p)
				} else {
					line = append(line, ' ', ' ')
				}
			}
			jm.Entries = append(jm.Entries, jsonMFTEntry{MLID: uint16(mlid), Ports: ports})
			if !t.json {
				fmt.Fprintf(w, "0x%04x      %s\n", mlid, line)
			}
		}
	}
	if t.json {
		return writeJSON(w, jm)
	}
	_, err := fmt.Fprintf(w, "%d valid mlids dumped \n", n)
	return err
}

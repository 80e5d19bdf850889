package model

import (
	"bufio"
	"io"
	"slices"
	"strconv"
)

// WriteLIDMatrixDump writes h in the format of OpenSM's
// opensm-lid-matrix.dump: for each switch in OpenSM map order a line
// "Switch: guid 0x<guid>", then for each LID 1..MaxLID whose least hop
// count is not NoPath a line "0x<lid>:" followed by " <hops>" for ports
// 0..N (two hex digits each) and " # portguid 0x<guid>" when a logical
// port owns the LID. f supplies the LID owners (it should be the fabric h
// was computed from).
func WriteLIDMatrixDump(w io.Writer, f *Fabric, h *HopTables) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var line []byte
	for _, sw := range h.switches {
		m := h.Matrix(sw)
		line = append(line[:0], "Switch: guid 0x"...)
		line = appendHex(line, sw.GUID(), 16)
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
		lids := slices.Clone(m.RowLIDs())
		slices.Sort(lids)
		for _, lid := range lids {
			if lid == 0 || lid > h.maxLID {
				continue
			}
			row := m.Row(lid)
			if row[0] == NoPath {
				continue
			}
			line = append(line[:0], "0x"...)
			line = appendHex(line, uint64(lid), 4)
			line = append(line, ':')
			for _, v := range row {
				line = append(line, ' ', hexDigits[v>>4], hexDigits[v&0xF])
			}
			if p := f.PortByLID(lid); p != nil {
				line = append(line, " # portguid 0x"...)
				line = appendHex(line, p.GUID, 16)
			}
			line = append(line, '\n')
			if _, err := bw.Write(line); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

const hexDigits = "0123456789abcdef"

// appendHex appends v in lowercase hex, zero-padded to at least width
// digits.
func appendHex(b []byte, v uint64, width int) []byte {
	var tmp [16]byte
	s := strconv.AppendUint(tmp[:0], v, 16)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

package pma

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// specField is one field of a hand-built vector: where the specification
// puts it and the value written there.
type specField struct {
	name        string
	offset, len int
	value       uint64
}

// loadSpecVector reads a hand-built vector (testdata/spec/*.txt): its
// field table and its data area.
func loadSpecVector(t *testing.T, path string) ([]specField, []byte) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var fields []specField
	var area []byte
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#") || line == "":
		case strings.HasPrefix(line, "field "):
			var fd specField
			var v string
			if _, err := fmt.Sscanf(line, "field %s %d %d %s", &fd.name, &fd.offset, &fd.len, &v); err != nil {
				t.Fatalf("%s: %q: %v", path, line, err)
			}
			if fd.value, err = strconv.ParseUint(v, 0, 64); err != nil {
				t.Fatalf("%s: %q: %v", path, line, err)
			}
			fields = append(fields, fd)
		default:
			b, err := hex.DecodeString(strings.ReplaceAll(line, " ", ""))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			area = append(area, b...)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// The file agrees with itself: each value is where its offset says,
	// and no two fields hold the same value.
	seen := map[uint64]string{}
	for _, fd := range fields {
		var b [8]byte
		copy(b[8-fd.len:], area[fd.offset:fd.offset+fd.len])
		if got := binary.BigEndian.Uint64(b[:]); got != fd.value {
			t.Fatalf("%s: %s: the data area holds %#x at byte %d, the table says %#x", path, fd.name, got, fd.offset, fd.value)
		}
		if other, ok := seen[fd.value]; ok {
			t.Fatalf("%s: %s and %s hold the same value", path, fd.name, other)
		}
		seen[fd.value] = fd.name
	}
	return fields, area
}

// TestSpecVectorPortCountersExtended decodes the hand-built
// PortCountersExtended vector (every field a distinct value at the
// specification's offset) and checks every field, by name, in the
// decoded value and in the text it prints: a decoder that reads a field
// at another offset (8 bytes early, say) gets another field's value.
func TestSpecVectorPortCountersExtended(t *testing.T) {
	fields, area := loadSpecVector(t, "testdata/spec/pcx-errors.txt")
	if len(area) != PortCountersExtendedSize || len(fields) != 3+8+NumErrors+1 {
		t.Fatalf("%d bytes, %d fields", len(area), len(fields))
	}
	var c PortCountersExtended
	if err := c.UnmarshalBinary(area); err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{
		"PortSelect":            uint64(c.PortSelect),
		"CounterSelect":         uint64(c.CounterSelect),
		"CounterSelect2":        uint64(c.CounterSelect2),
		"PortXmitData":          c.PortXmitData,
		"PortRcvData":           c.PortRcvData,
		"PortXmitPkts":          c.PortXmitPkts,
		"PortRcvPkts":           c.PortRcvPkts,
		"PortUnicastXmitPkts":   c.PortUnicastXmitPkts,
		"PortUnicastRcvPkts":    c.PortUnicastRcvPkts,
		"PortMulticastXmitPkts": c.PortMulticastXmitPkts,
		"PortMulticastRcvPkts":  c.PortMulticastRcvPkts,
		"QP1Dropped":            c.QP1Dropped,
	}
	for i, name := range ErrorNames {
		got[name] = c.ErrorCounters[i]
	}
	text := string(c.AppendText(nil, true))
	for _, fd := range fields {
		v, ok := got[fd.name]
		if !ok {
			t.Errorf("%s: no such field decoded", fd.name)
			continue
		}
		if v != fd.value {
			t.Errorf("%s (byte %d): decoded %#x, want %#x", fd.name, fd.offset, v, fd.value)
		}
		var line string
		switch fd.name {
		case "CounterSelect":
			line = string(appendHex(nil, fd.name, fd.value, 4))
		case "CounterSelect2":
			line = string(appendHex(nil, fd.name, fd.value, 8))
		default:
			line = string(appendUint(nil, fd.name, fd.value))
		}
		if !strings.Contains(text, line) {
			t.Errorf("text lacks %q:\n%s", line, text)
		}
	}
	// Encoding the decoded value gives the vector back (byte 0 is reserved).
	out := make([]byte, PortCountersExtendedSize)
	if err := c.MarshalTo(out); err != nil {
		t.Fatal(err)
	}
	if string(out) != string(area) {
		t.Errorf("re-encoded:\n%x\nwant\n%x", out, area)
	}
}

package nodenamemap

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	long := "0x10 " + strings.Repeat("n", 300) + "\n"
	tests := []struct {
		name string
		in   string
		want map[uint64]string
		bad  string // failed line, when the map is rejected
	}{
		{name: "quoted", in: "0x1 \"a b\"\n", want: map[uint64]string{1: "a b"}},
		{name: "comment keeps trailing space", in: "0x1 name # c\n", want: map[uint64]string{1: "name "}},
		{name: "text after quote dropped", in: "0x1 \"q\" extra\n", want: map[uint64]string{1: "q"}},
		{name: "leading hash skipped by strtok", in: "0x1 # only comment\n", want: map[uint64]string{1: " only comment"}},
		{name: "guid without name ignored", in: "0x1\n0x2   \n", want: map[uint64]string{}},
		{name: "decimal", in: "16 sixteen\n", want: map[uint64]string{16: "sixteen"}},
		{name: "octal", in: "010 eight\n", want: map[uint64]string{8: "eight"}},
		{name: "negative wraps", in: "-1 all\n", want: map[uint64]string{^uint64(0): "all"}},
		{name: "overflow saturates", in: "0x1ffffffffffffffff big\n", want: map[uint64]string{^uint64(0): "big"}},
		{name: "guid then hash", in: "0x5#x\n", want: map[uint64]string{5: "x"}},
		{name: "comments and blanks", in: "# c\n\n   \n\t# d\n0x2 two", want: map[uint64]string{2: "two"}},
		{name: "first wins", in: "0x7 first\n0x0007 second\n", want: map[uint64]string{7: "first"}},
		{name: "crlf kept", in: "0x3 win\r\n", want: map[uint64]string{3: "win\r"}},
		{name: "full width guid", in: "0x0002c90300a1b2c3 \"sw-01 L1\"\n", want: map[uint64]string{0x0002c90300a1b2c3: "sw-01 L1"}},
		{name: "bad guid", in: "0x1 ok\nzzz name\n", bad: "zzz name"},
		{name: "guid glued to name", in: "0x1name\n", bad: "0x1name"},
		{name: "0x without digits", in: "0x name\n", bad: "0x name"},
		{name: "octal 9", in: "09 x\n", bad: "09 x"},
		// A 300-byte name is split by the 256-byte buffer: the remainder
		// ("nnn...") is parsed as a line and is not a GUID.
		{name: "long line split", in: long, bad: strings.Repeat("n", len(long)-255-1)},
		{name: "nul ends line", in: "0x4 ab\x00cd\n", want: map[uint64]string{4: "ab"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(strings.NewReader(tt.in), "map")
			if tt.bad != "" {
				var pe *ParseError
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v, want ParseError", err)
				}
				if pe.Line != tt.bad {
					t.Fatalf("failed line %q, want %q", pe.Line, tt.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Len() != len(tt.want) {
				t.Fatalf("%d entries %v, want %v", m.Len(), m.names, tt.want)
			}
			for g, n := range tt.want {
				if got, ok := m.Lookup(g); !ok || got != n {
					t.Errorf("Lookup(%#x) = %q, %v; want %q", g, got, ok, n)
				}
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope")
	_, err := Open(missing)
	var w Warner
	if !errors.As(err, &w) {
		t.Fatalf("err %v is not a Warner", err)
	}
	if got, want := w.Warning(), `WARNING failed to open node name map "`+missing+`" (No such file or directory)`+"\n"; got != want {
		t.Errorf("warning %q, want %q", got, want)
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("0x1 a\nfoo bar\n"), 0o644)
	_, err = Open(bad)
	if !errors.As(err, &w) {
		t.Fatalf("err %v is not a Warner", err)
	}
	want := "WARNING failed to parse node name map \"" + bad + "\"\nWARNING failed line: \"foo bar\"\n"
	if w.Warning() != want {
		t.Errorf("warning %q, want %q", w.Warning(), want)
	}
	// A directory is an error like a missing map (C would read an empty
	// map without a word).
	m, err := Load(dir)
	if m != nil || !errors.As(err, &w) || w.Warning() != "WARNING failed to open node name map \""+dir+"\" (Is a directory)\n" {
		t.Errorf("Load(dir) = %v, %v", m, err)
	}
}

// TestSizeCap: a map larger than MaxBytes, /dev/zero included, is an
// error naming the file, not an endless read.
func TestSizeCap(t *testing.T) {
	m, err := Load("/dev/zero")
	if m != nil || !errors.Is(err, ErrTooLarge) || err.Error() != "/dev/zero: larger than 32 MiB, the limit for a node name map" {
		t.Errorf("Load(/dev/zero) = %v, %v", m, err)
	}
	// The limit itself, on a small scale: exactly the limit is fine,
	// one byte more is not.
	const line = "0x0002c90300000001 \"node\"\n" // 26 bytes
	tests := []struct {
		data  string
		limit int
		ok    bool
	}{
		{strings.Repeat(line, 10), 260, true},
		{strings.Repeat(line, 10) + "#", 260, false},
		{strings.Repeat(line, 10), 259, false},
		{strings.Repeat("#\n", 500), 1000, true},
		{strings.Repeat("#\n", 500), 999, false},
	}
	for i, tc := range tests {
		m, err := parse(strings.NewReader(tc.data), "m", tc.limit)
		if tc.ok != (err == nil) || !tc.ok && (!errors.Is(err, ErrTooLarge) || m != nil) {
			t.Errorf("%d: %d bytes, limit %d: %v, %v", i, len(tc.data), tc.limit, m, err)
		}
	}
}

func TestName(t *testing.T) {
	m, _ := Parse(strings.NewReader("0x20 mapped\n"), "")
	if got := m.Name(0x20, "desc"); got != "mapped" {
		t.Errorf("Name = %q", got)
	}
	if got := m.Name(0x21, "desc"); got != "desc" {
		t.Errorf("Name = %q", got)
	}
	var nilMap *Map
	if got := nilMap.Name(0x20, "desc"); got != "desc" {
		t.Errorf("nil map Name = %q", got)
	}
}

func TestStrtoull(t *testing.T) {
	tests := []struct {
		in   string
		v    uint64
		used int
	}{
		{"0x1f ", 0x1f, 4}, {"0X1F", 0x1f, 4}, {"017", 15, 3}, {"0", 0, 1}, {"0x", 0, 1},
		{"0xg", 0, 1}, {"+12", 12, 3}, {"-0x1", ^uint64(0), 4}, {"abc", 0, 0}, {"-", 0, 0},
		{"18446744073709551615", ^uint64(0), 20}, {"18446744073709551616", ^uint64(0), 20},
	}
	for _, tt := range tests {
		v, n := strtoull([]byte(tt.in))
		if v != tt.v || n != tt.used {
			t.Errorf("strtoull(%q) = %#x, %d; want %#x, %d", tt.in, v, n, tt.v, tt.used)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("0x1 \"a b\"\n# c\n0x2 name # x\n"))
	f.Add([]byte("0x0002c90300a1b2c3 \"sw-01 L1\"\n010 eight\n-1 all\n"))
	f.Add([]byte("zzz\n"))
	f.Add([]byte(strings.Repeat("0x1 ", 100)))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(strings.NewReader(string(b)), "fuzz")
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("unexpected error type %T", err)
			}
			return
		}
		for _, n := range m.names {
			if strings.ContainsAny(n, "\"#\n\x00") || n == "" {
				t.Fatalf("bad name %q", n)
			}
		}
	})
}

// TestEntries: every entry, as parsed, in a copy the caller may change;
// none for a nil map.
func TestEntries(t *testing.T) {
	m, err := Parse(strings.NewReader("0x1 a b\n0x2 c\n# 0x3 d\n"), "t.map")
	if err != nil {
		t.Fatal(err)
	}
	e := m.Entries()
	if len(e) != 2 || e[1] != "a b" || e[2] != "c" {
		t.Errorf("Entries = %v", e)
	}
	e[1] = "x"
	if s, _ := m.Lookup(1); s != "a b" {
		t.Errorf("Entries is not a copy: Lookup(1) = %q", s)
	}
	var nilMap *Map
	if e := nilMap.Entries(); len(e) != 0 {
		t.Errorf("nil map Entries = %v", e)
	}
}

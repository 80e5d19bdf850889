package termtable

import (
	"bytes"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/tw"
)

// tablewriterWrite is how termtable called tablewriter v1.1.5 before it
// rendered its own tables: the reference Write must match.
func tablewriterWrite(t testing.TB, header []string, rows [][]string) string {
	t.Helper()
	var b bytes.Buffer
	tb := tablewriter.NewTable(&b,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithSymbols(tw.NewSymbols(tw.StyleASCII)),
	)
	hdr := make([]any, len(header))
	for i, h := range header {
		hdr[i] = h
	}
	tb.Header(hdr...)
	for _, r := range rows {
		if err := tb.Append(r); err != nil {
			t.Fatalf("tablewriter Append(%q): %v", r, err)
		}
	}
	if err := tb.Render(); err != nil {
		t.Fatalf("tablewriter Render: %v", err)
	}
	return b.String()
}

func escapeAll(header []string, rows [][]string) ([]string, [][]string) {
	var h []string
	if header != nil {
		h = make([]string, len(header))
		for i, c := range header {
			h[i] = Escape(c)
		}
	}
	var r [][]string
	if rows != nil {
		r = make([][]string, len(rows))
		for i, row := range rows {
			r[i] = make([]string, len(row))
			for j, c := range row {
				r[i][j] = Escape(c)
			}
		}
	}
	return h, r
}

func write(t testing.TB, header []string, rows [][]string) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, header, rows); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return b.String()
}

// compare checks Write against tablewriter given the escaped cells, with
// tablewriter's East Asian width off and on: Write does not depend on it.
func compare(t testing.TB, header []string, rows [][]string) string {
	t.Helper()
	got := write(t, header, rows)
	eh, er := escapeAll(header, rows)
	defer twwidth.SetEastAsian(twwidth.IsEastAsian())
	for _, ea := range []bool{false, true} {
		twwidth.SetEastAsian(ea)
		if want := tablewriterWrite(t, eh, er); got != want {
			t.Fatalf("header %q rows %q (East Asian %v):\ngot\n%s\ntablewriter\n%s", header, rows, ea, got, want)
		}
	}
	return got
}

func TestWrite(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header []string
		rows   [][]string
		want   string // "" to compare with tablewriter only
	}{
		{name: "ports", header: []string{"Port", "Neighbour"}, rows: [][]string{{"1", "hostA mlx5_0"}, {"12", "SwB"}},
			want: "+------+--------------+\n| Port | Neighbour    |\n+------+--------------+\n| 1    | hostA mlx5_0 |\n| 12   | SwB          |\n+------+--------------+\n"},
		{name: "header kept as given", header: []string{"lid", "Port GUID"}, rows: [][]string{{"1", "0x0002c90300000001"}},
			want: "+-----+--------------------+\n| lid | Port GUID          |\n+-----+--------------------+\n| 1   | 0x0002c90300000001 |\n+-----+--------------------+\n"},
		{name: "nothing", want: "\x00"},
		{name: "empty slices", header: []string{}, rows: [][]string{}, want: "\x00"},
		{name: "header only", header: []string{"A", "Bee"}, want: "+---+-----+\n| A | Bee |\n+---+-----+\n"},
		{name: "rows only", rows: [][]string{{"a", "b"}}, want: "+---+---+\n| a | b |\n+---+---+\n"},
		{name: "rows without cells", rows: [][]string{{}, {}}, want: "++\n++\n"},
		{name: "empty cells", header: []string{"", ""}, rows: [][]string{{"", ""}}},
		{name: "spaces trimmed", header: []string{" h ", "a  b"}, rows: [][]string{{" x ", "  "}, {"a  b", " lead"}}},
		{name: "ragged", header: []string{"A", "B", "C"}, rows: [][]string{{"1"}, {"1", "2", "3", "4"}, nil}},
		{name: "newlines", header: []string{"A\n    \nB", "C"}, rows: [][]string{{"a\nbb\n", "c"}, {"x", "y\n\nz"}, {"x\n      \ny", "c"}, {"x \n  y", "\n\nb"}}},
		{name: "tabs", header: []string{"a\tb"}, rows: [][]string{{"\tx\t"}, {"1\t22\t333"}}},
		{name: "ansi", header: []string{"\x1b[1mA\x1b[0m"}, rows: [][]string{{"\x1b[31mred\x1b[0m"}, {"\x1b]8;;http://x\x07link\x1b]8;;\x07"}}},
		{name: "wide and combining", header: []string{"名前", "e\u0301"}, rows: [][]string{{"ｈｏｓｔ", "café"}, {"\u200b", "─│┼"}}},
		{name: "invalid UTF-8", header: []string{"\xff\xfe"}, rows: [][]string{{"a\x80b"}, {"\xc3"}}},
		{name: "controls", header: []string{"\r\v\f"}, rows: [][]string{{"a\r\nb"}, {"\x00\x7f"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := compare(t, tc.header, tc.rows)
			switch tc.want {
			case "":
			case "\x00":
				if got != "" {
					t.Errorf("got %q, want nothing", got)
				}
			default:
				if got != tc.want {
					t.Errorf("got\n%s\nwant\n%s", got, tc.want)
				}
			}
			for _, l := range strings.Split(got, "\n") {
				for _, c := range []byte(l) {
					if c < 0x20 || c > 0x7e {
						t.Fatalf("output line %q has byte 0x%02x", l, c)
					}
				}
			}
		})
	}
}

// TestPrintableASCIIAsGiven checks that cells of printable ASCII, all our
// NodeDescriptions, reach tablewriter unescaped: for them Write is
// tablewriter itself.
func TestPrintableASCIIAsGiven(t *testing.T) {
	var all []byte
	for c := byte(0x20); c <= 0x7e; c++ {
		all = append(all, c)
	}
	s := string(all)
	if Escape(s) != s || Escape("a\nb") != "a\nb" {
		t.Fatalf("Escape changed printable ASCII")
	}
	header := []string{"Port", s}
	rows := [][]string{{s, "x"}, {"12", "  SwB mlx5_0 \\ ' \" "}}
	if got, want := write(t, header, rows), tablewriterWrite(t, header, rows); got != want {
		t.Fatalf("got\n%s\ntablewriter\n%s", got, want)
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"":             "",
		"host\tA":      `host\x09A`,
		"\x1b[31m":     `\x1b[31m`,
		"é":            `\xc3\xa9`,
		"a\xffb\n\x7f": "a\\xffb\n\\x7f",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzWriteMatchesTablewriter splits hdr and body into cells at 0x1f and
// body into rows at 0x1e, and compares Write with tablewriter.
func FuzzWriteMatchesTablewriter(f *testing.F) {
	f.Add("Port\x1fNeighbour", "1\x1fhostA mlx5_0\x1e12\x1fSwB")
	f.Add(" A \x1f", "\x1e\x1ex")
	f.Add("A\n\nB", "a\n  \nb\x1f\tc\x1e\x1b[1mx\x1b[0m\x1f名前\x1f\xff")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, hdr, body string) {
		if len(hdr)+len(body) > 4096 {
			return
		}
		var header []string
		if hdr != "" {
			header = strings.Split(hdr, "\x1f")
		}
		var rows [][]string
		if body != "" {
			for _, r := range strings.Split(body, "\x1e") {
				var row []string
				if r != "" {
					row = strings.Split(r, "\x1f")
				}
				rows = append(rows, row)
			}
		}
		compare(t, header, rows)
	})
}

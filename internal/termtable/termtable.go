// Package termtable writes aligned ASCII tables for human-facing output.
//
// The tables are those olekukonko/tablewriter v1.1.5 printed for us (ASCII
// style, header and rows left-aligned as given, no wrapping), rendered here
// so that the tools do not link tablewriter and its dependencies, which
// cost binary pages and a width cache in every process.
//
// Cells are first made safe: every byte outside printable ASCII (0x20 to
// 0x7e) other than a newline is written as a \xNN escape, so a tab, an
// ANSI escape sequence, a control character, invalid UTF-8 and any
// non-ASCII character (a wide East Asian or a combining one included) are
// shown as escapes of one column each, and the table never depends on a
// terminal's width tables or on the environment (tablewriter guessed East
// Asian widths from LC_ALL, LC_CTYPE, LANG, RUNEWIDTH_EASTASIAN and the
// terminal's TERM and TERM_PROGRAM, and expanded tabs to a width it
// detected). The
// NodeDescriptions we print are printable ASCII already (smp.NodeDescription
// turns other bytes into spaces); node-name-map names may not be.
//
// Then, as tablewriter does: leading and trailing white space of a cell is
// trimmed; a newline splits a cell into lines, and a row's line after its
// first whose cells are all blank is not printed (its width still counts);
// rows shorter than the widest row or the header are padded with empty
// cells. The tests compare Write with tablewriter, given the escaped cells,
// byte for byte.
package termtable

import (
	"bufio"
	"io"
	"strings"
)

// Write writes rows under header as an aligned ASCII table. Cells are
// printed as given (no case changes, no wrapping), escaped as the package
// doc says. Nothing is written when header and rows are both empty.
func Write(w io.Writer, header []string, rows [][]string) error {
	if len(header) == 0 && len(rows) == 0 {
		return nil
	}
	ncols := len(header)
	for _, r := range rows {
		ncols = max(ncols, len(r))
	}
	if ncols == 0 {
		// Rows without cells: tablewriter's empty box.
		_, err := io.WriteString(w, "++\n++\n")
		return err
	}
	widths := make([]int, ncols)
	var hdr [][]string
	if len(header) > 0 {
		hdr = cellLines(header, ncols, widths)
	}
	body := make([][][]string, len(rows))
	for i, r := range rows {
		if len(r) > 0 { // a row without cells prints nothing
			body[i] = cellLines(r, ncols, widths)
		}
	}

	bw := bufio.NewWriter(w)
	border(bw, widths)
	if hdr != nil {
		writeLines(bw, hdr, widths, false)
		if len(rows) > 0 {
			border(bw, widths)
		}
	}
	for _, r := range body {
		writeLines(bw, r, widths, true)
	}
	border(bw, widths)
	return bw.Flush()
}

// Escape returns s with every byte outside printable ASCII other than '\n'
// written as \xNN: the cell text Write renders.
func Escape(s string) string {
	i := 0
	for i < len(s) && (s[i] == '\n' || (s[i] >= 0x20 && s[i] <= 0x7e)) {
		i++
	}
	if i == len(s) {
		return s
	}
	const hex = "0123456789abcdef"
	b := make([]byte, i, len(s)+16)
	copy(b, s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		if c == '\n' || (c >= 0x20 && c <= 0x7e) {
			b = append(b, c)
			continue
		}
		b = append(b, '\\', 'x', hex[c>>4], hex[c&0xf])
	}
	return string(b)
}

// cellLines returns the cells of one row (padded to ncols) split into
// lines, widening widths to fit them.
func cellLines(row []string, ncols int, widths []int) [][]string {
	cells := make([][]string, ncols)
	for i := range cells {
		c := ""
		if i < len(row) {
			c = strings.TrimSpace(Escape(row[i]))
		}
		cells[i] = strings.Split(c, "\n")
		for _, l := range cells[i] {
			widths[i] = max(widths[i], len(l))
		}
	}
	return cells
}

// writeLines writes one row's cells line by line; with skipBlank, a line
// after the first whose cells are all blank is left out.
func writeLines(bw *bufio.Writer, cells [][]string, widths []int, skipBlank bool) {
	n := 0
	for _, c := range cells {
		n = max(n, len(c))
	}
	for j := 0; j < n; j++ {
		if skipBlank && j > 0 {
			blank := true
			for _, c := range cells {
				if j < len(c) && strings.TrimSpace(c[j]) != "" {
					blank = false
					break
				}
			}
			if blank {
				continue
			}
		}
		bw.WriteByte('|')
		for i, c := range cells {
			l := ""
			if j < len(c) {
				l = c[j]
			}
			bw.WriteByte(' ')
			bw.WriteString(l)
			pad(bw, ' ', widths[i]-len(l)+1)
			bw.WriteByte('|')
		}
		bw.WriteByte('\n')
	}
}

// border writes a +---+ line.
func border(bw *bufio.Writer, widths []int) {
	bw.WriteByte('+')
	for _, wd := range widths {
		pad(bw, '-', wd+2)
		bw.WriteByte('+')
	}
	bw.WriteByte('\n')
}

func pad(bw *bufio.Writer, c byte, n int) {
	for ; n > 0; n-- {
		bw.WriteByte(c)
	}
}

// Package termtable writes aligned ASCII tables for human-facing output
// (tablewriter). It is apart from termout so that a tool path that prints
// no table does not link tablewriter and its dependencies, which cost
// peak RSS in every process that links them.
package termtable

import (
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// Write writes rows under header as an aligned ASCII table. Cells are
// printed as given (no case changes, no wrapping).
func Write(w io.Writer, header []string, rows [][]string) error {
	t := tablewriter.NewTable(w,
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
	t.Header(hdr...)
	for _, r := range rows {
		if err := t.Append(r); err != nil {
			return err
		}
	}
	return t.Render()
}

package attach

import (
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/discover"
)

// TestReportProblems: a problem that left part of the fabric unseen is a
// plain line, an inconsistency a warning; the painters paint the prefix.
func TestReportProblems(t *testing.T) {
	problems := []discover.Problem{
		{Kind: discover.ProblemPathTooLong, Msg: "add port 3 to DR path failed"},
		{Kind: discover.ProblemDuplicateGUID, Msg: "GUID 0x1 twice"},
	}
	var b strings.Builder
	ReportProblems(&b, "tool", problems, nil, nil)
	want := "tool: path-too-long: add port 3 to DR path failed\ntool: warning: duplicate-guid: GUID 0x1 twice\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	b.Reset()
	ReportProblems(&b, "tool", problems, func(s string) string { return "<" + s + ">" }, func(s string) string { return "[" + s + "]" })
	want = "<tool:> path-too-long: add port 3 to DR path failed\n[tool: warning:] duplicate-guid: GUID 0x1 twice\n"
	if b.String() != want {
		t.Errorf("painted: got %q, want %q", b.String(), want)
	}
}

package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestLineFilters: the line filters the comparisons use (stripDate,
// splitProgress, stripMADs, madsUsed, warnings) do what their regular
// expressions do, on edge cases and on a topology, a -s run and a
// ports report.
func TestLineFilters(t *testing.T) {
	inputs := []string{
		"",
		"\n",
		"# Topology file: generated on Mon\n",
		"# Topology file: generated on Mon",    // no newline: kept
		"x# Topology file: generated on Mon\n", // not at a line start
		"a\n# Topology file: generated on \n\n# Topology file: generated on 2\nb\n",
		"# Total MADs used: 12\n# Total MADs used: 1x\n# Total MADs used: \n# Total MADs used: 7\n",
		"#\n# Total MADs used: 34",
		"DR path slid 0; dlid 0; 0 node\nDR path x\nDR pathx\n DR path y\nDR path \n",
		"WARNING a\nWARNING\nWARNINGS b\n WARNING c\nWARNING \xff\x00 d\r\n",
		"# Topology file: generated on \xfe\n# Total MADs used: 0\nDR path \xff\nWARNING x\n",
		"DR path " + strings.Repeat("DR path ", 3) + "\nDR path",
	}
	for _, f := range []string{"testdata/group.net", "../../pkg/ibndcache/testdata/2sw2path4hca.osm.cache"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, string(b))
	}
	for _, args := range [][]string{
		{"--sim", "testdata/group.net", "-m", "-f"},
		{"--sim", "../../testdata/fabrics/faults.net", "-m", "-s"},
		{"--sim", "../../testdata/fabrics/mixed.net", "-p"},
	} {
		out, errb, _ := runOurs(t, args...)
		inputs = append(inputs, string(out), string(errb), string(out)+string(errb))
	}
	seen := map[*regexp.Regexp]int{}
	for i, in := range inputs {
		for _, re := range []*regexp.Regexp{dateLine, progressLine, madsLine, warningLine} {
			seen[re] += len(re.FindAllStringIndex(in, -1))
		}
		if got, want := stripDate([]byte(in)), dateLine.ReplaceAllString(in, ""); got != want {
			t.Errorf("input %d: stripDate %q, regexp %q", i, got, want)
		}
		lines, rest := splitProgress([]byte(in))
		if want := strings.Join(progressLine.FindAllString(in, -1), ""); lines != want {
			t.Errorf("input %d: splitProgress lines %q, regexp %q", i, lines, want)
		}
		if want := progressLine.ReplaceAllString(in, ""); string(rest) != want {
			t.Errorf("input %d: splitProgress rest %q, regexp %q", i, rest, want)
		}
		if got, want := stripMADs(in), madsLine.ReplaceAllString(in, ""); got != want {
			t.Errorf("input %d: stripMADs %q, regexp %q", i, got, want)
		}
		want := -1
		if m := madsLine.FindStringSubmatch(in); m != nil {
			want, _ = strconv.Atoi(m[1])
		}
		if got := madsUsed([]byte(in)); got != want {
			t.Errorf("input %d: madsUsed %d, regexp %d", i, got, want)
		}
		if got, want := warnings([]byte(in)), strings.Join(warningLine.FindAllString(in, -1), ""); got != want {
			t.Errorf("input %d: warnings %q, regexp %q", i, got, want)
		}
	}
	for re, n := range seen {
		if n < 3 {
			t.Errorf("%s matched %d lines in all the inputs: too few to test its filter", re, n)
		}
	}
}

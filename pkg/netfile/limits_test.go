package netfile

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLimits: every net-file input is bounded: bytes of a file and its
// includes in all, /dev/zero as a file or an include, nodes while
// parsing, and generated fabrics before they are built.
func TestLimits(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hcas := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString("Hca 1 \"H")
			b.WriteString(strings.Repeat("x", i%3))
			b.WriteString(string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676%26)) + "\"\n\n")
		}
		return b.String()
	}
	small := write("small.net", hcas(10))                                                 // 10 nodes
	inc := write("inc.net", "include \"small.net\"\ninclude \"small2.net\"\n")            // 20 nodes in all
	write("small2.net", strings.ReplaceAll(hcas(10), "\"H", "\"G"))                       //
	zero := write("zero.net", "Hca 1 \"h\"\n\ninclude \"/dev/zero\"\n")                   //
	deep := write("deep.net", "include \"inc.net\"\n"+strings.Repeat("# padding\n", 100)) // 1,000 bytes + includes
	tests := []struct {
		name  string
		file  string
		opt   ParseOptions
		err   error  // nil: parses
		msg   string // the error text
		nodes int
	}{
		{"within limits", inc, ParseOptions{MaxNodes: 20}, nil, "", 20},
		{"node limit", small, ParseOptions{MaxNodes: 9}, ErrTooManyNodes, "small.net:19: more than 9 nodes (the node limit)", 0},
		{"node limit across includes", inc, ParseOptions{MaxNodes: 15}, ErrTooManyNodes, "small2.net:11: more than 15 nodes", 0},
		{"byte limit", small, ParseOptions{MaxBytes: 50}, ErrTooLarge, "small.net: more than 50 bytes (the limit for a net file and its includes)", 0},
		{"byte limit counts includes", deep, ParseOptions{MaxBytes: 1100}, ErrTooLarge, `inc.net:1: can't open net configuration file "small.net": more than 1100 bytes`, 0},
		{"/dev/zero", "/dev/zero", ParseOptions{}, ErrTooLarge, "/dev/zero: more than 64 MiB (the limit for a net file and its includes)", 0},
		{"include /dev/zero", zero, ParseOptions{}, ErrTooLarge, `zero.net:3: can't open net configuration file "/dev/zero": more than 64 MiB`, 0},
		{"directory", dir, ParseOptions{}, nil, dir + ": is a directory", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseFileOptions(tc.file, tc.opt)
			if tc.msg == "" {
				if err != nil || len(f.Nodes) != tc.nodes {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, %d nodes", len(f.Nodes))
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("err %v is not %v", err, tc.err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err %q, want %q", err, tc.msg)
			}
		})
	}
}

// TestGenerateLimit: a generator spec is refused from its parameters,
// before anything is built.
func TestGenerateLimit(t *testing.T) {
	tests := []struct {
		spec  string
		max   int
		nodes int // the spec's node count
	}{
		{"fattree:levels=2,radix=16", 0, 152},
		{"fattree:levels=2,radix=16", 152, 152},
		{"fattree:levels=2,radix=16", 151, 152},
		{"fattree:levels=3,radix=16", 1344, 1344},
		{"fattree:levels=3,radix=16", 1000, 1344},
		{"fattree:levels=3,radix=254,hosts=253,leaves=253", 1 << 20, 16322803},
		{"fattree:levels=3,radix=48,hosts=36,leaves=36", 1 << 20, 64656},
	}
	for _, tc := range tests {
		f, err := GenerateLimit(tc.spec, tc.max)
		if tc.max == 0 || tc.nodes <= tc.max {
			if err != nil || len(f.Nodes) != tc.nodes {
				t.Errorf("%s max %d: %v", tc.spec, tc.max, err)
			}
			continue
		}
		want := "has " + itoa(tc.nodes) + " nodes, more than the limit of " + itoa(tc.max)
		if !errors.Is(err, ErrTooManyNodes) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s max %d: err %v, want %q", tc.spec, tc.max, err, want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

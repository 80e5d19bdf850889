//go:build linux

// Command benchcheck measures what issue 25 asks of ibcheck's cost: on the
// same ibsim fabric, `ibdiscover` then `ibavtrack errors` run one after
// the other (what an administrator runs without ibcheck) against one
// `ibcheck` with every check the fabric allows. It generates a fat tree,
// serves it with ibsim, runs `opensm --once` under libumad2sim (LIDs and
// forwarding tables; ibsim's PMA answers by LID only), then runs the
// three tools alternately, each process measured on its own by
// /usr/bin/time (benchproc.Run), and prints the median wall time and
// peak RSS of each, the sum of the first two, and ibcheck against it.
// The net file's do-lines inject SymbolErrorCounter values on every 37th
// node; ibavtrack errors and ibcheck read an empty threshold file.
//
//	go run ./tools/benchcheck [-spec fattree:levels=2,radix=64] [-runs 5] [-bin bin]
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ibfabric/ibdiag/tools/internal/benchproc"
)

func main() {
	spec := flag.String("spec", "fattree:levels=2,radix=64", "embedded-simulator generator spec of the fabric")
	runs := flag.Int("runs", 5, "runs of each tool")
	bin := flag.String("bin", "bin", "directory of the ibdiscover, ibavtrack and ibcheck binaries")
	flag.Parse()
	if err := run(*spec, *runs, *bin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "benchcheck: %v\n", err)
		os.Exit(1)
	}
}

func run(spec string, runs int, bin string, out io.Writer) error {
	if err := benchproc.Require("ibsim", "opensm", benchproc.TimeBin); err != nil {
		return err
	}
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	fab, err := benchproc.StartOnceFabric(spec, "benchcheck")
	if err != nil {
		return err
	}
	defer fab.Stop()
	dir, env, th, host := fab.Dir, fab.Env, fab.Thresholds, fab.Host
	nodes, switches, osmTime := fab.Nodes, fab.Switches, fab.OpenSM
	type config struct {
		name string
		bin  string
		args []string
		ok   int // the exit status that is not an error
	}
	confs := []config{
		{"ibdiscover --ibsim", filepath.Join(bin, "ibdiscover"), []string{"--ibsim"}, 0},
		{"ibavtrack errors --ibsim", filepath.Join(bin, "ibavtrack"), []string{"errors", "--ibsim", "--threshold-file", th}, 0},
		// 4: problems found (the injected errors)
		{"ibcheck --ibsim", filepath.Join(bin, "ibcheck"), []string{"--ibsim", "--threshold-file", th}, 4},
	}
	load0 := benchproc.LoadAvg()
	samples := make([][]benchproc.Sample, len(confs))
	for r := 0; r < runs; r++ {
		for i, c := range confs {
			s, err := benchproc.RunOnce(c.bin, c.args, env, dir, c.ok)
			if err != nil {
				return fmt.Errorf("%s: %v", c.name, err)
			}
			samples[i] = append(samples[i], s)
		}
	}
	load1 := benchproc.LoadAvg()
	fmt.Fprintf(out, "fabric: %s (%d nodes, %d switches), ibsim 0.10, LIDs by opensm --once (%.1fs), attached at %s\n",
		spec, nodes, switches, osmTime.Seconds(), host)
	fmt.Fprintf(out, "machine: %s/%s, %d CPUs, load average %s before, %s after; %d runs each, alternating; medians\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), load0, load1, runs)
	fmt.Fprintf(out, "%-32s %24s %12s\n", "configuration", "wall (s) min/median/max", "peak RSS")
	wall := make([]time.Duration, len(confs))
	rss := make([]int64, len(confs))
	row := func(name string, ws []time.Duration, rss int64, note string) time.Duration {
		m := benchproc.Median(ws)
		fmt.Fprintf(out, "%-32s %7.3f %8.3f %7.3f %9d KiB%s\n", name, slices.Min(ws).Seconds(), m.Seconds(), slices.Max(ws).Seconds(), rss, note)
		return m
	}
	for i, c := range confs {
		var ws []time.Duration
		var rs []int64
		for _, s := range samples[i] {
			ws, rs = append(ws, s.Wall), append(rs, s.RSSKiB)
		}
		rss[i] = benchproc.Median(rs)
		wall[i] = row(c.name, ws, rss[i], "")
	}
	// the pair's wall: each round's ibdiscover and ibavtrack errors
	// summed; a round where ibcheck took no longer than its pair
	var pair []time.Duration
	within := 0
	for r := 0; r < runs; r++ {
		pair = append(pair, samples[0][r].Wall+samples[1][r].Wall)
		if samples[2][r].Wall <= pair[r] {
			within++
		}
	}
	pw := row("ibdiscover + ibavtrack errors", pair, max(rss[0], rss[1]), " (the larger peak)")
	fmt.Fprintf(out, "\nibcheck / (ibdiscover + ibavtrack errors): wall %.2fx (medians; ibcheck no slower than the pair in %d of %d rounds);\n"+
		"peak RSS %.2fx the larger of the two, %.2fx their sum\n",
		wall[2].Seconds()/pw.Seconds(), within, runs, float64(rss[2])/float64(max(rss[0], rss[1])), float64(rss[2])/float64(rss[0]+rss[1]))
	fmt.Fprintf(out, "ibcheck's checks (first run):\n")
	sc := bufio.NewScanner(bytes.NewReader(samples[2][0].Stdout))
	in := false
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "Checks ("):
			in = true
		case strings.HasPrefix(l, "Findings:"):
			in = false
		}
		if in && !strings.HasPrefix(l, "Checks (") {
			fmt.Fprintln(out, l)
		}
	}
	return nil
}

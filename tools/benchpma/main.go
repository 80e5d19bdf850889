//go:build linux

// Command benchpma times `ibavtrack errors` against ibqueryerrors on the
// same ibsim fabric: it generates a fat tree, serves it with ibsim, runs
// `opensm --once` under libumad2sim (ibsim's PMA answers by LID only),
// checks that both tools print the same report, then runs them
// alternately and prints the median wall time and peak RSS of each, every
// process measured on its own by /usr/bin/time (benchproc.Run). The
// net file's do-lines inject SymbolErrorCounter values on every 37th node.
// ibqueryerrors runs with --skip-sl (no SA after opensm --once); both read
// an empty threshold file.
//
//	go run ./tools/benchpma [-spec fattree:levels=2,radix=64] [-runs 5] [-ibavtrack bin/ibavtrack]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/ibfabric/ibdiag/tools/internal/benchproc"
)

func main() {
	spec := flag.String("spec", "fattree:levels=2,radix=64", "embedded-simulator generator spec of the fabric")
	runs := flag.Int("runs", 5, "runs of each tool")
	ours := flag.String("ibavtrack", "bin/ibavtrack", "ibavtrack binary")
	flag.Parse()
	if err := run(*spec, *runs, *ours, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "benchpma: %v\n", err)
		os.Exit(1)
	}
}

func run(spec string, runs int, ours string, out io.Writer) error {
	if err := benchproc.Require("ibsim", "ibqueryerrors", "opensm", benchproc.TimeBin); err != nil {
		return err
	}
	abs, err := filepath.Abs(ours)
	if err != nil {
		return err
	}
	fab, err := benchproc.StartOnceFabric(spec, "benchpma")
	if err != nil {
		return err
	}
	defer fab.Stop()
	dir, env, th, host := fab.Dir, fab.Env, fab.Thresholds, fab.Host
	nodes, switches, osmTime := fab.Nodes, fab.Switches, fab.OpenSM
	shimEnv := append([]string{"LD_PRELOAD=" + benchproc.Shim}, env...)
	type config struct {
		name string
		bin  string
		args []string
		env  []string
	}
	confs := []config{
		{"ibqueryerrors --skip-sl", "ibqueryerrors", []string{"--skip-sl", "--threshold-file", th}, shimEnv},
		{"ibavtrack errors --ibsim", abs, []string{"errors", "--ibsim", "--threshold-file", th}, env},
	}
	samples := make([][]benchproc.Sample, len(confs))
	for r := 0; r < runs; r++ {
		for i, c := range confs {
			s, err := benchproc.RunOnce(c.bin, c.args, c.env, dir, 1)
			if err != nil {
				return fmt.Errorf("%s: %v", c.name, err)
			}
			samples[i] = append(samples[i], s)
		}
	}
	same := bytes.Equal(samples[0][0].Stdout, samples[1][0].Stdout)
	fmt.Fprintf(out, "fabric: %s (%d nodes, %d switches), ibsim 0.10, LIDs by opensm --once (%.1fs), attached at %s\n",
		spec, nodes, switches, osmTime.Seconds(), host)
	fmt.Fprintf(out, "machine: %s/%s, %d CPUs; %d runs each, alternating; medians\n\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runs)
	fmt.Fprintf(out, "%-36s %10s %12s\n", "configuration", "wall (s)", "peak RSS")
	medWall := make([]time.Duration, len(confs))
	medRSS := make([]int64, len(confs))
	for i, c := range confs {
		var wall []time.Duration
		var rss []int64
		for _, s := range samples[i] {
			wall, rss = append(wall, s.Wall), append(rss, s.RSSKiB)
		}
		medWall[i], medRSS[i] = benchproc.Median(wall), benchproc.Median(rss)
		fmt.Fprintf(out, "%-36s %10.3f %9d KiB\n", c.name, medWall[i].Seconds(), medRSS[i])
	}
	fmt.Fprintf(out, "\nibavtrack errors / ibqueryerrors: wall %.2fx, peak RSS %.2fx; reports identical: %v (%d port lines)\n",
		medWall[1].Seconds()/medWall[0].Seconds(), float64(medRSS[1])/float64(medRSS[0]), same, bytes.Count(samples[1][0].Stdout, []byte("   GUID ")))
	if !same {
		return fmt.Errorf("the reports differ:\n--- ibqueryerrors\n%s--- ibavtrack errors\n%s", samples[0][0].Stdout, samples[1][0].Stdout)
	}
	return nil
}

//go:build linux

// Command benchprom times one sweep of the Prometheus exporter (`ibcheck
// --textfile`: discovery, every port's PerfMgt counters and the checks)
// against the pipeline treydock/infiniband_exporter runs for a scrape
// (ibnetdiscover, then one `perfquery -x -l` per switch), on the same
// ibsim fabric with LIDs from `opensm --once`, alternately, and prints the
// median wall time and peak RSS of each (the pipeline's RSS is its largest
// process's), every run measured by /usr/bin/time (benchproc.Run). Issue
// 26 asks for at most 0.2x the pipeline's time and at most its peak RSS.
//
//	go run ./tools/benchprom [-spec fattree:levels=2,radix=64] [-runs 5] [-ibcheck bin/ibcheck]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/ibfabric/ibdiag/tools/internal/benchproc"
)

const shim = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"

// pipeline is treydock's collection as a shell script: ibnetdiscover,
// the switches' LIDs from its output, one perfquery -x per switch (all
// its ports, -l).
const pipeline = `set -e
ibnetdiscover > "$1/ibnetdiscover.out"
for lid in $(sed -n 's/^Switch.* lid \([0-9][0-9]*\) .*/\1/p' "$1/ibnetdiscover.out"); do
	perfquery -x -l "$lid" > /dev/null
done
`

func main() {
	spec := flag.String("spec", "fattree:levels=2,radix=64", "embedded-simulator generator spec of the fabric")
	runs := flag.Int("runs", 5, "runs of each")
	ours := flag.String("ibcheck", "bin/ibcheck", "ibcheck binary")
	flag.Parse()
	if err := run(*spec, *runs, *ours, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "benchprom: %v\n", err)
		os.Exit(1)
	}
}

func run(spec string, runs int, ours string, out io.Writer) error {
	if err := benchproc.Require("ibsim", "ibnetdiscover", "perfquery", "opensm", "sh", benchproc.TimeBin); err != nil {
		return err
	}
	abs, err := filepath.Abs(ours)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "benchprom")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	net := filepath.Join(dir, "fabric.net")
	nodes, switches, ports, host, err := benchproc.WriteFabric(spec, net)
	if err != nil {
		return err
	}
	ibsim, err := benchproc.StartIBSim(dir, fmt.Sprintf("benchprom%d", os.Getpid()), net, "-s", "-n",
		"-N", strconv.Itoa(nodes+16), "-S", strconv.Itoa(switches+16), "-P", strconv.Itoa(ports+64))
	if err != nil {
		return err
	}
	defer ibsim.Stop()
	env := []string{"IBSIM_SOCKNAME=" + ibsim.Sock, "SIM_HOST=" + host}
	shimEnv := append([]string{"LD_PRELOAD=" + shim}, env...)

	osm := exec.Command("opensm", "--once", "-F", "/dev/null", "-f", filepath.Join(dir, "opensm.log"), "--dump_files_dir", dir)
	osm.Env = append(append(os.Environ(), shimEnv...), "OSM_TMP_DIR="+dir, "OSM_CACHE_DIR="+dir)
	osm.Dir = dir
	start := time.Now()
	if b, err := osm.CombinedOutput(); err != nil {
		return fmt.Errorf("opensm --once: %v\n%s", err, b)
	}
	osmTime := time.Since(start)
	script := filepath.Join(dir, "pipeline.sh")
	if err := os.WriteFile(script, []byte(pipeline), 0o755); err != nil {
		return err
	}
	type config struct {
		name string
		bin  string
		args []string
		env  []string
	}
	confs := []config{
		{"ibnetdiscover + perfquery -x per switch", "sh", []string{script, dir}, shimEnv},
		{"ibcheck --textfile (one sweep)", abs, []string{"--textfile", filepath.Join(dir, "ib.prom"), "--ibsim"}, env},
	}
	samples := make([][]benchproc.Sample, len(confs))
	for r := 0; r < runs; r++ {
		for i, c := range confs {
			s, err := benchproc.RunOnce(c.bin, c.args, c.env, dir, 3)
			if err != nil {
				return fmt.Errorf("%s: %v", c.name, err)
			}
			samples[i] = append(samples[i], s)
		}
	}
	fmt.Fprintf(out, "fabric: %s (%d nodes, %d switches), LIDs by opensm --once (%.1fs), attached at %s\n",
		spec, nodes, switches, osmTime.Seconds(), host)
	fmt.Fprintf(out, "machine: %s/%s, %d CPUs; %d runs each, alternating; medians\n\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runs)
	fmt.Fprintf(out, "%-42s %10s %12s\n", "configuration", "wall (s)", "peak RSS")
	medWall := make([]time.Duration, len(confs))
	medRSS := make([]int64, len(confs))
	for i, c := range confs {
		var wall []time.Duration
		var rss []int64
		for _, s := range samples[i] {
			wall, rss = append(wall, s.Wall), append(rss, s.RSSKiB)
		}
		medWall[i], medRSS[i] = benchproc.Median(wall), benchproc.Median(rss)
		fmt.Fprintf(out, "%-42s %10.3f %9d KiB\n", c.name, medWall[i].Seconds(), medRSS[i])
	}
	fmt.Fprintf(out, "\nibcheck sweep / pipeline: wall %.2fx (target <= 0.2x), peak RSS %.2fx (target <= 1x)\n",
		medWall[1].Seconds()/medWall[0].Seconds(), float64(medRSS[1])/float64(medRSS[0]))
	return nil
}

// Command benchibsim times ibdiscover against ibnetdiscover on the same
// ibsim fabric: it generates a fat tree, serves it with ibsim, and runs
// both tools alternately at their default window and at -o 16, printing
// the median wall time, peak RSS and SMP count of each and the ratios.
//
//	go run ./tools/benchibsim [-spec fattree:levels=2,radix=64] [-runs 7] [-ibdiscover bin/ibdiscover]
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/topology"
)

const shim = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"

type config struct {
	name string
	bin  string
	args []string
	env  []string
}

type sample struct {
	wall time.Duration
	rss  int64 // KiB
	smps int
}

func main() {
	spec := flag.String("spec", "fattree:levels=2,radix=64", "embedded-simulator generator spec of the fabric")
	runs := flag.Int("runs", 7, "runs of each configuration")
	ours := flag.String("ibdiscover", "bin/ibdiscover", "ibdiscover binary")
	flag.Parse()
	if err := run(*spec, *runs, *ours, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "benchibsim: %v\n", err)
		os.Exit(1)
	}
}

func run(spec string, runs int, ours string, out io.Writer) error {
	for _, b := range []string{"ibsim", "ibnetdiscover"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("%s not installed (run scripts/install-deps.sh)", b)
		}
	}
	if _, err := os.Stat(shim); err != nil {
		return fmt.Errorf("%s missing (install ibsim-utils)", shim)
	}
	abs, err := filepath.Abs(ours)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "benchibsim")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// The fabric, written as ibnetdiscover topology (a valid ibsim net file).
	net := filepath.Join(dir, "fabric.net")
	nodes, switches, ports, host, err := writeFabric(spec, net)
	if err != nil {
		return err
	}
	sock := fmt.Sprintf("bench%d", os.Getpid())
	ibsim := exec.Command("ibsim", "-s", "-n",
		"-N", strconv.Itoa(nodes+16), "-S", strconv.Itoa(switches+16), "-P", strconv.Itoa(ports+64), net)
	ibsim.Env = append(os.Environ(), "IBSIM_SOCKNAME="+sock)
	ibsim.Dir = dir
	var ibsimLog bytes.Buffer
	ibsim.Stdout, ibsim.Stderr = &ibsimLog, &ibsimLog
	if err := ibsim.Start(); err != nil {
		return err
	}
	defer func() { ibsim.Process.Kill(); ibsim.Wait() }()
	if err := waitSocket(sock, 30*time.Second); err != nil {
		return fmt.Errorf("ibsim did not come up: %v\n%s", err, ibsimLog.String())
	}

	env := []string{"IBSIM_SOCKNAME=" + sock, "SIM_HOST=" + host}
	confs := []config{
		{"ibnetdiscover (default -o 2)", "ibnetdiscover", []string{"-m"}, append([]string{"LD_PRELOAD=" + shim}, env...)},
		{fmt.Sprintf("ibdiscover --ibsim (default -o %d)", attach.DefaultOutstanding), abs, []string{"--ibsim", "-m"}, env},
		{"ibnetdiscover -o 16", "ibnetdiscover", []string{"-m", "-o", "16"}, append([]string{"LD_PRELOAD=" + shim}, env...)},
		{"ibdiscover --ibsim -o 16", abs, []string{"--ibsim", "-m", "-o", "16"}, env},
	}
	samples := make([][]sample, len(confs))
	for r := 0; r < runs; r++ {
		for i, c := range confs {
			s, err := runOnce(c, dir)
			if err != nil {
				return fmt.Errorf("%s: %v", c.name, err)
			}
			samples[i] = append(samples[i], s)
		}
	}
	fmt.Fprintf(out, "fabric: %s (%d nodes, %d switches), ibsim 0.10, attached at %s\n", spec, nodes, switches, host)
	fmt.Fprintf(out, "machine: %s/%s, %d CPUs; %d runs each, alternating; medians\n\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runs)
	fmt.Fprintf(out, "%-36s %10s %12s %8s\n", "configuration", "wall (s)", "peak RSS", "SMPs")
	med := make([]sample, len(confs))
	for i, c := range confs {
		med[i] = median(samples[i])
		fmt.Fprintf(out, "%-36s %10.3f %9d KiB %8d\n", c.name, med[i].wall.Seconds(), med[i].rss, med[i].smps)
	}
	ratio := func(a, b sample) (float64, float64) {
		return a.wall.Seconds() / b.wall.Seconds(), float64(a.smps) / float64(b.smps)
	}
	wd, sd := ratio(med[1], med[0])
	w16, s16 := ratio(med[3], med[2])
	fmt.Fprintf(out, "\nibdiscover / ibnetdiscover, defaults: wall %.2fx, SMPs %.2fx (%.1f%% fewer)\n", wd, sd, 100*(1-sd))
	fmt.Fprintf(out, "ibdiscover / ibnetdiscover, -o 16:   wall %.2fx, SMPs %.2fx (%.1f%% fewer)\n", w16, s16, 100*(1-s16))
	ok := wd <= 0.8 && sd <= 0.9
	verdict := "met"
	if !ok {
		verdict = "NOT met"
	}
	fmt.Fprintf(out, "targets (wall <= 0.80x and >= 10%% fewer SMPs at defaults): %s\n", verdict)
	if !ok {
		return fmt.Errorf("targets not met")
	}
	return nil
}

// writeFabric generates spec and writes it as a topology file; it
// returns the node, switch and port counts and a CA to attach to.
func writeFabric(spec, path string) (nodes, switches, ports int, host string, err error) {
	f, err := sim.Generate(spec, nil)
	if err != nil {
		return
	}
	tr, err := f.Attach("")
	if err != nil {
		return
	}
	defer tr.Close()
	res, err := discover.Discover(context.Background(), tr, discover.Config{MaxHops: -1, Outstanding: 16})
	if err != nil {
		return
	}
	w, err := os.Create(path)
	if err != nil {
		return
	}
	bw := bufio.NewWriter(w)
	if err = topology.WriteTopology(bw, res.Fabric, topology.Options{}); err == nil {
		err = bw.Flush()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	for _, n := range res.Fabric.Nodes {
		nodes++
		ports += n.NumPorts() + 1
		if n.IsSwitch() {
			switches++
		} else if host == "" {
			host = smp.NodeID(n.Type(), n.GUID())
		}
	}
	return
}

var (
	madsLine = regexp.MustCompile(`# Total MADs used: (\d+)`)
	// ibdiscover -m's header shows ibnetdiscover's count; the SMPs it
	// sent itself are on stderr.
	sentLine = regexp.MustCompile(`(?m)^ibdiscover: (\d+) SMPs sent`)
)

func runOnce(c config, dir string) (sample, error) {
	cmd := exec.Command(c.bin, c.args...)
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Dir = dir
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return sample{}, fmt.Errorf("%v: %s", err, strings.TrimSpace(e.String()))
	}
	s := sample{wall: wall}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.rss = ru.Maxrss
	}
	if m := sentLine.FindSubmatch(e.Bytes()); m != nil {
		s.smps, _ = strconv.Atoi(string(m[1]))
	} else if m := madsLine.FindSubmatch(o.Bytes()); m != nil {
		s.smps, _ = strconv.Atoi(string(m[1]))
	}
	return s, nil
}

func median(ss []sample) sample {
	pick := func(less func(i, j int) bool) int {
		idx := make([]int, len(ss))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool { return less(idx[a], idx[b]) })
		return idx[len(idx)/2]
	}
	w := ss[pick(func(i, j int) bool { return ss[i].wall < ss[j].wall })].wall
	r := ss[pick(func(i, j int) bool { return ss[i].rss < ss[j].rss })].rss
	n := ss[pick(func(i, j int) bool { return ss[i].smps < ss[j].smps })].smps
	return sample{wall: w, rss: r, smps: n}
}

// waitSocket waits until ibsim's control socket shows in /proc/net/unix.
func waitSocket(sock string, d time.Duration) error {
	want := []byte("@" + sock + ":ctl@")
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/net/unix")
		if err == nil && bytes.Contains(b, want) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("no socket @%s:ctl after %v", sock, d)
}

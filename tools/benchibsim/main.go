//go:build linux

// Command benchibsim times ibdiscover against ibnetdiscover on the same
// ibsim fabric: it generates a fat tree, serves it with ibsim, and runs
// both tools alternately at their default windows and at matched windows
// (-o 16 and -o 64), with a bare ibsim client that sends the same SMPs as
// ibdiscover and does nothing else as the reference of what the socket
// allows. Every process is measured on its own by /usr/bin/time (wall
// time and the kernel's peak RSS of that process alone); it prints the
// medians, the SMPs (ibdiscover's retries apart: its SMP count without
// them is exact) and the ratios.
//
//	go run ./tools/benchibsim [-spec fattree:levels=2,radix=64] [-runs 7] [-ibdiscover bin/ibdiscover]
//
// With -bare FILE -o N it is the bare client itself (used by the bench);
// -prepare DIR only writes the fabric and its SMPs into DIR.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/ibsim"
	"github.com/ibfabric/ibdiag/pkg/sim"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/topology"
	"github.com/ibfabric/ibdiag/pkg/transport"
	"github.com/ibfabric/ibdiag/tools/internal/benchproc"
)

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
	bare := flag.String("bare", "", "be the bare client: send the SMPs of `FILE` to ibsim")
	window := flag.Int("o", 16, "the bare client's window")
	prepare := flag.String("prepare", "", "only write the fabric (fabric.net) and its SMPs (smps.bin) into `DIR` and print the host to attach at (for measuring one process, e.g. under valgrind)")
	flag.Parse()
	if *prepare != "" {
		fab, err := writeFabric(*spec, filepath.Join(*prepare, "fabric.net"), filepath.Join(*prepare, "smps.bin"))
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchibsim: %v\n", err)
			os.Exit(1)
		}
		fmt.Printf("nodes=%d switches=%d ports=%d smps=%d host=%s\n", fab.nodes, fab.switches, fab.ports, fab.smps, fab.host)
		return
	}
	if *bare != "" {
		if err := bareClient(*bare, *window); err != nil {
			fmt.Fprintf(os.Stderr, "benchibsim: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*spec, *runs, *ours, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "benchibsim: %v\n", err)
		os.Exit(1)
	}
}

func run(spec string, runs int, ours string, out io.Writer) error {
	if err := benchproc.Require("ibsim", "ibnetdiscover", benchproc.TimeBin); err != nil {
		return err
	}
	if _, err := os.Stat(benchproc.Shim); err != nil {
		return fmt.Errorf("%s missing (install ibsim-utils)", benchproc.Shim)
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
	smpFile := filepath.Join(dir, "smps.bin")
	fab, err := writeFabric(spec, net, smpFile)
	if err != nil {
		return err
	}
	nodes, switches, ports, host := fab.nodes, fab.switches, fab.ports, fab.host
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ibsim, err := benchproc.StartIBSim(dir, fmt.Sprintf("bench%d", os.Getpid()), net, "-s", "-n",
		"-N", strconv.Itoa(nodes+16), "-S", strconv.Itoa(switches+16), "-P", strconv.Itoa(ports+64))
	if err != nil {
		return err
	}
	defer ibsim.Stop()
	sock := ibsim.Sock

	env := []string{"IBSIM_SOCKNAME=" + sock, "SIM_HOST=" + host}
	pre := append([]string{"LD_PRELOAD=" + benchproc.Shim}, env...)
	const (
		cDefault, oDefault, c16, o16, bare16, c64, o64, bare64 = 0, 1, 2, 3, 4, 5, 6, 7
	)
	confs := []config{
		cDefault: {"ibnetdiscover (default -o 2)", "ibnetdiscover", []string{"-m"}, pre},
		oDefault: {fmt.Sprintf("ibdiscover --ibsim (default: %d)", discover.QueuedWindow), abs, []string{"--ibsim", "-m"}, env},
		c16:      {"ibnetdiscover -o 16", "ibnetdiscover", []string{"-m", "-o", "16"}, pre},
		o16:      {"ibdiscover --ibsim -o 16", abs, []string{"--ibsim", "-m", "-o", "16"}, env},
		bare16:   {"bare client, same SMPs, -o 16", self, []string{"-bare", smpFile, "-o", "16"}, env},
		c64:      {"ibnetdiscover -o 64", "ibnetdiscover", []string{"-m", "-o", "64"}, pre},
		o64:      {"ibdiscover --ibsim -o 64", abs, []string{"--ibsim", "-m", "-o", "64"}, env},
		bare64:   {"bare client, same SMPs, -o 64", self, []string{"-bare", smpFile, "-o", "64"}, env},
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
	fmt.Fprintf(out, "machine: %s/%s, %d CPUs, load average %s; %d runs each, interleaved; medians\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), loadAvg(), runs)
	fmt.Fprintf(out, "each process measured alone by %s (wall, peak RSS)\n\n", benchproc.TimeBin)
	fmt.Fprintf(out, "%-36s %10s %12s %8s %8s\n", "configuration", "wall (s)", "peak RSS", "SMPs", "retries")
	med := make([]sample, len(confs))
	for i, c := range confs {
		med[i] = median(samples[i])
		smps, retries := strconv.Itoa(med[i].smps), "-"
		switch {
		case c.bin == abs:
			// ibdiscover's count without retries is exact: the rest are
			// retries (a first attempt that timed out under load).
			smps, retries = strconv.Itoa(fab.smps), strconv.Itoa(med[i].smps-fab.smps)
		case c.bin == self:
			smps = strconv.Itoa(fab.smps)
		}
		fmt.Fprintf(out, "%-36s %10.3f %9d KiB %8s %8s\n", c.name, med[i].wall.Seconds(), med[i].rss, smps, retries)
	}
	w := func(a, b int) float64 { return med[a].wall.Seconds() / med[b].wall.Seconds() }
	r := func(a, b int) float64 { return float64(med[a].rss) / float64(med[b].rss) }
	fmt.Fprintf(out, "\nibdiscover / ibnetdiscover, defaults: wall %.2fx, peak RSS %.2fx, SMPs %.2fx\n", w(oDefault, cDefault), r(oDefault, cDefault), float64(fab.smps)/float64(med[cDefault].smps))
	fmt.Fprintf(out, "ibdiscover / ibnetdiscover, -o 16:   wall %.2fx, peak RSS %.2fx\n", w(o16, c16), r(o16, c16))
	fmt.Fprintf(out, "ibdiscover / ibnetdiscover, -o 64:   wall %.2fx, peak RSS %.2fx\n", w(o64, c64), r(o64, c64))
	fmt.Fprintf(out, "bare client / ibdiscover (share of what the client path allows): -o 16 %.2f, -o 64 %.2f\n", w(bare16, o16), w(bare64, o64))
	fmt.Fprintf(out, "ibdiscover SMPs/s at -o 16: %.0f; bare client: %.0f\n", float64(fab.smps)/med[o16].wall.Seconds(), float64(fab.smps)/med[bare16].wall.Seconds())
	return nil
}

// loadAvg is the first field of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

type fabric struct {
	nodes, switches, ports int
	host                   string
	smps                   int // ibdiscover's exact SMP count (no retries)
}

// recorder keeps the request of every SMP sent through it.
type recorder struct {
	transport.Transport
	mu   sync.Mutex
	reqs []byte
}

func (r *recorder) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	r.mu.Lock()
	r.reqs = append(r.reqs, req[:smp.MADSize]...)
	r.mu.Unlock()
	return r.Transport.Exchange(ctx, dlid, req, resp)
}

// writeFabric generates spec and writes it as a topology file; it
// returns the node, switch and port counts and a CA to attach to, and
// writes the SMPs ibdiscover sends from that CA to smpFile.
func writeFabric(spec, path, smpFile string) (fb fabric, err error) {
	f, err := sim.Generate(spec, nil)
	if err != nil {
		return
	}
	tr, err := f.Attach("")
	if err != nil {
		return
	}
	defer tr.Close()
	// The SMPs ibdiscover sends from the default attach point, the first
	// CA (the first node discovered, the one the bench attaches at).
	rec := &recorder{Transport: tr}
	// (full timeouts: no first attempt cut short by a loaded scheduler)
	res, err := discover.Discover(context.Background(), rec, discover.Config{MaxHops: -1, Outstanding: 16, FixedTimeout: true})
	if err != nil {
		return
	}
	if res.Retries != 0 {
		return fb, fmt.Errorf("retries on the embedded simulator")
	}
	fb.smps = int(res.SMPs)
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
	if err != nil {
		return
	}
	for _, n := range res.Fabric.Nodes {
		fb.nodes++
		fb.ports += n.NumPorts() + 1
		if n.IsSwitch() {
			fb.switches++
		} else if fb.host == "" {
			fb.host = smp.NodeID(n.Type(), n.GUID())
		}
	}
	err = os.WriteFile(smpFile, rec.reqs, 0o644)
	return
}

// bareClient sends the SMPs of file to ibsim with window workers and
// checks only that each was answered: the least any client of this
// transport path can cost.
func bareClient(file string, window int) error {
	reqs, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	n := len(reqs) / smp.MADSize
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := ibsim.Dial(ctx, ibsim.ConfigFromEnv())
	if err != nil {
		return err
	}
	defer c.Close()
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < window; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var req, resp [smp.MADSize]byte
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				copy(req[:], reqs[i*smp.MADSize:])
				if c.Exchange(ctx, smp.PermissiveLID, req[:], resp[:]) != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		return fmt.Errorf("%d of %d SMPs failed", f, n)
	}
	return nil
}

var (
	madsLine = regexp.MustCompile(`# Total MADs used: (\d+)`)
	// ibdiscover -m's header shows ibnetdiscover's count; the SMPs it
	// sent itself are on stderr.
	sentLine = regexp.MustCompile(`(?m)^ibdiscover: (\d+) SMPs sent`)
)

// runOnce runs c once under benchproc.Run and reads the SMPs it sent.
func runOnce(c config, dir string) (sample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r, err := benchproc.Run(ctx, c.bin, c.args, c.env, dir)
	if err != nil {
		return sample{}, err
	}
	s := sample{wall: r.Wall, rss: r.RSSKiB}
	// ibdiscover's own count is on stderr (-m's header carries
	// ibnetdiscover's); ibnetdiscover's is in its header.
	if m := sentLine.FindSubmatch(r.Stderr); m != nil {
		s.smps, _ = strconv.Atoi(string(m[1]))
	} else if m := madsLine.FindSubmatch(r.Stdout); m != nil {
		s.smps, _ = strconv.Atoi(string(m[1]))
	}
	return s, nil
}

// median is the median of each field of ss on its own.
func median(ss []sample) sample {
	var w []time.Duration
	var r []int64
	var n []int
	for _, s := range ss {
		w, r, n = append(w, s.wall), append(r, s.rss), append(n, s.smps)
	}
	return sample{wall: benchproc.Median(w), rss: benchproc.Median(r), smps: benchproc.Median(n)}
}

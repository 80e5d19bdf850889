//go:build linux

// Command benchprom times one sweep of the Prometheus exporter against
// what treydock/infiniband_exporter runs for one collection, on the same
// ibsim fabric (LIDs and an SA from OpenSM, which perfquery -G needs),
// alternately, and prints the median wall time and peak RSS of each:
//
//   - treydock's commands as a shell script: `ibnetdiscover --ports`,
//     then for each switch `perfquery -l -x -G GUID PORTS` with PORTS its
//     connected ports (collectors/ibnetdiscover.go, switch.go at
//     treydock/infiniband_exporter 992ebe1, v0.10.0, default flags:
//     switches only, one perfquery at a time);
//   - with -treydock, treydock's own exporter built from that commit, in
//     its one-shot mode (--exporter.runonce: one collection written to a
//     file, the same collection a scrape of its server runs);
//   - `ibcheck --textfile` (discovery, every port's PerfMgt counters, the
//     checks, the text written).
//
// Peak RSS is given two ways: the largest single process (GNU time's
// %M: for a pipeline, the largest of its processes) and the largest sum
// of the RSS of the configuration's processes alive at once (sampled
// from /proc every 20 ms), which counts treydock's Go process and the
// perfquery it waits for together. Issue 26 asks for at most 0.2x the
// pipeline's time and at most its peak RSS.
//
// Then it starts `ibcheck serve` on the same fabric with --interval 1ms
// (sweeps back to back) and reports, over -runs sweeps, the time from one
// sweep's start to the next's (sweep, encoding, gzip), the process's peak
// RSS (VmHWM) and the wall time of scrapes of /metrics made meanwhile,
// as Prometheus makes them (gzip) and without gzip.
//
// With -serve-also, the serve of another ibcheck binary is measured the
// same way (docs/performance.md: the exporter built with client_golang).
//
//	go run ./tools/benchprom [-spec fattree:levels=2,radix=64] [-runs 5] [-ibcheck bin/ibcheck] [-treydock PATH] [-serve-also PATH]
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ibfabric/ibdiag/tools/internal/benchproc"
)

// pipeline is treydock's collection as a shell script: ibnetdiscover
// --ports, each switch's GUID and connected ports from its output (lines
// "SW LID PORT GUID WIDTH SPEED - ..."; "???" marks a port with nothing
// connected), one perfquery -l -x -G per switch.
const pipeline = `set -e
ibnetdiscover --ports > "$1/ibnetdiscover.out"
awk '$1 == "SW" && $6 != "???" { p[$4] = p[$4] (p[$4] == "" ? "" : ",") $3 }
     END { for (g in p) print g, p[g] }' "$1/ibnetdiscover.out" > "$1/switches"
while read -r guid ports; do
	perfquery -l -x -G "$guid" "$ports" > /dev/null
done < "$1/switches"
`

func main() {
	spec := flag.String("spec", "fattree:levels=2,radix=64", "embedded-simulator generator spec of the fabric")
	runs := flag.Int("runs", 5, "runs of each")
	ours := flag.String("ibcheck", "bin/ibcheck", "ibcheck binary")
	trey := flag.String("treydock", "", "treydock/infiniband_exporter binary (optional)")
	also := flag.String("serve-also", "", "another ibcheck binary whose serve to measure as well (optional)")
	serveOnly := flag.Bool("serve-only", false, "measure only serve (ours and -serve-also's)")
	flag.Parse()
	if err := run(*spec, *runs, *ours, *trey, *also, *serveOnly, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "benchprom: %v\n", err)
		os.Exit(1)
	}
}

type sample struct {
	wall      time.Duration
	rss, tree int64 // KiB: largest process, largest sum at once
}

func run(spec string, runs int, ours, trey, also string, serveOnly bool, out io.Writer) error {
	if err := benchproc.Require("ibsim", "ibnetdiscover", "perfquery", "opensm", "saquery", "sh", "awk", benchproc.TimeBin); err != nil {
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
	netf := filepath.Join(dir, "fabric.net")
	nodes, switches, ports, host, err := benchproc.WriteFabric(spec, netf)
	if err != nil {
		return err
	}
	ibsim, err := benchproc.StartIBSim(dir, fmt.Sprintf("benchprom%d", os.Getpid()), netf, "-s", "-n",
		"-N", strconv.Itoa(nodes+16), "-S", strconv.Itoa(switches+16), "-P", strconv.Itoa(ports+64))
	if err != nil {
		return err
	}
	defer ibsim.Stop()
	env := []string{"IBSIM_SOCKNAME=" + ibsim.Sock, "SIM_HOST=" + host}
	shimEnv := append([]string{"LD_PRELOAD=" + benchproc.Shim}, env...)

	// OpenSM stays up (no periodic sweep) to answer the SA queries
	// perfquery -G resolves GUIDs with: ready when it is master and its
	// SA answers saquery.
	osmOut := filepath.Join(dir, "opensm.out")
	of, err := os.Create(osmOut)
	if err != nil {
		return err
	}
	defer of.Close()
	osm := exec.Command("opensm", "-s", "0", "-F", "/dev/null", "-f", filepath.Join(dir, "opensm.log"), "--dump_files_dir", dir)
	osm.Env = append(append(os.Environ(), shimEnv...), "OSM_TMP_DIR="+dir, "OSM_CACHE_DIR="+dir)
	osm.Dir = dir
	osm.Stdout, osm.Stderr = of, of
	start := time.Now()
	if err := osm.Start(); err != nil {
		return err
	}
	osmDone := make(chan struct{})
	go func() { osm.Wait(); close(osmDone) }()
	defer func() { osm.Process.Kill(); <-osmDone }()
	if err := waitLog(osmOut, "Entering MASTER state", 5*time.Minute, osmDone); err != nil {
		return fmt.Errorf("opensm: %v", err)
	}
	for {
		sa := exec.Command("saquery", "-s")
		sa.Env = append(os.Environ(), shimEnv...)
		if sa.Run() == nil {
			break
		}
		if time.Since(start) > 5*time.Minute {
			return errors.New("opensm's SA did not answer saquery -s within 5 minutes")
		}
		time.Sleep(time.Second)
	}
	osmTime := time.Since(start)
	script := filepath.Join(dir, "pipeline.sh")
	if err := os.WriteFile(script, []byte(pipeline), 0o755); err != nil {
		return err
	}
	// the fabric's own processes are not the configurations'
	skip := map[string]bool{"ibsim": true, "opensm": true}
	type config struct {
		name string
		bin  string
		args []string
		env  []string
		ok   int
	}
	confs := []config{
		{"treydock pipeline (sh: ibnetdiscover, perfquery)", "sh", []string{script, dir}, shimEnv, 0},
	}
	if trey != "" {
		t, err := filepath.Abs(trey)
		if err != nil {
			return err
		}
		confs = append(confs, config{"treydock infiniband_exporter --exporter.runonce", t,
			[]string{"--exporter.runonce", "--exporter.output", filepath.Join(dir, "treydock.prom"),
				"--exporter.lockfile", filepath.Join(dir, "treydock.lock"), "--log.level", "warn"}, shimEnv, 0})
	}
	confs = append(confs, config{"ibcheck --textfile (one sweep)", abs,
		[]string{"--textfile", filepath.Join(dir, "ib.prom"), "--ibsim"}, env, 3})
	if serveOnly {
		runs, confs = 0, nil
	}
	samples := make([][]sample, len(confs))
	loads := []string{benchproc.LoadAvg()}
	for r := 0; r < runs; r++ {
		for i, c := range confs {
			tree := watchTree(os.Getpid(), skip)
			s, err := benchproc.RunOnce(c.bin, c.args, c.env, dir, c.ok)
			peak := tree()
			if err != nil {
				return fmt.Errorf("%s: %v", c.name, err)
			}
			samples[i] = append(samples[i], sample{s.Wall, s.RSSKiB, peak})
		}
	}
	loads = append(loads, benchproc.LoadAvg())
	if serveOnly {
		return serveAll(abs, also, env, dir, flagRuns(), out)
	}
	if err := checkOutputs(dir, trey != ""); err != nil {
		return err
	}
	fmt.Fprintf(out, "fabric: %s (%d nodes, %d switches), LIDs and SA by opensm (up in %.1fs), attached at %s\n",
		spec, nodes, switches, osmTime.Seconds(), host)
	fmt.Fprintf(out, "machine: %s/%s, %d CPUs; %d runs each, alternating; medians; load average before/after: %s\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runs, strings.Join(loads, " / "))
	fmt.Fprintf(out, "%-50s %9s %16s %16s\n", "configuration", "wall (s)", "largest process", "processes at once")
	med := make([]sample, len(confs))
	for i, c := range confs {
		var wall []time.Duration
		var rss, tree []int64
		for _, s := range samples[i] {
			wall, rss, tree = append(wall, s.wall), append(rss, s.rss), append(tree, s.tree)
		}
		med[i] = sample{benchproc.Median(wall), benchproc.Median(rss), benchproc.Median(tree)}
		fmt.Fprintf(out, "%-50s %9.3f %12d KiB %12d KiB\n", c.name, med[i].wall.Seconds(), med[i].rss, med[i].tree)
	}
	o := med[len(med)-1]
	fmt.Fprintln(out)
	for i, c := range confs[:len(confs)-1] {
		fmt.Fprintf(out, "ibcheck --textfile / %s: wall %.2fx (target <= 0.2x), largest process %.2fx, at once %.2fx (target <= 1x)\n",
			c.name, o.wall.Seconds()/med[i].wall.Seconds(), float64(o.rss)/float64(med[i].rss), float64(o.tree)/float64(med[i].tree))
	}
	fmt.Fprintln(out)
	return serveAll(abs, also, env, dir, runs, out)
}

func flagRuns() int { r, _ := strconv.Atoi(flag.Lookup("runs").Value.String()); return r }

// serveAll measures ours, then also's when set.
func serveAll(ours, also string, env []string, dir string, runs int, out io.Writer) error {
	if err := serve(ours, env, dir, runs, out); err != nil {
		return err
	}
	if also == "" {
		return nil
	}
	a, err := filepath.Abs(also)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%s:\n", also)
	return serve(a, env, dir, runs, out)
}

// checkOutputs makes sure each configuration collected what it should: the
// pipeline read every switch, treydock and ibcheck wrote their metrics.
func checkOutputs(dir string, trey bool) error {
	sw, err := os.ReadFile(filepath.Join(dir, "switches"))
	if err != nil || len(bytes.TrimSpace(sw)) == 0 {
		return fmt.Errorf("the pipeline found no switch (%v)", err)
	}
	files := map[string]string{"ib.prom": "infiniband_switch_port_transmit_data_bytes_total{"}
	if trey {
		files["treydock.prom"] = "infiniband_switch_port_transmit_data_bytes_total{"
	}
	for f, want := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return err
		}
		if !bytes.Contains(b, []byte(want)) {
			return fmt.Errorf("%s has no %s...}", f, want)
		}
	}
	return nil
}

// serve runs `ibcheck serve`, sweeping back to back, for runs sweeps and
// reports their period, the process's peak RSS and scrape times.
func serve(bin string, env []string, dir string, runs int, out io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--ibsim", "--listen", addr, "--interval", "1ms")
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	load0 := benchproc.LoadAvg()
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() { cancel(); <-exited }()
	url := "http://" + addr + "/metrics"
	tr := &http.Transport{DisableCompression: true}
	client := &http.Client{Timeout: 30 * time.Second, Transport: tr}
	var (
		mu                 sync.Mutex
		gzipT, identT      []time.Duration
		gzipSize, identLen int64
	)
	// scrapes while the sweeps run, every 2 s, gzip and not
	scrapeDone := make(chan struct{})
	stopScrapes := make(chan struct{})
	go func() {
		defer close(scrapeDone)
		for i := 0; ; i++ {
			select {
			case <-stopScrapes:
				return
			case <-time.After(2 * time.Second):
			}
			enc := []string{"gzip", "identity"}[i%2]
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("Accept-Encoding", enc)
			t0 := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				continue
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			d := time.Since(t0)
			if err != nil || resp.StatusCode != http.StatusOK {
				continue
			}
			mu.Lock()
			if enc == "gzip" {
				gzipT, gzipSize = append(gzipT, d), n
			} else {
				identT, identLen = append(identT, d), n
			}
			mu.Unlock()
		}
	}()
	var starts []float64
	var durs []time.Duration
	for len(starts) < runs+1 {
		select {
		case <-exited:
			return fmt.Errorf("serve exited after %d sweeps: %v; its stderr:\n%s", len(starts), cmd.ProcessState, stderr.String())
		default:
		}
		if ctx.Err() != nil {
			return fmt.Errorf("serve: %d sweeps in 15 minutes; its stderr:\n%s", len(starts), stderr.String())
		}
		// polled every 250 ms (a gzip scrape, about 1 MB): a sweep is
		// told by its start time; polled once a second, sweeps shorter
		// than that were seen every second or third one, and the period
		// read as a multiple of the real one
		time.Sleep(250 * time.Millisecond)
		at, dur, err := head(client, url)
		if err != nil || at == 0 || (len(starts) > 0 && at == starts[len(starts)-1]) {
			continue
		}
		starts = append(starts, at)
		durs = append(durs, dur)
	}
	close(stopScrapes)
	<-scrapeDone
	hwm, rss := procStatus(cmd.Process.Pid, "VmHWM:"), procStatus(cmd.Process.Pid, "VmRSS:")
	load1 := benchproc.LoadAvg()
	var period []time.Duration
	for i := 1; i < len(starts); i++ {
		period = append(period, time.Duration((starts[i]-starts[i-1])*float64(time.Second)))
	}
	fmt.Fprintf(out, "ibcheck serve --interval 1ms (sweeps back to back), %d sweeps; load average before/after: %s / %s\n", len(period), load0, load1)
	fmt.Fprintf(out, "  sweep to sweep (collection, encoding, gzip): median %.3f s (each: %s)\n", benchproc.Median(period).Seconds(), secs(period))
	fmt.Fprintf(out, "  collection alone (collector_duration_seconds): median %.3f s\n", benchproc.Median(durs[1:]).Seconds())
	fmt.Fprintf(out, "  peak RSS (VmHWM) %d KiB, RSS now %d KiB\n", hwm, rss)
	mu.Lock()
	defer mu.Unlock()
	if len(gzipT) > 0 {
		fmt.Fprintf(out, "  scrape /metrics during the sweeps, gzip (as Prometheus): median %.1f ms of %d (max %.1f ms), %d bytes\n",
			ms(benchproc.Median(gzipT)), len(gzipT), ms(maxOf(gzipT)), gzipSize)
	}
	if len(identT) > 0 {
		fmt.Fprintf(out, "  scrape /metrics during the sweeps, no gzip: median %.1f ms of %d (max %.1f ms), %d bytes\n",
			ms(benchproc.Median(identT)), len(identT), ms(maxOf(identT)), identLen)
	}
	return nil
}

// head reads the start of a scrape (the exporter's own metrics come first,
// the collection's duration right after them) for the served collection's
// start time and duration.
func head(client *http.Client, url string) (at float64, dur time.Duration, err error) {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	// read to the end: a server that sees its client close with the
	// response unread gets EPIPE, and an ibcheck built before serve
	// ignored SIGPIPE died of it
	defer func() { io.Copy(io.Discard, resp.Body); resp.Body.Close() }()
	var r io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return 0, 0, err
		}
		r = zr
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if v, ok := strings.CutPrefix(l, "infiniband_exporter_last_collect_timestamp_seconds "); ok {
			at, _ = strconv.ParseFloat(v, 64)
		}
		if strings.HasPrefix(l, "infiniband_exporter_collector_duration_seconds{") {
			f := strings.Fields(l)
			s, _ := strconv.ParseFloat(f[len(f)-1], 64)
			return at, time.Duration(s * float64(time.Second)), nil
		}
	}
	return 0, 0, errors.New("no collection served yet")
}

// watchTree samples, every 20 ms until the returned function is called,
// the sum of the RSS of root's descendants (but root's children named in
// skip and theirs, and GNU time itself), and returns the largest sum
// seen, in KiB.
func watchTree(root int, skip map[string]bool) func() int64 {
	stop := make(chan struct{})
	done := make(chan int64)
	go func() {
		var peak int64
		for {
			if s := treeRSS(root, skip); s > peak {
				peak = s
			}
			select {
			case <-stop:
				done <- peak
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() int64 { close(stop); return <-done }
}

func treeRSS(root int, skip map[string]bool) int64 {
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	comm := map[int]string{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		i := bytes.LastIndexByte(b, ')')
		j := bytes.IndexByte(b, '(')
		if i < 0 || j < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		parent[pid], comm[pid] = pp, string(b[j+1:i])
	}
	var sum int64
	for pid := range parent {
		if pid == root || comm[pid] == "time" {
			continue
		}
		in := false
		for p := pid; p > 1; p = parent[p] {
			if parent[p] == root {
				in = !skip[comm[p]]
				break
			}
		}
		if in {
			sum += procStatus(pid, "VmRSS:")
		}
	}
	return sum
}

// procStatus is a KiB field of /proc/PID/status (0 when gone).
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// waitLog waits for a line containing s in the file.
func waitLog(file, s string, d time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(file); err == nil && bytes.Contains(b, []byte(s)) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before %q in %s", s, file)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("no %q in %s after %v", s, file, d)
}

func secs(ds []time.Duration) string {
	var s []string
	for _, d := range ds {
		s = append(s, fmt.Sprintf("%.2f", d.Seconds()))
	}
	return strings.Join(s, " ")
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func maxOf(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

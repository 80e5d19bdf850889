package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ibfabric/ibdiag/internal/attach"
	"github.com/ibfabric/ibdiag/internal/cliapp"
	"github.com/ibfabric/ibdiag/internal/exitcode"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
)

// syncBuffer is a bytes.Buffer written by the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// get scrapes url (10 s at most).
func get(t *testing.T, url string) string {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v (a scrape must answer while a sweep runs)", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("scrape %s: status %d, %v\n%s", url, resp.StatusCode, err, b)
	}
	return string(b)
}

// sampleValue is the value of the first sample of name whose labels
// include want.
func sampleValue(t *testing.T, text, name string, want map[string]string) (float64, bool) {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("scrape does not parse: %v", err)
	}
	// a port metric has guid and port only (as treydock's): a node name
	// in want is joined through the kind's info metric, as
	// on(guid) group_left(switch) infiniband_switch_info would
	for _, k := range []string{"switch", "hca"} {
		v, ok := want[k]
		if !ok || !strings.HasPrefix(name, "infiniband_"+k+"_port_") {
			continue
		}
		guid, found := "", false
		for _, m := range mfs["infiniband_"+k+"_info"].GetMetric() {
			ls := map[string]string{}
			for _, l := range m.Label {
				ls[l.GetName()] = l.GetValue()
			}
			if ls[k] == v {
				guid, found = ls["guid"], true
			}
		}
		if !found {
			return 0, false
		}
		w := map[string]string{"guid": guid}
		for kk, vv := range want {
			if kk != k {
				w[kk] = vv
			}
		}
		want = w
	}
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		if m.Counter != nil {
			return m.Counter.GetValue(), true
		}
		return m.Gauge.GetValue(), true
	}
	return 0, false
}

// wait receives from ch or fails after 60 s, saying what it waited for.
func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(60 * time.Second):
		t.Fatalf("no %s within 60 s", what)
	}
	var zero T
	return zero
}

// TestServe: the first sweep's result is served; a scrape answers while
// the next sweep is held and starts no sweep; a sweep that cannot reach
// the fabric keeps the result served, marked stale with its age; SIGINT
// (the context) stops the server with status 0.
func TestServe(t *testing.T) {
	addrs := make(chan string, 1)
	started := make(chan int, 16)
	release := make(chan struct{})
	var down atomic.Bool
	var sweeps, opens atomic.Int32
	oldStarted, oldListening, oldOpen := sweepStarted, listening, openFabric
	t.Cleanup(func() { sweepStarted, listening, openFabric = oldStarted, oldListening, oldOpen })
	listening = func(a string) { addrs <- a }
	sweepStarted = func(ctx context.Context, n int) {
		sweeps.Store(int32(n))
		select {
		case started <- n:
		case <-ctx.Done():
		}
		hold := release // sweep 2 is held until the test lets it go
		if n >= 3 {
			hold = nil // sweep 3 and later until the end
		}
		if n >= 2 {
			select {
			case <-hold:
			case <-ctx.Done():
			}
		}
	}
	openFabric = func(ctx context.Context, s attach.Settings) (*attach.Fabric, error) {
		opens.Add(1) // every sweep opens the fabric
		if down.Load() {
			return nil, errors.New("the local port is down")
		}
		return oldOpen(ctx, s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout bytes.Buffer
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, &stdout, &stderr, []string{"ibcheck", "serve", "--listen", "127.0.0.1:0", "--interval", "1ms",
			"--sim", fabrics + "fattree2.net", "--sim-sm"})
	}()
	var addr string
	select {
	case addr = <-addrs:
	case code := <-done:
		t.Fatalf("serve exited %d before listening:\n%s", code, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("serve not listening within 60 s:\n%s", stderr.String())
	}
	url := "http://" + addr + "/metrics"
	if n := wait(t, started, "first sweep"); n != 1 {
		t.Fatalf("first sweep numbered %d", n)
	}
	// sweep 2 starts after sweep 1's result is served, and is held
	if n := wait(t, started, "second sweep"); n != 2 {
		t.Fatalf("second sweep numbered %d", n)
	}
	for i := 0; i < 3; i++ {
		text := get(t, url)
		for name, want := range map[string]float64{"infiniband_exporter_up": 1, "infiniband_exporter_stale": 0} {
			if v, ok := sampleValue(t, text, name, nil); !ok || v != want {
				t.Fatalf("while sweep 2 is held: %s = %v (present %v), want %v", name, v, ok, want)
			}
		}
		if v, ok := sampleValue(t, text, "infiniband_switch_port_state", map[string]string{"switch": "L0", "port": "1"}); !ok || v != 4 {
			t.Fatalf("while sweep 2 is held: L0 port 1 state %v (present %v), want 4", v, ok)
		}
	}
	if n := sweeps.Load(); n != 2 {
		t.Fatalf("3 scrapes during sweep 2: sweeps started %d, want 2 (a scrape never starts a sweep)", n)
	}
	if n := opens.Load(); n != 1 {
		t.Fatalf("3 scrapes during sweep 2 (held before it opens the fabric): the fabric was opened %d times, want 1 (a scrape never sweeps)", n)
	}
	select {
	case n := <-started:
		t.Fatalf("sweep %d started while sweep 2 is held", n)
	default:
	}
	// the fabric goes away: sweep 2 fails, sweep 3 is held
	down.Store(true)
	close(release)
	wait(t, started, "third sweep")
	text := get(t, url)
	for name, want := range map[string]float64{"infiniband_exporter_up": 1, "infiniband_exporter_stale": 1, "infiniband_exporter_sweep_failures_total": 1} {
		if v, ok := sampleValue(t, text, name, nil); !ok || v != want {
			t.Errorf("after a failed sweep: %s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	if v, ok := sampleValue(t, text, "infiniband_exporter_result_age_seconds", nil); !ok || v <= 0 {
		t.Errorf("after a failed sweep: result age %v (present %v), want > 0", v, ok)
	}
	if _, ok := sampleValue(t, text, "infiniband_switch_port_state", map[string]string{"switch": "L0", "port": "1"}); !ok {
		t.Error("after a failed sweep: the last result is no longer served")
	}
	if s := stderr.String(); !strings.Contains(s, "ibcheck serve: sweep 2: fabric unreachable: the local port is down; serving the result of ") || !strings.Contains(s, "(stale)") {
		t.Errorf("stderr does not say sweep 2 failed and the result is stale:\n%s", s)
	}
	cancel()
	if code := wait(t, done, "exit after the context ended"); code != exitcode.OK {
		t.Errorf("exit %d after SIGINT, want 0:\n%s", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout: %s", stdout.String())
	}
}

// TestServeAddressInUse: one clear line, exit 2.
func TestServeAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	out, errb, code := runTool(t, "serve", "--listen", addr, "--sim", fabrics+"fattree2.net", "--sim-sm")
	clitest.BadInput(t, "ibcheck", out, errb, code, "--listen "+addr, "address already in use")
	out, errb, code = runTool(t, "serve", "--listen", "127.0.0.1:99999", "--sim", fabrics+"fattree2.net")
	clitest.BadInput(t, "ibcheck", out, errb, code, "--listen 127.0.0.1:99999", "invalid port")
	out, errb, code = runTool(t, "serve", "--interval", "0s", "--sim", fabrics+"fattree2.net")
	clitest.BadInput(t, "ibcheck", out, errb, code, "--interval 0s", "must be positive")
}

// TestTextfile: one collection written in the textfile format, that
// parses and holds the fabric's ports.
func TestTextfile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "ib.prom")
	out, errb, code := runTool(t, "--textfile", f, "--sim", fabrics+"fattree2.net", "--sim-sm")
	if code != exitcode.OK || len(out) != 0 {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errb)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if v, ok := sampleValue(t, text, "infiniband_switch_port_state", map[string]string{"switch": "L0", "port": "1"}); !ok || v != 4 {
		t.Errorf("L0 port 1 state %v (present %v), want 4", v, ok)
	}
	// every switch port's counters, though the switch's PMA sums them
	// clean (AllPortSelect): the metrics read each port
	if v, ok := sampleValue(t, text, "infiniband_switch_port_symbol_error_total", map[string]string{"switch": "L0", "port": "1"}); !ok || v != 0 {
		t.Errorf("L0 port 1 symbol errors %v (present %v), want 0", v, ok)
	}
	if v, ok := sampleValue(t, text, "infiniband_exporter_nodes", map[string]string{"type": "hca"}); !ok || v != 16 {
		t.Errorf("hca nodes %v (present %v), want 16", v, ok)
	}
	clitest.NoLeftovers(t, dir, "ib.prom")
	out, errb, code = runTool(t, "--textfile", f, "--json", "--sim", fabrics+"fattree2.net")
	clitest.BadInput(t, "ibcheck", out, errb, code, "--textfile", "cannot be used with --json")
}

// TestTextfileNotWritable: a directory that is not writable: one clear
// line, exit 2, no file, nothing half-written (as root: a directory of
// /proc; as the unprivileged user: a directory without write permission).
func TestTextfileNotWritable(t *testing.T) {
	dir := t.TempDir()
	target := "/proc/ibcheck-test/ib.prom"
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		target = filepath.Join(dir, "ib.prom")
	}
	out, errb, code := runTool(t, "--textfile", target, "--sim", fabrics+"fattree2.net", "--sim-sm")
	clitest.BadInput(t, "ibcheck", out, errb, code, "--textfile "+target, "")
	if _, err := os.Stat(target); err == nil {
		t.Errorf("%s written", target)
	}
	clitest.NoLeftovers(t, dir)
}

func TestTextfileUnprivileged(t *testing.T) {
	clitest.Unprivileged(t, "^TestTextfileNotWritable$")
}

// TestTextfileSweepFails: a fabric that cannot be reached leaves the
// file as it was (exit 1, one line), nothing half-written beside it.
func TestTextfileSweepFails(t *testing.T) {
	oldOpen := openFabric
	t.Cleanup(func() { openFabric = oldOpen })
	openFabric = func(context.Context, attach.Settings) (*attach.Fabric, error) {
		return nil, errors.New("the local port is down")
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "ib.prom")
	if err := os.WriteFile(f, []byte("# the last good collection\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errb, code := runTool(t, "--textfile", f, "--sim", fabrics+"fattree2.net", "--sim-sm")
	if code != exitcode.Fatal || len(out) != 0 || strings.Count(string(errb), "\n") != 1 ||
		!strings.Contains(string(errb), "fabric unreachable: the local port is down") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 and one line", code, out, errb)
	}
	if b, _ := os.ReadFile(f); string(b) != "# the last good collection\n" {
		t.Errorf("%s changed: %q", f, b)
	}
	clitest.NoLeftovers(t, dir, "ib.prom")
}

// TestServeScraperGoesAway: a scraper that resets its connection in the
// middle of a large response (the server's write fails with EPIPE, and
// SIGPIPE comes with it, which cliapp.Main turns into the end of a
// command whose output is gone) does not stop the exporter: sweeps go on
// and the next scrape is answered. The binary itself (cliapp.Main's
// signals); before the fix serve ended with status 141.
func TestServeScraperGoesAway(t *testing.T) {
	bin := clitest.Build(t, ".")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// a 2,144-node fabric: its text (26 MB) outgrows the socket buffers
	cmd := exec.CommandContext(ctx, bin, "serve", "--listen", "127.0.0.1:0", "--interval", "1ms",
		"--sim", "fattree:levels=2,radix=64", "--sim-sm", "--checks", "links")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	// serve writes "served N" to the test hook when a collection is served
	hookR, hookW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer hookR.Close()
	cmd.ExtraFiles = []*os.File{hookW}
	cmd.Env = append(os.Environ(), cliapp.TestHookEnv+"=3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hookW.Close()
	served := make(chan struct{}, 64)
	go func() {
		sc := bufio.NewScanner(hookR)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "served ") {
				served <- struct{}{}
			}
		}
	}()
	exited := make(chan struct{}) // closed when serve has exited, with exitErr
	var exitErr error
	var errText syncBuffer
	addrs := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			errText.Write([]byte(sc.Text() + "\n"))
			if a, ok := strings.CutPrefix(sc.Text(), "ibcheck serve: listening on "); ok {
				addrs <- strings.TrimSuffix(strings.Fields(a)[0], ",")
			}
		}
		exitErr = cmd.Wait()
		close(exited)
	}()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Error("serve did not exit within 30 s of SIGTERM")
			cmd.Process.Kill()
		}
	}()
	var addr string
	select {
	case addr = <-addrs:
	case <-exited:
		t.Fatalf("serve exited (%v) before listening:\n%s", exitErr, errText.String())
	case <-ctx.Done():
		t.Fatalf("serve not listening within 5 minutes:\n%s", errText.String())
	}
	// waitSweep waits until serve has served one more collection
	waitSweep := func(what string) {
		select {
		case <-served:
		case <-exited:
			t.Fatalf("serve exited (%v) %s:\n%s", exitErr, what, errText.String())
		case <-ctx.Done():
			t.Fatalf("no new collection served within 5 minutes %s", what)
		}
	}
	waitSweep("before its first collection")
	for i := 0; i < 3; i++ {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		// the FIN first (the server's side is then in CLOSE_WAIT), the
		// reset later: the server's next write fails with EPIPE, as when
		// a client closes with the rest of the response still coming
		c.(*net.TCPConn).CloseWrite()
		if _, err := io.ReadFull(c, make([]byte, 64<<10)); err != nil {
			t.Fatalf("reading the start of the response: %v", err)
		}
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}
	// two more collections are served: serve is still running
	for len(served) > 0 { // the collections served while it scraped
		<-served
	}
	waitSweep("after a scraper went away")
	waitSweep("after a scraper went away")
}

//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// freePort is a 127.0.0.1 port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestPrometheusScrapesServe: a real Prometheus server (Debian's), with a
// private configuration and data directory on 127.0.0.1, scrapes `ibcheck
// serve` on an ibsim fabric under OpenSM and answers a query for a
// counter that ibsim's console PerformanceSet raised.
func TestPrometheusScrapesServe(t *testing.T) {
	ibsimtest.Require(t)
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		clitest.Skip(t, "prometheus not installed (Debian package prometheus; scripts/install-deps.sh)")
	}
	const host = "H0"
	s := ibsimtest.Start(t, abs(t, fabrics+"fattree2.net"), ibsimtest.WithConsole())
	s.RunOpenSM(t, host, t.TempDir())
	s.Console(t, `PerformanceSet "L0"[1] PortCounters.SymbolErrorCounter=42`)
	s.Console(t, `PerformanceSet "H3"[1] PortCounters.LinkDownedCounter=5`)

	addrs := make(chan string, 1)
	oldListening := listening
	t.Cleanup(func() { listening = oldListening })
	listening = func(a string) { addrs <- a }
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, io.Discard, &stderr, append([]string{"ibcheck", "serve", "--listen", "127.0.0.1:0", "--interval", "2s"},
			clitest.WithPeerTimeout([]string{"--ibsim-sockname", s.SockName, "--sim-host", host})...))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Errorf("ibcheck serve did not stop within 60 s of the end")
		}
	})
	var addr string
	select {
	case addr = <-addrs:
	case code := <-done:
		t.Fatalf("serve exited %d before listening:\n%s", code, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("serve not listening within 60 s:\n%s", stderr.String())
	}

	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: ibcheck
    static_configs:
      - targets: ["%s"]
`, addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	web := freePort(t)
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(prom, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+web, "--web.console.templates="+dir, "--web.console.libraries="+dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = ibsimtest.ProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill() // by PID
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Errorf("prometheus (pid %d) did not exit within 30 s of SIGKILL", cmd.Process.Pid)
		}
	})
	promLog := func() string { b, _ := os.ReadFile(logf.Name()); return string(b) }

	queries := []struct {
		query string
		want  string
	}{
		// the port metrics carry guid and port only, as treydock's: the
		// name comes from the info metric, joined as its rules join
		{`infiniband_switch_port_symbol_error_total{port="1"} * on(guid) group_left(switch) infiniband_switch_info{switch="L0"}`, "42"},
		{`infiniband_hca_port_link_downed_total{port="1"} * on(guid) group_left(hca) infiniband_hca_info{hca="H3"}`, "5"},
		{`infiniband_exporter_up`, "1"},
	}
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(120 * time.Second)
	for _, q := range queries {
		var last string
		for {
			select {
			case <-exited:
				t.Fatalf("prometheus exited:\n%s", promLog())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("Prometheus did not answer %s = %s within 120 s; last answer %s\nprometheus log:\n%s\nibcheck serve:\n%s",
					q.query, q.want, last, promLog(), stderr.String())
			}
			resp, err := client.Get("http://" + web + "/api/v1/query?query=" + url.QueryEscape(q.query))
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				last = string(b)
				var r struct {
					Status string
					Data   struct {
						Result []struct {
							Metric map[string]string
							Value  []any
						}
					}
				}
				if json.Unmarshal(b, &r) == nil && r.Status == "success" && len(r.Data.Result) == 1 &&
					len(r.Data.Result[0].Value) == 2 && r.Data.Result[0].Value[1] == q.want {
					if q.query != "infiniband_exporter_up" && !strings.HasPrefix(r.Data.Result[0].Metric["guid"], "0x") {
						t.Errorf("%s: guid label %q", q.query, r.Data.Result[0].Metric["guid"])
					}
					break
				}
			} else {
				last = err.Error()
			}
			time.Sleep(250 * time.Millisecond) // polling an outside server: the deadline above bounds it
		}
	}
}

//go:build unix

package slurmtopo

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
)

// freePort returns a TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// field returns the value of key=VALUE in a topology line ("" if absent).
func field(line, key string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// TestSlurmctld: a real slurmctld (Debian slurm-wlm) with
// TopologyPlugin=topology/tree loads the topology.conf Write writes and
// `scontrol show topology` lists every switch we wrote, at the level we
// gave it, with our Nodes= and Switches= lists, byte for byte (so Slurm
// writes host lists as Compress does).
func TestSlurmctld(t *testing.T) {
	ctld, err1 := exec.LookPath("slurmctld")
	if err1 != nil {
		if p := "/usr/sbin/slurmctld"; fileExists(p) {
			ctld, err1 = p, nil
		}
	}
	scontrol, err2 := exec.LookPath("scontrol")
	if err1 != nil || err2 != nil {
		clitest.Skip(t, "slurmctld or scontrol not installed (Debian slurm-wlm; scripts/install-deps.sh installs it)")
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fattree3", "rails", "demo"} {
		t.Run(name, func(t *testing.T) {
			var conf bytes.Buffer
			res, err := Write(&conf, sweep(t, fabricFile(name)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			type sw struct{ level, nodes, switches string }
			want := map[string]sw{}
			level := 0
			for _, line := range strings.Split(conf.String(), "\n") {
				if _, err := fmt.Sscanf(line, "# level %d:", &level); err == nil {
					continue
				}
				if n := field(line, "SwitchName"); n != "" {
					want[n] = sw{fmt.Sprint(level - 1), field(line, "Nodes"), field(line, "Switches")}
				}
			}
			dir := t.TempDir()
			for _, d := range []string{"state", "spool"} {
				if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, "topology.conf"), conf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			user := "root"
			if os.Getuid() != 0 {
				user = os.Getenv("USER")
			}
			slurmConf := fmt.Sprintf(`ClusterName=ibdiag
SlurmctldHost=%s
SlurmctldPort=%d
SlurmdPort=%d
SlurmUser=%s
AuthType=auth/none
CredType=cred/none
StateSaveLocation=%s/state
SlurmdSpoolDir=%s/spool
SlurmctldPidFile=%s/slurmctld.pid
MailProg=/bin/true
TopologyPlugin=topology/tree
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/linear
NodeName=%s NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN
PartitionName=all Nodes=ALL Default=YES
`, host, freePort(t), freePort(t), user, dir, dir, dir, Compress(res.Hosts))
			cf := filepath.Join(dir, "slurm.conf")
			if err := os.WriteFile(cf, []byte(slurmConf), 0o644); err != nil {
				t.Fatal(err)
			}
			env := append(os.Environ(), "SLURM_CONF="+cf)

			var log bytes.Buffer
			cmd := exec.Command(ctld, "-D", "-i", "-v")
			cmd.Env, cmd.Dir = env, dir
			cmd.Stdout, cmd.Stderr = &log, &log
			cmd.SysProcAttr = ibsimtest.ProcAttr() // SIGKILL if the test dies
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer func() {
				cmd.Process.Kill() // by PID
				<-exited
			}()

			// Guard: slurmctld answers within 30 s or the test fails.
			deadline := time.Now().Add(30 * time.Second)
			var out []byte
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				q := exec.CommandContext(ctx, scontrol, "show", "topology")
				q.Env = env
				out, err = q.Output()
				cancel()
				if err == nil && len(out) > 0 {
					break
				}
				select {
				case e := <-exited:
					exited <- e
					t.Fatalf("slurmctld exited (%v) before answering:\n%s", e, log.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("scontrol show topology: no answer from slurmctld in 30 s (%v)\nslurmctld log:\n%s", err, log.String())
				}
				time.Sleep(200 * time.Millisecond)
			}
			got := map[string]sw{}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				n := field(line, "SwitchName")
				got[n] = sw{field(line, "Level"), field(line, "Nodes"), field(line, "Switches")}
			}
			if len(got) != len(want) {
				t.Errorf("slurmctld lists %d switches, we wrote %d:\n%s", len(got), len(want), out)
			}
			for n, w := range want {
				g, ok := got[n]
				switch {
				case !ok:
					t.Errorf("switch %s: not listed by scontrol", n)
				case g.level != w.level || g.switches != w.switches || (w.nodes != "" && g.nodes != w.nodes):
					t.Errorf("switch %s: scontrol shows level %s switches %q nodes %q; we wrote level %s switches %q nodes %q",
						n, g.level, g.switches, g.nodes, w.level, w.switches, w.nodes)
				}
			}
			if t.Failed() {
				t.Logf("topology.conf:\n%s\nscontrol show topology:\n%s", conf.String(), out)
			}
		})
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

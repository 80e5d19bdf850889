//go:build linux

package ibsim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ibfabric/ibdiag/internal/testkit/ibsimtest"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// allSlotsFree checks that ibsim runs and that ten clients can attach at
// once.
func allSlotsFree(t *testing.T, s *ibsimtest.Sim) {
	t.Helper()
	if !s.Alive() {
		t.Fatalf("ibsim exited:\n%s", s.Log())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var cs []*Client
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for i := range MaxClients {
		c, err := Dial(ctx, Config{SockName: s.SockName})
		if err != nil {
			t.Fatalf("client %d of %d at once: %v", i+1, MaxClients, err)
		}
		cs = append(cs, c)
	}
}

// waitProcess waits up to 30s for a process started by this one.
func waitProcess(t *testing.T, p *os.Process) {
	t.Helper()
	done := make(chan error, 1)
	go func() { _, err := p.Wait(); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("lingerer: %v", err)
		}
	case <-time.After(30 * time.Second):
		p.Kill()
		t.Fatal("the lingerer did not end within 30s of ibsim continuing")
	}
}

// CONNECT sent to a stopped ibsim and given up (ctx cancelled, or the
// CONNECT limit): ibsim, continued, finds our :in socket still there (it
// used to exit: "can't connect to in socket"), and the slot it assigned
// comes back.
func TestGiveUpConnectToStoppedSimulator(t *testing.T) {
	s := ibsimtest.Start(t, exampleNet, ibsimtest.WithConsole())
	lingerers := make(chan *os.Process, 2)
	testHookLinger = func(p *os.Process) { lingerers <- p }
	defer func() { testHookLinger, testHookCtlSent = nil, nil }()

	for _, how := range []string{"cancel", "limit"} {
		t.Run(how, func(t *testing.T) {
			syscall.Kill(s.PID(), syscall.SIGSTOP)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg := Config{SockName: s.SockName}
			if how == "cancel" {
				testHookCtlSent = func(t CtlType) {
					if t == CtlConnect {
						cancel()
					}
				}
			} else {
				testHookCtlSent = nil
				cfg.ConnectTimeout = 20 * time.Millisecond
			}
			var err error
			if how == "limit" {
				// The CONNECT limit is kept: Dial ends by it, not later.
				err = endsBy(t, "Dial with a 20ms CONNECT limit", time.Now().Add(cfg.ConnectTimeout), func() error {
					_, err := Dial(ctx, cfg)
					return err
				})
			} else {
				_, err = Dial(ctx, cfg)
			}
			syscall.Kill(s.PID(), syscall.SIGCONT)
			switch how {
			case "cancel":
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Dial: %v", err)
				}
			case "limit":
				if !errors.Is(err, transport.ErrTimeout) || !strings.Contains(err.Error(), "did not answer CONNECT") {
					t.Fatalf("Dial: %v", err)
				}
			}
			select {
			case p := <-lingerers:
				waitProcess(t, p)
			default:
				t.Fatal("no lingerer took the unanswered CONNECT")
			}
			if out := s.Console(t, "Attached"); strings.Contains(out, "Client") {
				t.Fatalf("slot still taken after the lingerer ended:\n%s", out)
			}
			allSlotsFree(t, s)
		})
	}
}

// ibsim stopped in the middle of a run: writes fill the socket buffer
// and block; cancelling ctx ends every Exchange, Close ends within its
// bound, and ibsim, continued, gets our DISCONNECT.
func TestExchangeWithStoppedSimulator(t *testing.T) {
	s := ibsimtest.Start(t, exampleNet, ibsimtest.WithConsole())
	c := dial(t, s, "")
	mustGet(t, c, "0,1", smp.AttrNodeInfo, 0)
	blocked := make(chan struct{})
	var once sync.Once
	testHookSendBlocked = func() { once.Do(func() { close(blocked) }) }
	defer func() { testHookSendBlocked = nil }()

	syscall.Kill(s.PID(), syscall.SIGSTOP)
	defer syscall.Kill(s.PID(), syscall.SIGCONT)
	ctx, cancel := context.WithCancel(context.Background())
	m := smp.NewGet(mustPath(t, "0,1"), smp.AttrNodeInfo, 0)
	req, _ := m.MarshalBinary()
	errs := make(chan error, 64)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := make([]byte, smp.MADSize)
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Short per-request deadlines, as the engine's: the
				// requests pile up unanswered in the socket.
				ectx, ecancel := context.WithTimeout(ctx, time.Millisecond)
				err := c.Exchange(ectx, smp.PermissiveLID, req, resp)
				ecancel()
				if ctx.Err() != nil {
					errs <- err
					return
				}
			}
		}()
	}
	select {
	case <-blocked:
	case <-time.After(60 * time.Second):
		t.Fatal("the data socket never filled up")
	}
	cancel()
	close(stop)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Exchanges still blocked 20s after ctx was cancelled")
	}
	close(errs)
	for err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, transport.ErrTimeout) {
			t.Errorf("Exchange: %v", err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close with ibsim stopped: %v", err)
	}
	syscall.Kill(s.PID(), syscall.SIGCONT)
	if out := s.Console(t, "Attached"); strings.Contains(out, "Client") {
		t.Fatalf("slot still taken:\n%s", out)
	}
	allSlotsFree(t, s)
}

// ibsim's single ERROR reply to CONNECT is told apart.
func TestRefusalReasons(t *testing.T) {
	s := ibsimtest.Start(t, exampleNet)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	_, err := Dial(ctx, Config{SockName: s.SockName, Host: "NoSuchNode"})
	if !errors.Is(err, ErrUnknownNode) || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), `"NoSuchNode"`) {
		t.Errorf("unknown node: %v", err)
	}

	sm, err := Dial(ctx, Config{SockName: s.SockName, Host: "Hca1", IsSM: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(ctx, Config{SockName: s.SockName, Host: "Hca1", IsSM: true}); !errors.Is(err, ErrSMExists) {
		t.Errorf("second SM on Hca1: %v", err)
	}
	sm.Close()

	var cs []*Client
	for range MaxClients {
		c, err := Dial(ctx, Config{SockName: s.SockName})
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	for _, host := range []string{"", "Hca1", "NoSuchNode"} {
		_, err := Dial(ctx, Config{SockName: s.SockName, Host: host})
		if !errors.Is(err, ErrNoSlot) || !strings.Contains(err.Error(), "ibsim has no free client slot: 10 in use") {
			t.Errorf("host %q with all slots taken: %v", host, err)
		}
	}
	for _, c := range cs {
		c.Close()
	}
	allSlotsFree(t, s)
}

// Abort writes DISCONNECT at once, and only once: a Close afterwards
// must not release the slot again (ibsim may have given it to someone
// else since).
func TestAbortReleasesOnce(t *testing.T) {
	s := ibsimtest.Start(t, exampleNet, ibsimtest.WithConsole())
	c := dial(t, s, "")
	Abort()
	if out := s.Console(t, "Attached"); strings.Contains(out, "Client") {
		t.Fatalf("slot still taken after Abort:\n%s", out)
	}
	d := dial(t, s, "Hca1")
	if d.Slot() != c.Slot() {
		t.Fatalf("the next client got slot %d, not the freed %d", d.Slot(), c.Slot())
	}
	c.Close()
	if out := s.Console(t, "Attached"); !strings.Contains(out, `"Hca1"`) {
		t.Fatalf("Close after Abort released the slot of the next client:\n%s", out)
	}
}

// Abort while CONNECT waits for a stopped ibsim hands the CONNECT to a
// lingerer, as giving up does.
func TestAbortDuringConnect(t *testing.T) {
	s := ibsimtest.Start(t, exampleNet, ibsimtest.WithConsole())
	lingerers := make(chan *os.Process, 1)
	testHookLinger = func(p *os.Process) { lingerers <- p }
	testHookCtlSent = func(t CtlType) {
		if t == CtlConnect {
			go Abort()
		}
	}
	defer func() { testHookLinger, testHookCtlSent = nil, nil }()
	syscall.Kill(s.PID(), syscall.SIGSTOP)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Dial(ctx, Config{SockName: s.SockName})
	testHookCtlSent = nil
	syscall.Kill(s.PID(), syscall.SIGCONT)
	if err == nil {
		t.Fatal("Dial succeeded after Abort")
	}
	select {
	case p := <-lingerers:
		waitProcess(t, p)
	case <-time.After(20 * time.Second):
		t.Fatalf("no lingerer took the CONNECT (Dial: %v)", err)
	}
	if out := s.Console(t, "Attached"); strings.Contains(out, "Client") {
		t.Fatalf("slot still taken:\n%s", out)
	}
	allSlotsFree(t, s)
}

// Inet mode: with nothing on the port, Dial fails at once too (the ICMP
// error comes back within the CONNECT exchange).
func TestDialNoSimulatorInet(t *testing.T) {
	// A port nobody listens on: bind one, note it, close it.
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
	sa, _ := syscall.Getsockname(fd)
	syscall.Close(fd)
	port := sa.(*syscall.SockaddrInet4).Port
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = Dial(ctx, Config{ServerName: "127.0.0.1", ServerPort: uint16(port)})
	if !errors.Is(err, ErrNotRunning) || !strings.Contains(err.Error(), "ibsim -r") {
		t.Fatalf("Dial: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Dial waited for its ctx")
	}
}

// A lingerer never gives up while ibsim lives: with ibsim stopped far
// longer than the lingerer's probe period (every probe finds ibsim's
// queue full or unread), it is still there, in "/" (no mount kept busy);
// ibsim, continued, answers it and keeps running, and a fresh client
// works. (A lingerer that gave up, or was killed, made ibsim exit:
// "ibpanic: sim_ctl_new_client: can't connect to in socket".)
func TestLingererOutlivesStalledSimulator(t *testing.T) {
	s := ibsimtest.Start(t, exampleNet, ibsimtest.WithConsole())
	lingerers := make(chan *os.Process, 1)
	testHookLinger = func(p *os.Process) { lingerers <- p }
	testLingerProbe = 20 * time.Millisecond
	defer func() { testHookLinger, testLingerProbe = nil, 0 }()

	syscall.Kill(s.PID(), syscall.SIGSTOP)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Dial(ctx, Config{SockName: s.SockName, ConnectTimeout: 20 * time.Millisecond})
	if !errors.Is(err, transport.ErrTimeout) {
		syscall.Kill(s.PID(), syscall.SIGCONT)
		t.Fatalf("Dial to a stopped ibsim: %v", err)
	}
	var p *os.Process
	select {
	case p = <-lingerers:
	default:
		syscall.Kill(s.PID(), syscall.SIGCONT)
		t.Fatal("no lingerer took the unanswered CONNECT")
	}
	// The stall: 150 probe periods, each probe queued or refused by a
	// full queue. A lingerer that ends meanwhile is a failure.
	ended := make(chan error, 1)
	go func() { _, err := p.Wait(); ended <- err }()
	select {
	case err := <-ended:
		syscall.Kill(s.PID(), syscall.SIGCONT)
		t.Fatalf("the lingerer ended while ibsim was stopped (%v)", err)
	case <-time.After(150 * testLingerProbe):
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", p.Pid))
	if err != nil || cwd != "/" {
		t.Errorf("the lingerer's working directory: %q (%v), want /", cwd, err)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "VmRSS:") || strings.HasPrefix(l, "Threads:") {
				t.Logf("lingerer %s", strings.Join(strings.Fields(l), " "))
			}
		}
	}
	syscall.Kill(s.PID(), syscall.SIGCONT)
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("lingerer: %v", err)
		}
	case <-time.After(30 * time.Second):
		p.Kill()
		t.Fatal("the lingerer did not end within 30s of ibsim continuing")
	}
	if out := s.Console(t, "Attached"); strings.Contains(out, "Client") {
		t.Fatalf("slot still taken after the lingerer ended:\n%s", out)
	}
	allSlotsFree(t, s)
}

// CONNECT to an ibsim whose request queue is full (stopped, and its
// queue filled by others): the error says so, not just "timed out".
func TestConnectQueueFull(t *testing.T) {
	s := ibsimtest.Start(t, exampleNet)
	syscall.Kill(s.PID(), syscall.SIGSTOP)
	defer syscall.Kill(s.PID(), syscall.SIGCONT)
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, unixName(s.SockName+":ctl")); err != nil {
		t.Fatal(err)
	}
	// ibsim ignores datagrams of one byte; these only fill its queue.
	for i := 0; ; i++ {
		if _, err := unix.Write(fd, []byte{0}); errors.Is(err, unix.EAGAIN) {
			break
		} else if err != nil || i > 1<<16 {
			t.Fatalf("filling ibsim's queue: %v after %d datagrams", err, i)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = Dial(ctx, Config{SockName: s.SockName, ConnectTimeout: 50 * time.Millisecond})
	if !errors.Is(err, transport.ErrTimeout) || !strings.Contains(err.Error(), "ibsim's request queue stayed full for 50ms, so it took no CONNECT") {
		t.Fatalf("Dial to a full queue: %v", err)
	}
	syscall.Kill(s.PID(), syscall.SIGCONT)
	if !s.Alive() {
		t.Fatalf("ibsim exited:\n%s", s.Log())
	}
	allSlotsFree(t, s)
}

// Package attach holds the command-line flags (and ibdiag.conf) every tool
// shares to choose how it reaches a fabric (kernel umad device, a running
// ibsim, or the embedded simulator), opens it through package fabric, and
// words what goes wrong in terms of those flags.
package attach

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ibfabric/ibdiag/internal/infile"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/fabric"
	"github.com/ibfabric/ibdiag/pkg/ibsim"
	"github.com/ibfabric/ibdiag/pkg/netfile"
	"github.com/ibfabric/ibdiag/pkg/transport"
	"github.com/ibfabric/ibdiag/pkg/umad"
)

// Limits on the shared numeric flags.
const (
	MaxOutstanding = 1024
	MaxTimeoutMS   = 600000
	MaxRetries     = 100
)

// Defaults of the shared flags.
const (
	DefaultOutstanding = discover.DefaultOutstanding
	DefaultTimeoutMS   = 1000
	DefaultRetries     = 3
)

// Flags returns the shared flags: -C/--Ca, -P/--Port, --ibsim, --sim,
// --sim-host, --sim-sm, -t/--timeout, --retries, -o/--outstanding-smps
// (--max-smps). simSM is the default of --sim-sm: tools that need LIDs and
// forwarding tables run the embedded SM by default.
func Flags(simSM bool) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "Ca", Aliases: []string{"C"}, Usage: "use the InfiniBand device `NAME` (kernel umad)", Category: "Fabric"},
		&cli.IntFlag{Name: "Port", Aliases: []string{"P"}, Usage: "use port `N` of the device (kernel umad)", Category: "Fabric"},
		&cli.BoolFlag{Name: "ibsim", Usage: "use a running ibsim (IBSIM_SOCKNAME, IBSIM_SERVER_NAME/PORT, SIM_HOST as libumad2sim)", Category: "Fabric"},
		&cli.StringFlag{Name: "ibsim-sockname", Usage: "ibsim socket base `NAME` (overrides IBSIM_SOCKNAME)", Category: "Fabric"},
		&cli.StringFlag{Name: "sim", Usage: "use the embedded simulator on `SPEC`: an ibsim net file, an ibnetdiscover topology file, or a generator such as fattree:levels=2,radix=8,hosts=4", Category: "Fabric"},
		&cli.StringFlag{Name: "sim-host", Usage: "attach to node `ID`: net-file id, description, node GUID or port GUID (default: the first node, as ibsim); with --ibsim it overrides SIM_HOST", Category: "Fabric"},
		&cli.BoolFlag{Name: "sim-sm", Value: simSM, Usage: "with --sim, first run the embedded minimal SM (assign LIDs, program min-hop LFTs)", Category: "Fabric"},
		&cli.IntFlag{Name: "timeout", Aliases: []string{"t"}, Value: DefaultTimeoutMS, Usage: "per-SMP timeout in `MS`", Category: "Fabric"},
		&cli.BoolFlag{Name: "fixed-timeout", Usage: "wait the full timeout on every attempt (otherwise the first attempts wait a timeout estimated from the round trips seen, at least 1 ms, doubling)", Category: "Fabric"},
		&cli.BoolFlag{Name: "lid-reads", Usage: "read a node's attributes after the PortInfo that gives its LID by LID-routed SMPs (needs routes: an SM ran)", Category: "Fabric"},
		&cli.IntFlag{Name: "retries", Value: DefaultRetries, Usage: "retries after a timeout (`N`)", Category: "Fabric"},
		&cli.IntFlag{Name: "max-nodes", Value: discover.DefaultMaxNodes, Usage: "stop discovery with an error beyond `N` nodes", Category: "Fabric"},
		&cli.BoolFlag{Name: "strict", Usage: "exit 6 when the fabric answered inconsistently (duplicate GUIDs, overlapping LIDs, contradictions); without it they are warnings", Category: "Fabric"},
		&cli.IntFlag{Name: "outstanding-smps", Aliases: []string{"o", "max-smps", "outstanding_smps"}, Value: DefaultOutstanding, Usage: "most SMPs on the wire at once (`N`); the window adapts below it", Category: "Fabric"},
		&cli.StringFlag{Name: "m_key", Aliases: []string{"y"}, Usage: "place M_Key `KEY` in every SMP (default 0, or m_key of the config file)", Category: "Fabric"},
		&cli.StringFlag{Name: "config", Aliases: []string{"z"}, Usage: "read infiniband-diags config `FILE` (CA, Port, timeout, MLX_EPI, m_key)", DefaultText: DefaultConfigPath + " when present", Category: "Fabric"},
		&cli.BoolFlag{Name: "errors", Aliases: []string{"e"}, Usage: "print every failed SMP (not a summary)", Category: "Messages"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "say what the tool attached to, and list every failed SMP", Category: "Messages"},
		&cli.BoolFlag{Name: "debug", Aliases: []string{"d"}, Usage: "as -v -e (there is no libibumad debug output to raise)", Category: "Messages"},
	}
}

// HiddenFlags returns the shared flags hidden from the help, for an app
// whose subcommands take them: the app accepts them too, so a command
// line that gives them but no command is told that a command is missing.
func HiddenFlags(simSM bool) []cli.Flag {
	flags := Flags(simSM)
	for _, f := range flags {
		switch f := f.(type) {
		case *cli.StringFlag:
			f.Hidden = true
		case *cli.IntFlag:
			f.Hidden = true
		case *cli.BoolFlag:
			f.Hidden = true
		}
	}
	return flags
}

// Settings are the shared flags' values, checked.
type Settings struct {
	CA          string
	Port        int
	IBSim       bool
	IBSimSock   string
	Sim         string
	SimHost     string
	Timeout     time.Duration
	Retries     int
	Outstanding int
	// SimSM runs the embedded simulator's minimal SM (LIDs, LFTs) first.
	SimSM bool
	// FixedTimeout makes every SMP attempt wait the full Timeout.
	FixedTimeout bool
	// LIDReads reads nodes' further attributes LID-routed (see
	// discover.Config.LIDReads).
	LIDReads bool
	// MaxNodes stops discovery beyond that many nodes.
	MaxNodes int
	// Strict makes inconsistencies an exit status (exitcode.Inconsistent)
	// instead of warnings.
	Strict bool
	// MKey is placed in every SMP (-y/--m_key, or m_key of the config).
	MKey uint64
	// NoMlnxEPI: the config file says MLX_EPI=false.
	NoMlnxEPI bool
	// Verbose is how many times -v was given (-d counts as one more).
	Verbose int
	// ShowErrors (-e, -d) prints every failed SMP instead of a summary.
	ShowErrors bool
	// Debug is how many times -d was given.
	Debug int
	// AllowSet opens the fabric for Set methods too (only for a flag that
	// explicitly asks to change something, e.g. clearing counters).
	AllowSet bool
	// Warn, if set, gets each warning Open has (one line, no newline),
	// e.g. the embedded SM running out of LIDs. FromContext sets it to
	// print "<tool>: warning: <msg>" on the app's ErrWriter.
	Warn func(msg string)
}

// Config returns the discovery configuration the flags ask for (whole
// fabric, from the local port).
func (s Settings) Config() discover.Config {
	c := discover.Config{
		Outstanding:  s.Outstanding,
		Timeout:      s.Timeout,
		Retries:      s.Retries,
		FixedTimeout: s.FixedTimeout,
		LIDReads:     s.LIDReads,
		MaxNodes:     s.MaxNodes,
		MKey:         s.MKey,
		NoMlnxEPI:    s.NoMlnxEPI,
	}
	if s.Retries == 0 {
		c.Retries = -1 // Config's zero means the default
	}
	return c
}

// Querier returns an SMP querier over tr with the flags' timeout and
// retries, for reads after discovery.
func (s Settings) Querier(tr transport.Transport) *discover.Querier {
	return &discover.Querier{Transport: tr, Timeout: s.Timeout, Retries: s.Retries, FixedTimeout: s.FixedTimeout, MKey: s.MKey,
		Window: discover.WindowFor(tr, s.Outstanding, false)}
}

// UsageError is bad command-line input: it names the input and the
// problem in one line.
type UsageError struct {
	Input string
	Msg   string
}

func (e *UsageError) Error() string { return e.Input + ": " + e.Msg }

// FromContext reads and checks the shared flags.
func FromContext(c *cli.Context) (Settings, error) {
	s := Settings{
		CA:           c.String("Ca"),
		Port:         c.Int("Port"),
		IBSim:        c.Bool("ibsim") || c.IsSet("ibsim-sockname"),
		IBSimSock:    c.String("ibsim-sockname"),
		Sim:          c.String("sim"),
		SimHost:      c.String("sim-host"),
		Retries:      c.Int("retries"),
		Outstanding:  c.Int("outstanding-smps"),
		SimSM:        c.Bool("sim-sm"),
		FixedTimeout: c.Bool("fixed-timeout"),
		LIDReads:     c.Bool("lid-reads"),
		MaxNodes:     c.Int("max-nodes"),
		Strict:       c.Bool("strict"),
		Debug:        c.Count("debug"),
	}
	s.Verbose = c.Count("verbose") + s.Debug
	s.ShowErrors = c.Bool("errors") || s.Debug > 0
	if app := c.App; app != nil && app.ErrWriter != nil {
		s.Warn = func(msg string) { fmt.Fprintf(app.ErrWriter, "%s: warning: %s\n", app.Name, msg) }
	}
	conf, err := infile.Load(c.Context, "-z/--config", c.String("config"), func() (*DiagConfig, error) {
		return loadDiagConfig(c.String("config"), c.IsSet("config"))
	})
	if err != nil {
		return s, err
	}
	// The config file gives defaults; the command line wins.
	t := c.Int("timeout")
	if conf.Timeout != 0 && !c.IsSet("timeout") {
		t = conf.Timeout
	}
	if conf.MLXEPI != nil {
		s.NoMlnxEPI = !*conf.MLXEPI
	}
	if conf.MKey != nil {
		s.MKey = *conf.MKey
	}
	if c.IsSet("m_key") {
		k, err := strconv.ParseUint(c.String("m_key"), 0, 64)
		if err != nil {
			return s, &UsageError{"-y/--m_key " + c.String("m_key"), "must be a 64-bit number (0x... hex, 0... octal or decimal)"}
		}
		s.MKey = k
	}
	if !s.IBSim && s.Sim == "" {
		// CA and Port select a kernel device: only for that transport
		if conf.CA != "" && !c.IsSet("Ca") {
			s.CA = conf.CA
		}
		if conf.Port != 0 && !c.IsSet("Port") {
			s.Port = conf.Port
		}
	}
	switch {
	case t <= 0 || t > MaxTimeoutMS:
		return s, &UsageError{"-t/--timeout " + strconv.Itoa(t), fmt.Sprintf("must be 1..%d milliseconds", MaxTimeoutMS)}
	case s.Outstanding <= 0 || s.Outstanding > MaxOutstanding:
		return s, &UsageError{"-o/--outstanding-smps " + strconv.Itoa(s.Outstanding), fmt.Sprintf("must be 1..%d", MaxOutstanding)}
	case s.Retries < 0 || s.Retries > MaxRetries:
		return s, &UsageError{"--retries " + strconv.Itoa(s.Retries), fmt.Sprintf("must be 0..%d", MaxRetries)}
	case s.MaxNodes <= 0:
		return s, &UsageError{"--max-nodes " + strconv.Itoa(s.MaxNodes), "must be positive"}
	case s.Port < 0 || s.Port > 254:
		return s, &UsageError{"-P/--Port " + strconv.Itoa(s.Port), "must be 1..254"}
	case s.IBSim && s.Sim != "":
		return s, &UsageError{"--ibsim and --sim", "choose one transport"}
	case (s.IBSim || s.Sim != "") && (s.CA != "" || s.Port != 0):
		return s, &UsageError{"-C/-P", "select a kernel device; they do not apply with --ibsim or --sim"}
	}
	s.Timeout = time.Duration(t) * time.Millisecond
	return s, nil
}

// Fabric is an open transport and a description of where it is attached
// (see fabric.Conn).
type Fabric = fabric.Conn

// ErrNoTransport is returned when no transport flag is given and no
// InfiniBand device exists.
var ErrNoTransport = errors.New("no InfiniBand device found; use --sim SPEC for the embedded simulator or --ibsim for a running ibsim")

// ErrUmadLinuxOnly is Open's answer, off Linux, when neither --sim nor
// --ibsim is given: the kernel umad transport exists on Linux only.
var ErrUmadLinuxOnly = errors.New("kernel InfiniBand devices (umad) are Linux-only; use --sim FILE (a net or topology file), or ibdiscover --load-cache FILE")

// ErrIBSimLinuxOnly: ibsim, and so --ibsim, runs on Linux only.
var ErrIBSimLinuxOnly = errors.New("--ibsim: ibsim and its client run on Linux only; use --sim FILE (the embedded simulator reads the same net files) or --load-cache FILE")

// ConnectSent, when not nil, is given to ibsim.Config.ConnectSent: it is
// called each time a CONNECT request is in ibsim's hands (cliapp.Main
// sets it to a test-hook event).
var ConnectSent func()

// Answered, when not nil, is called once, with Open's context, when the
// opened transport's first exchange is answered; every exchange answered
// meanwhile waits for it to return (cliapp.Main sets it to a test hook
// that holds the run there until the run is cancelled).
var Answered func(ctx context.Context)

// Options are the fabric.Options the settings choose.
func (s Settings) Options() fabric.Options {
	return fabric.Options{
		Sim:           s.Sim,
		SimSM:         s.SimSM,
		IBSim:         s.IBSim,
		IBSimSockName: s.IBSimSock,
		Host:          s.SimHost,
		CA:            s.CA,
		Port:          s.Port,
		Timeout:       s.Timeout,
		MaxNodes:      s.MaxNodes,
		AllowSet:      s.AllowSet,
		Warn:          s.Warn,
		ConnectSent:   ConnectSent,
		SysfsRoot:     os.Getenv("IBDIAG_SYSFS"), // tests
	}
}

// Open opens the transport the settings choose (fabric.Open), read-only
// (Sets refused with transport.ErrReadOnly) unless s.AllowSet. It never
// prints: warnings go to s.Warn and Fabric.Warnings. Its errors name the
// flag or input at fault.
func Open(ctx context.Context, s Settings) (*Fabric, error) {
	open := func() (*Fabric, error) { return fabric.Open(ctx, s.Options()) }
	var f *Fabric
	var err error
	if s.Sim != "" {
		// a FIFO without a writer must not outlast Ctrl-C
		f, err = infile.Load(ctx, "--sim", s.Sim, open)
	} else {
		f, err = open()
	}
	if err != nil {
		return nil, cliError(err, s)
	}
	if Answered != nil {
		f.Transport = &answered{Transport: f.Transport, ctx: ctx, fn: Answered}
	}
	return f, nil
}

// cliError turns an error of fabric.Open into one that names the flag or
// input at fault and says what to do about it.
func cliError(err error, s Settings) error {
	var se *fabric.SimError
	switch {
	case errors.Is(err, fabric.ErrUmadLinuxOnly):
		return ErrUmadLinuxOnly
	case errors.Is(err, fabric.ErrIBSimLinuxOnly):
		return ErrIBSimLinuxOnly
	case errors.Is(err, umad.ErrNoInfiniBand) && !s.IBSim && s.Sim == "" && s.CA == "" && s.Port == 0:
		// Nothing at all: say how to work without hardware. Devices that
		// cannot be used: umad says why, device by device.
		return ErrNoTransport
	case errors.As(err, &se):
		return simError(se, s)
	case s.IBSim:
		return ibsimError(err, s, fabric.IBSimConfig(s.Options()))
	case s.Sim == "":
		return deviceError(err)
	}
	return err
}

// simError names the input behind an embedded-simulator failure.
func simError(se *fabric.SimError, s Settings) error {
	err := se.Err
	if se.Op == "load" {
		hint := ""
		if errors.Is(err, netfile.ErrTooManyNodes) {
			hint = "; --max-nodes raises the limit"
		}
		var pe *netfile.ParseError
		if errors.As(err, &pe) && pe.Line == 0 {
			return &UsageError{Input: "--sim " + pe.File, Msg: pe.Msg + hint}
		}
		// parse errors name file and line, generator errors the spec
		return &UsageError{Input: "--sim", Msg: err.Error() + hint}
	}
	host := "--sim-host " + s.SimHost
	if s.SimHost == "" {
		host = "--sim " + s.Sim + ": the first node"
	}
	return &UsageError{Input: host, Msg: err.Error()}
}

// userError is an error whose message was reworded for the user; it
// unwraps to the original.
type userError struct {
	msg string
	err error
}

func (e *userError) Error() string { return e.msg }
func (e *userError) Unwrap() error { return e.err }

// deviceError is a umad error as the user reads it: without the
// package's "umad: " and, for a -C/-P that names nothing, without saying
// "CA" twice ("CA "mlx5_9" (have mlx5_0): not found: check ...").
func deviceError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "umad: ")
	if errors.Is(err, umad.ErrNotFound) {
		msg = strings.Replace(msg, ": CA or port not found: ", ": not found: ", 1)
	}
	return &userError{msg: msg, err: err}
}

// ibsimError names the input behind an ibsim attach failure and says
// what to do about it.
func ibsimError(err error, s Settings, cfg ibsim.Config) error {
	switch {
	case errors.Is(err, ibsim.ErrUnknownNode):
		input := "SIM_HOST=" + cfg.Host
		if s.SimHost != "" {
			input = "--sim-host " + s.SimHost
		}
		return &UsageError{Input: input, Msg: "node is not in ibsim's fabric (give a node id or a node description of its net file)"}
	case errors.Is(err, ibsim.ErrNoSlot):
		return fmt.Errorf("%w (ibsim's console command Attached lists them; X SLOT frees a leaked one)", err)
	case errors.Is(err, ibsim.ErrNotRunning) && !cfg.Inet():
		return fmt.Errorf("%w, or point --ibsim-sockname (or IBSIM_SOCKNAME) at a running one", err)
	}
	return err
}

// IsGeneratorSpec reports whether a --sim SPEC names a generator
// ("fattree:...") rather than a file.
func IsGeneratorSpec(spec string) bool { return fabric.IsGeneratorSpec(spec) }

// Abort is for a process about to exit at once (a second Ctrl-C): it
// writes DISCONNECT for every ibsim slot the process holds without
// waiting for ibsim, and hands a CONNECT still unanswered to a lingerer.
// Kernel umad agents need nothing: the kernel drops them with the
// descriptor.
func Abort() { ibsim.Abort() }

// answered calls fn once, when its transport's first exchange is
// answered (see Answered).
type answered struct {
	transport.Transport
	ctx  context.Context
	fn   func(context.Context)
	once sync.Once
}

func (a *answered) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	err := a.Transport.Exchange(ctx, dlid, req, resp)
	if err == nil {
		a.once.Do(func() { a.fn(a.ctx) })
	}
	return err
}

// Limits are the wrapped transport's.
func (a *answered) Limits() transport.Limits { return transport.LimitsOf(a.Transport) }

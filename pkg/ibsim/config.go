package ibsim

import (
	"os"
	"time"
)

// Defaults of the connection configuration.
const (
	DefaultSockName   = "sim" // IBSIM_SOCKNAME when unset
	DefaultServerPort = 7070  // IBSIM_SERVER_PORT when unset (ibsim 0.10)
	DefaultTimeout    = time.Second
	// DefaultConnectTimeout bounds the wait for ibsim's answer to CONNECT.
	// It is long on purpose: ibsim answers CONNECT in microseconds when it
	// runs at all, and giving up early only hands the wait to a helper
	// (see the package documentation).
	DefaultConnectTimeout = 10 * time.Second
)

// Config says how to reach ibsim and where to attach. ConfigFromEnv fills
// it the way libumad2sim reads its environment; command-line flags may
// then override single fields.
type Config struct {
	// SockName is the base of the abstract unix socket names
	// (IBSIM_SOCKNAME; default "sim"). Ignored in inet mode.
	SockName string
	// ServerName switches to UDP (inet) mode when non-empty: the ibsim
	// host, a dotted IPv4 address or a resolvable name (IBSIM_SERVER_NAME).
	ServerName string
	// ServerPort is ibsim's control port in inet mode; slot i's data port
	// is ServerPort+1+i (IBSIM_SERVER_PORT; default 7070).
	ServerPort uint16
	// Host is the node to attach to: a net-file node id, else a node
	// description; empty means the first node of the net file (SIM_HOST).
	// At most 31 bytes.
	Host string
	// IsSM attaches as the SM client of the node and sets the IsSM
	// capability bit (SIM_SET_ISSM set to anything).
	IsSM bool
	// Timeout bounds each control request after CONNECT, and each
	// Exchange whose ctx has no deadline. Zero means DefaultTimeout.
	Timeout time.Duration
	// ConnectTimeout bounds the wait for ibsim's answer to CONNECT,
	// independently of Timeout. Zero means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// WaitStart is how long Dial keeps retrying while nothing listens on
	// ibsim's control socket (ibsim still starting). Zero fails at once
	// with ErrNotRunning.
	WaitStart time.Duration
	// ConnectSent, when not nil, is called each time a CONNECT request
	// has been written to ibsim's control socket, before its answer is
	// awaited (a trace hook: from then on ibsim holds our request).
	ConnectSent func()
}

// ConfigFromEnv returns the configuration libumad2sim would use in this
// process's environment. As in libumad2sim, IBSIM_SOCKNAME set to the
// empty string is used as is, and IBSIM_SERVER_PORT is read like C atoi
// into an unsigned short (garbage reads as 0, which Dial rejects).
func ConfigFromEnv() Config {
	return configFromLookup(os.LookupEnv)
}

func configFromLookup(lookup func(string) (string, bool)) Config {
	c := Config{SockName: DefaultSockName, ServerPort: DefaultServerPort}
	if v, ok := lookup("IBSIM_SOCKNAME"); ok {
		c.SockName = v
	}
	if v, ok := lookup("IBSIM_SERVER_NAME"); ok {
		c.ServerName = v
	}
	if v, ok := lookup("IBSIM_SERVER_PORT"); ok {
		c.ServerPort = uint16(atoi(v))
	}
	if v, ok := lookup("SIM_HOST"); ok {
		c.Host = v
	}
	if _, ok := lookup("SIM_SET_ISSM"); ok {
		c.IsSM = true
	}
	return c
}

// Inet reports whether c selects UDP (inet) mode.
func (c *Config) Inet() bool { return c.ServerName != "" }

func (c *Config) connectTimeout() time.Duration {
	if c.ConnectTimeout > 0 {
		return c.ConnectTimeout
	}
	return DefaultConnectTimeout
}

func (c *Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// atoi mimics C atoi: leading white space, an optional sign, then decimal
// digits up to the first other byte; no digits gives 0. The result wraps
// like C's int conversion on overflow only as far as the caller truncates.
func atoi(s string) int64 {
	i := 0
	for i < len(s) && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	var n int64
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		n = n*10 + int64(s[i]-'0')
		if n > 1<<40 {
			n = 1 << 40 // stay finite; the caller truncates anyway
		}
	}
	if neg {
		n = -n
	}
	return n
}

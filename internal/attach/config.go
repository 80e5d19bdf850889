package attach

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultConfigPath is the infiniband-diags configuration file every tool
// reads (ibdiag.conf): a missing one is fine, as in the C tools.
const DefaultConfigPath = "/etc/infiniband-diags/ibdiag.conf"

// maxConfigSize bounds what is read of a configuration file.
const maxConfigSize = 1 << 20

// maxConfigLine bounds one line of a configuration file.
const maxConfigLine = 64 << 10

// DiagConfig are the keys of ibdiag.conf that apply to us; a nil or zero
// field was not in the file.
type DiagConfig struct {
	CA      string  // CA=mlx5_0: the device, as -C
	Port    int     // Port=1: its port, as -P
	Timeout int     // timeout=50: SMP timeout in ms, as -t
	MLXEPI  *bool   // MLX_EPI=false: no Mellanox ExtendedPortInfo
	MKey    *uint64 // m_key=0x...: M_Key in every SMP, as -y
	// SAKey (sa_key) and NDFormat (nd_format) are read and kept, but no
	// tool of ours sends SA queries or uses ibnetdiscover's nd_format.
	SAKey    *uint64
	NDFormat string
}

// ReadDiagConfig reads an ibdiag.conf file: "name=value" lines, blank
// lines and lines starting with "#" ignored, unknown names ignored (as
// the C tools do). A value that does not parse is a *UsageError naming
// the file, line and key.
func ReadDiagConfig(path string) (*DiagConfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseDiagConfig(path, io.LimitReader(f, maxConfigSize))
}

func parseDiagConfig(path string, r io.Reader) (*DiagConfig, error) {
	c := &DiagConfig{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, maxConfigLine)
	line := 1
	for ; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		name, val, ok := strings.Cut(text, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		at := fmt.Sprintf("%s:%d", path, line)
		bad := func(what string) error {
			return &UsageError{Input: at, Msg: fmt.Sprintf("%s %s: %s", name, shown(val), what)}
		}
		if !ok {
			return nil, &UsageError{Input: at, Msg: shown(text) + ": not name=value"}
		}
		switch name {
		case "CA":
			c.CA = val
		case "Port":
			n, err := strconv.ParseUint(val, 0, 8)
			if err != nil || n == 0 || n > 254 {
				return nil, bad("want a port number 1..254")
			}
			c.Port = int(n)
		case "timeout":
			n, err := strconv.ParseUint(val, 0, 32)
			if err != nil || n == 0 || n > MaxTimeoutMS {
				return nil, bad(fmt.Sprintf("want milliseconds 1..%d", MaxTimeoutMS))
			}
			c.Timeout = int(n)
		case "MLX_EPI":
			b := strings.HasPrefix(val, "true") || strings.HasPrefix(val, "TRUE")
			c.MLXEPI = &b
		case "m_key", "sa_key":
			n, err := strconv.ParseUint(val, 0, 64)
			if err != nil {
				return nil, bad("want a 64-bit number")
			}
			if name == "m_key" {
				c.MKey = &n
			} else {
				c.SAKey = &n
			}
		case "nd_format":
			c.NDFormat = val
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &UsageError{Input: fmt.Sprintf("%s:%d", path, line),
				Msg: fmt.Sprintf("line longer than %d bytes, the most a -z/--config file's line may have", maxConfigLine)}
		}
		return nil, &UsageError{Input: path, Msg: err.Error()}
	}
	return c, nil
}

// loadDiagConfig reads the file -z/--config names (which must exist), or
// else the default file if it exists.
func loadDiagConfig(path string, explicit bool) (*DiagConfig, error) {
	if !explicit {
		path = DefaultConfigPath
		if p := os.Getenv("IBDIAG_CONFIG"); p != "" {
			path = p // tests
		}
	}
	c, err := ReadDiagConfig(path)
	if err == nil {
		return c, nil
	}
	if !explicit && errors.Is(err, fs.ErrNotExist) {
		return &DiagConfig{}, nil
	}
	input := path
	if explicit {
		input = "-z/--config " + path
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, &UsageError{Input: input, Msg: pe.Err.Error()}
	}
	return nil, err // a *UsageError naming the file and line
}

// shown is s for a message: quoted (control characters escaped) and, past
// maxShown bytes, cut at a character boundary with its length said.
func shown(s string) string {
	if len(s) <= maxShown {
		return strconv.Quote(s)
	}
	cut := maxShown
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// maxShown bounds what a message shows of an input line.
const maxShown = 80

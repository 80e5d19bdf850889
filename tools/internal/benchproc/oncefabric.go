//go:build linux

package benchproc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// Shim is ibsim's LD_PRELOAD library through which the C tools reach it.
const Shim = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"

// OnceFabric is a generated fabric (WriteFabric) served by a private
// ibsim, its LIDs and forwarding tables set by one `opensm --once`, with
// an empty threshold file beside it.
type OnceFabric struct {
	Dir             string // working directory, removed by Stop
	Nodes, Switches int
	Host            string        // the node the tools attach at
	Env             []string      // IBSIM_SOCKNAME and SIM_HOST for the tools
	Thresholds      string        // an empty threshold file
	OpenSM          time.Duration // opensm --once's wall time
	ibsim           *IBSim
}

// StartOnceFabric writes spec's fabric into a new directory named after
// name, serves it by ibsim and runs `opensm --once` on it.
func StartOnceFabric(spec, name string) (f *OnceFabric, err error) {
	dir, err := os.MkdirTemp("", name)
	if err != nil {
		return nil, err
	}
	f = &OnceFabric{Dir: dir}
	defer func() {
		if err != nil {
			f.Stop()
		}
	}()
	net := filepath.Join(dir, "fabric.net")
	var ports int
	if f.Nodes, f.Switches, ports, f.Host, err = WriteFabric(spec, net); err != nil {
		return nil, err
	}
	if f.ibsim, err = StartIBSim(dir, fmt.Sprintf("%s%d", name, os.Getpid()), net, "-s", "-n",
		"-N", strconv.Itoa(f.Nodes+16), "-S", strconv.Itoa(f.Switches+16), "-P", strconv.Itoa(ports+64)); err != nil {
		return nil, err
	}
	f.Env = []string{"IBSIM_SOCKNAME=" + f.ibsim.Sock, "SIM_HOST=" + f.Host}
	osm := exec.Command("opensm", "--once", "-F", "/dev/null", "-f", filepath.Join(dir, "opensm.log"), "--dump_files_dir", dir)
	osm.Env = append(append(os.Environ(), "LD_PRELOAD="+Shim), append(f.Env, "OSM_TMP_DIR="+dir, "OSM_CACHE_DIR="+dir)...)
	osm.Dir = dir
	start := time.Now()
	if b, err := osm.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("opensm --once: %v\n%s", err, b)
	}
	f.OpenSM = time.Since(start)
	f.Thresholds = filepath.Join(dir, "thresholds")
	if err := os.WriteFile(f.Thresholds, nil, 0o644); err != nil {
		return nil, err
	}
	return f, nil
}

// Stop stops ibsim and removes the directory.
func (f *OnceFabric) Stop() {
	if f.ibsim != nil {
		f.ibsim.Stop()
	}
	os.RemoveAll(f.Dir)
}

// Package exporter turns one collection of a fabric (discovery, every
// port's PerfMgt counters and the health report, gathered together) into
// Prometheus metrics, named as treydock/infiniband_exporter names them
// where the two overlap (docs/metrics.md), in the text exposition format
// (written by hand: docs/performance.md says why not with client_golang).
package exporter

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/health"
	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/pma"
	"github.com/ibfabric/ibdiag/pkg/portcounters"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Collection is one sweep of the fabric: what discovery found, the
// counters read from every port on its own, and the health report.
type Collection struct {
	// At is when the sweep started, Duration how long it took.
	At       time.Time
	Duration time.Duration
	Result   *discover.Result
	// Counters may be nil (not read); CountersErr is why. Collect keeps
	// in it the node reports, the failures and the samples beyond a
	// threshold (portcounters.Config.OverOnly); every port's values are
	// in PortCounters. A Counters that kept every sample is used as
	// given.
	Counters    *portcounters.Report
	CountersErr error
	// Health may be nil (the checks did not run).
	Health *health.Report
	// Name is a node's name for the labels (node name map or
	// NodeDescription); nil means the NodeDescription.
	Name func(*model.Node) string
	// MaxOpVLs is OpenSM's max_op_vls for the link checks (0: default).
	MaxOpVLs uint8

	// ports are every port's counters as Collect read them (nil: take
	// them from Counters)
	ports *portStore
}

// Partial reports whether part of the collection is missing: discovery
// missed part of the fabric, a counter query failed, or a check could not
// run everywhere.
func (c *Collection) Partial() bool {
	if c.Result == nil || c.Result.Partial() || c.CountersErr != nil {
		return true
	}
	if c.Counters != nil && len(c.Counters.Failures) > 0 {
		return true
	}
	return c.Health != nil && c.Health.Partial
}

// Errors counts the collection's failed queries (SMPs and PerfMgt MADs)
// plus one for a counter read that stopped.
func (c *Collection) Errors() int {
	n := 0
	if c.Result != nil {
		n += len(c.Result.Errors)
	}
	if c.Counters != nil {
		n += len(c.Counters.Failures)
	}
	if c.CountersErr != nil {
		n++
	}
	return n
}

// ContentType is the text exposition format's media type.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Exporter serves the last complete collection. Set and Failed are cheap
// (a sweep never holds its lock while it runs), so a scrape never waits
// for a sweep and never starts one.
type Exporter struct {
	mu sync.RWMutex
	// at is when the served collection started
	at time.Time
	// gz is the served collection's metrics in the text format, gzipped
	// once by Set (a twenty-fifth of the text): a scrape copies it; nil
	// before the first collection
	gz       []byte
	stale    bool
	failures int
	now      func() time.Time
}

// New returns an Exporter with no result yet.
func New() *Exporter { return &Exporter{now: time.Now} }

// SetClock replaces the clock the result's age is measured with (tests).
func (e *Exporter) SetClock(now func() time.Time) {
	e.mu.Lock()
	e.now = now
	e.mu.Unlock()
}

// Set makes c the result served, fresh. It encodes c's metrics once
// (gzipped), so that a scrape only copies them; c itself is not kept.
func (e *Exporter) Set(c *Collection) error {
	// room for about the last result's size, so that the buffer is not
	// grown by doubling (and copied) while the collection is still held
	e.mu.RLock()
	last := len(e.gz)
	e.mu.RUnlock()
	var b bytes.Buffer
	b.Grow(last + last/8 + 4096)
	zw, err := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	if err != nil {
		return err
	}
	if err := Write(zw, c); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	gz := b.Bytes()
	if cap(gz)-len(gz) > len(gz)/8+4096 {
		gz = bytes.Clone(gz) // served until the next sweep: not with a lot of room unused
	}
	e.mu.Lock()
	e.at, e.gz, e.stale = c.At, gz, false
	e.mu.Unlock()
	return nil
}

// Failed records a sweep that could not reach the fabric: the last result
// stays served, marked stale.
func (e *Exporter) Failed() {
	e.mu.Lock()
	e.stale = true
	e.failures++
	e.mu.Unlock()
}

// Last returns when the served collection started (ok false before the
// first) and whether it is stale.
func (e *Exporter) Last() (at time.Time, ok, stale bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.at, e.gz != nil, e.stale
}

// writeOwn writes the exporter's own metrics: sweep failures, up, stale,
// the result's age.
func (e *Exporter) writeOwn(w io.Writer) error {
	e.mu.RLock()
	at, served, stale, failures, now := e.at, e.gz != nil, e.stale, e.failures, e.now
	e.mu.RUnlock()
	t := newText(w)
	t.single(famSweepFailures, float64(failures))
	if !served {
		t.single(famUp, 0)
		return t.flush()
	}
	t.single(famUp, 1)
	t.single(famStale, b2f(stale))
	t.single(famAge, now().Sub(at).Seconds())
	t.single(famLastTime, float64(at.UnixNano())/1e9)
	return t.flush()
}

// WriteText writes e's metrics in the text exposition format (the
// node_exporter textfile collector's, and what /metrics serves): the
// exporter's own, then the served result's as Set encoded them.
func WriteText(w io.Writer, e *Exporter) error {
	if err := e.writeOwn(w); err != nil {
		return err
	}
	e.mu.RLock()
	gz := e.gz
	e.mu.RUnlock()
	if gz == nil {
		return nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return err
	}
	_, err = io.Copy(w, zr)
	return err
}

// WriteCollection writes what WriteText would after Set(c), without
// keeping the text: the textfile's one sweep.
func WriteCollection(w io.Writer, c *Collection, now time.Time) error {
	e := &Exporter{at: c.At, gz: []byte{}, now: func() time.Time { return now }}
	if err := e.writeOwn(w); err != nil {
		return err
	}
	return Write(w, c)
}

// Handler serves e's metrics over HTTP: a scrape copies the text Set
// encoded, it never gathers the fabric's metrics again. A client that
// accepts gzip (Prometheus does) gets the stored gzip stream after a
// gzip member of the exporter's own metrics; any other gets WriteText,
// streamed.
func Handler(e *Exporter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ContentType)
		w.Header().Add("Vary", "Accept-Encoding")
		if !acceptsGzip(r.Header.Get("Accept-Encoding")) {
			// streamed: the text is twenty times the gzip stream
			WriteText(w, e)
			return
		}
		var own bytes.Buffer
		if err := e.writeOwn(&own); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		// a few hundred bytes: stored, not compressed (a compress/flate
		// writer allocates about 1 MB)
		b := appendGzipStored(nil, own.Bytes())
		e.mu.RLock()
		gz := e.gz
		e.mu.RUnlock()
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)+len(gz)))
		w.Write(b)
		w.Write(gz)
	})
}

// appendGzipStored appends p to b as one gzip member (RFC 1952) of
// stored deflate blocks (RFC 1951, BTYPE 00): what gzip.Writer at
// gzip.NoCompression writes, without its compressor.
func appendGzipStored(b, p []byte) []byte {
	// magic, deflate, no flags, no time, no extra flags, OS unknown (as
	// gzip.Writer writes them)
	b = append(b, 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff)
	sum, size := crc32.ChecksumIEEE(p), uint32(len(p))
	for first := true; first || len(p) > 0; first = false {
		n := min(len(p), 0xffff)
		final := byte(0)
		if n == len(p) {
			final = 1
		}
		b = append(b, final, byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
		b = append(b, p[:n]...)
		p = p[n:]
	}
	b = binary.LittleEndian.AppendUint32(b, sum)
	return binary.LittleEndian.AppendUint32(b, size)
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip.
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(name) != "gzip" {
			continue
		}
		params = strings.ReplaceAll(params, " ", "")
		return params != "q=0" && params != "q=0.0" && params != "q=0.00" && params != "q=0.000"
	}
	return false
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// kind is the metric family prefix of a node type: treydock's "switch"
// and "hca", and "router".
func kind(n *model.Node) string {
	switch n.Type() {
	case smp.NodeSwitch:
		return "switch"
	case smp.NodeRouter:
		return "router"
	}
	return "hca"
}

// uplinkType is ibnetdiscover's type token, as treydock's uplink_type.
func uplinkType(n *model.Node) string {
	switch n.Type() {
	case smp.NodeSwitch:
		return "SW"
	case smp.NodeRouter:
		return "RT"
	}
	return "CA"
}

func hexGUID(g uint64) string { return fmt.Sprintf("0x%016x", g) }

// counterNames are the metric names (after infiniband_<kind>_port_) of
// pma.ErrorNames, treydock's.
var counterNames = [pma.NumErrors]string{
	"symbol_error_total", "link_error_recovery_total", "link_downed_total",
	"receive_errors_total", "receive_remote_physical_errors_total", "receive_switch_relay_errors_total",
	"transmit_discards_total", "transmit_constraint_errors_total", "receive_constraint_errors_total",
	"local_link_integrity_errors_total", "excessive_buffer_overrun_errors_total", "vl15_dropped_total",
	"transmit_wait_total",
}

func firstPort(n *model.Node) *model.PhysPort {
	for _, p := range n.Ports {
		if p != nil && p.HasInfo {
			return p
		}
	}
	return nil
}

// lanes is a LinkWidthActive code's lane count.
func lanes(w uint8) int {
	switch w {
	case smp.Width1x:
		return 1
	case smp.Width2x:
		return 2
	case smp.Width4x:
		return 4
	case smp.Width8x:
		return 8
	case smp.Width12x:
		return 12
	}
	return 0
}

// laneGbps is a speed token's lane signalling rate.
func laneGbps(tok string) float64 {
	switch tok {
	case "SDR":
		return 2.5
	case "DDR":
		return 5
	case "QDR":
		return 10
	case "FDR10":
		return 10.3125
	case "FDR":
		return 14.0625
	case "EDR":
		return 25.78125
	case "HDR":
		return 53.125
	case "NDR":
		return 106.25
	case "XDR":
		return 212.5
	}
	return 0
}

// Package progress shows discovery progress on stderr: ibnetdiscover's
// -s lines, or on a terminal a one-line bar with nodes found and SMPs/s.
package progress

import (
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ibfabric/ibdiag/internal/termout"
	"github.com/ibfabric/ibdiag/pkg/discover"
	"github.com/ibfabric/ibdiag/pkg/smp"
)

// Reporter receives discovery events.
type Reporter struct {
	w     io.Writer
	lines bool
	tty   bool
	start time.Time
	smps  atomic.Int64
	nodes atomic.Int64

	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}
}

// New returns a reporter writing to w: progress lines when lines is set,
// else a bar when w is a terminal, else nothing.
func New(w io.Writer, lines bool) *Reporter {
	r := &Reporter{w: w, lines: lines, start: time.Now()}
	if !lines && termout.IsTerminal(w) {
		r.tty = true
		r.stop = make(chan struct{})
		r.done = make(chan struct{})
		go r.bar()
	}
	return r
}

// Bar reports whether r draws the bar (the only user of SMP and Node).
func (r *Reporter) Bar() bool { return r.tty }

// Lines reports whether r prints ibnetdiscover's -s lines (the only use
// of Replayed).
func (r *Reporter) Lines() bool { return r.lines }

// SMP counts one SMP sent.
func (r *Reporter) SMP() { r.smps.Add(1) }

// Node takes one NodeInfo answer as discovery goes (it feeds the bar).
func (r *Reporter) Node(p discover.Progress) {
	r.nodes.Store(int64(p.Nodes))
}

// Replayed prints one of ibnetdiscover's -s lines when lines were asked
// for (they come from the replay of ibnetdiscover's discovery, see
// discover.Config.IBNetDiscoverProgress).
func (r *Reporter) Replayed(p discover.Progress) {
	if !r.lines {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.w.Write(Line(p))
}

// Line formats ibnetdiscover's progress line for one NodeInfo answer:
// `DR path slid 0; dlid 0; 0,1 -> new Switch {<guid>} portnum 0 lid 0-0 ""`.
func Line(p discover.Progress) []byte {
	b := make([]byte, 0, 128)
	b = append(b, "DR path slid 0; dlid 0; "...)
	b = p.Path.AppendTo(b)
	if p.New {
		b = append(b, " -> new "...)
	} else {
		b = append(b, " -> known "...)
	}
	b = append(b, smp.NodeTypeText(p.Node.Type())...)
	b = append(b, " {"...)
	b = fmt.Appendf(b, "%016x", p.Node.GUID())
	b = append(b, "} portnum "...)
	b = strconv.AppendUint(b, uint64(p.Port), 10)
	// libibnetdisc prints base-base+2^LMC-1 of the port shell it holds.
	lo := uint32(p.LID)
	hi := lo + 1<<p.LMC - 1
	desc := ""
	if p.HasDesc {
		desc = p.Node.Description()
	}
	b = append(b, " lid "...)
	b = strconv.AppendUint(b, uint64(lo), 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, uint64(hi), 10)
	b = append(b, " \""...)
	b = append(b, desc...)
	b = append(b, "\"\n"...)
	return b
}

func (r *Reporter) bar() {
	defer close(r.done)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			fmt.Fprint(r.w, "\r\033[K")
			return
		case <-t.C:
			el := time.Since(r.start).Seconds()
			smps := r.smps.Load()
			rate := 0.0
			if el > 0 {
				rate = float64(smps) / el
			}
			fmt.Fprintf(r.w, "\r\033[Kdiscovering: %d nodes, %d SMPs, %.0f SMPs/s", r.nodes.Load(), smps, rate)
		}
	}
}

// Done ends the bar.
func (r *Reporter) Done() {
	if r.tty {
		close(r.stop)
		<-r.done
	}
}

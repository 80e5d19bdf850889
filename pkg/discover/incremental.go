package discover

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ibfabric/ibdiag/pkg/model"
	"github.com/ibfabric/ibdiag/pkg/smp"
	"github.com/ibfabric/ibdiag/pkg/transport"
)

// ErrUntrusted: an incremental rediscovery (Rediscover) cannot stand for
// a full one; the error says why, and the caller discovers the whole
// fabric again.
var ErrUntrusted = errors.New("incremental rediscovery cannot be trusted")

// Memo keeps the answers of a discovery, node by node, so that a later
// rediscovery (Rediscover) reads again only the nodes a light sweep
// found changed and what is new behind them. A discovery with
// Config.Memo set records into it; its zero value is empty. A Memo is
// for one discovery at a time.
type Memo struct {
	mu sync.Mutex
	// rec holds the answers of the discovery running, by directed route.
	rec map[smp.DRPath]*nodeAnswers
	// fab is the fabric of the last discovery, nodes its answers.
	fab   *model.Fabric
	nodes map[*model.Node]*nodeAnswers
}

type attrMod struct {
	attr uint16
	mod  uint32
}

// nodeAnswers are one node's answers, read along its path; entry is the
// port that path entered it by (NodeInfo's LocalPortNum then).
type nodeAnswers struct {
	entry uint8
	ans   []answer
}

// answer is one attribute's data as answered.
type answer struct {
	key  attrMod
	data [smp.DataSize]byte
}

// get returns the answer to k (nil, false: none).
func (na *nodeAnswers) get(k attrMod) ([]byte, bool) {
	for i := range na.ans {
		if na.ans[i].key == k {
			return na.ans[i].data[:], true
		}
	}
	return nil, false
}

// set keeps b as the answer to k.
func (na *nodeAnswers) set(k attrMod, b []byte) {
	for i := range na.ans {
		if na.ans[i].key == k {
			copy(na.ans[i].data[:], b)
			return
		}
	}
	na.ans = append(na.ans, answer{key: k})
	copy(na.ans[len(na.ans)-1].data[:], b)
}

// Fabric is the fabric of the last discovery recorded (nil: none).
func (m *Memo) Fabric() *model.Fabric {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fab
}

// start begins a recording.
func (m *Memo) start() {
	m.mu.Lock()
	m.rec = make(map[smp.DRPath]*nodeAnswers)
	m.mu.Unlock()
}

// record keeps the data of a directed-route SubnGet's answer.
func (m *Memo) record(req, resp []byte) {
	var r smp.MAD
	if r.UnmarshalBinary(req) != nil || !r.IsDirectRoute() || r.Method != smp.MethodGet ||
		resp[3] != smp.MethodGetResp || resp[4]&^0x80 != 0 || resp[5] != 0 {
		return
	}
	m.put(r.Path(), attrMod{r.AttrID, r.AttrMod}, resp[smp.DataOffset:smp.DataOffset+smp.DataSize])
}

// put keeps b, the answer to k along path.
func (m *Memo) put(path smp.DRPath, k attrMod, b []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rec == nil {
		return
	}
	na := m.rec[path]
	if na == nil {
		na = &nodeAnswers{}
		m.rec[path] = na
	}
	na.set(k, b)
}

// bind ends a recording: the answers read along each node's path of f
// become the node's.
func (m *Memo) bind(f *model.Fabric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	nodes := make(map[*model.Node]*nodeAnswers, len(f.Nodes))
	for _, n := range f.Nodes {
		na := m.rec[n.Path]
		if na == nil {
			continue
		}
		ni, ok := na.get(attrMod{smp.AttrNodeInfo, 0})
		if !ok {
			continue // its identity was not read along its path
		}
		na.entry = ni[36]
		if cap(na.ans) > len(na.ans)+len(na.ans)/8 {
			na.ans = append([]answer(nil), na.ans...) // (kept until the next discovery: no slack)
		}
		nodes[n] = na
	}
	m.fab, m.nodes, m.rec = f, nodes, nil
}

// recorder records every answer through it into a Memo.
type recorder struct {
	transport.Transport
	m *Memo
}

func (r *recorder) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	err := r.Transport.Exchange(ctx, dlid, req, resp)
	if err == nil {
		r.m.record(req, resp)
	}
	return err
}

func (r *recorder) Limits() transport.Limits { return transport.LimitsOf(r.Transport) }

// server answers, from a Memo, the SubnGets to nodes a light sweep found
// unchanged, reached over links it found unchanged; it sends the others.
type server struct {
	recorder
	old    *Memo
	lr     *LightResult
	served atomic.Int64
}

func (s *server) Exchange(ctx context.Context, dlid uint16, req, resp []byte) error {
	var r smp.MAD
	if r.UnmarshalBinary(req) == nil {
		if b := s.answer(&r); b != nil {
			copy(resp, req[:smp.MADSize])
			resp[3] = smp.MethodGetResp
			resp[4], resp[5] = 0x80, 0 // D bit, status 0
			copy(resp[smp.DataOffset:smp.DataOffset+smp.DataSize], b)
			s.served.Add(1)
			s.m.put(r.Path(), attrMod{r.AttrID, r.AttrMod}, b)
			return nil
		}
	}
	return s.recorder.Exchange(ctx, dlid, req, resp)
}

// answer is the memorised answer to r, or nil when r must be sent.
func (s *server) answer(r *smp.MAD) []byte {
	if !r.IsDirectRoute() || r.Method != smp.MethodGet || r.HopPointer != 0 ||
		r.DrSLID != smp.PermissiveLID || r.DrDLID != smp.PermissiveLID {
		return nil
	}
	f := s.old.fab
	n, entry := f.From, f.FromPort
	path := r.Path()
	for i := 1; i <= int(path.Len()); i++ {
		if n == nil || (i > 1 && !n.IsSwitch()) {
			return nil // DR passes no CA: the SMA would say so
		}
		pp := n.Port(int(path.Port(i)))
		if pp == nil || pp.Remote == nil || s.lr.cut[pp] || s.lr.cut[pp.Remote] {
			return nil // a link not known, or changed: what is there now is read
		}
		n, entry = pp.Remote.Node, pp.Remote.Num
	}
	if n == nil {
		return nil
	}
	na := s.old.nodes[n]
	if na == nil {
		return nil
	}
	if s.lr.dirty[n] {
		// A changed node's PortInfo as the light sweep read it, along a
		// path it found unchanged (so from this node); the rest is read.
		b, ok := s.lr.portInfo[nodePort{n, uint8(r.AttrMod)}]
		if r.AttrID != smp.AttrPortInfo || r.AttrMod > 255 || !ok || !s.uncut(n.Path) {
			return nil
		}
		if b[28] == na.entry && na.entry != entry {
			b = append([]byte(nil), b...)
			b[28] = entry
		}
		return b
	}
	key := attrMod{r.AttrID, r.AttrMod}
	b, ok := na.get(key)
	if r.AttrID == smp.AttrSwitchInfo {
		if fresh, ok2 := s.lr.swInfo[n]; ok2 {
			b, ok = fresh, true
		}
	}
	if !ok {
		return nil
	}
	switch {
	case r.AttrID == smp.AttrNodeInfo && b[36] != entry:
		b = append([]byte(nil), b...)
		b[36] = entry
	case r.AttrID == smp.AttrPortInfo && b[28] == na.entry && na.entry != entry:
		b = append([]byte(nil), b...)
		b[28] = entry
	}
	return b
}

// uncut reports whether the directed route path crosses, in the fabric
// swept, only links the light sweep found unchanged.
func (s *server) uncut(path smp.DRPath) bool {
	n := s.old.fab.From
	for i := 1; i <= int(path.Len()); i++ {
		if n == nil {
			return false
		}
		pp := n.Port(int(path.Port(i)))
		if pp == nil || pp.Remote == nil || s.lr.cut[pp] || s.lr.cut[pp.Remote] {
			return false
		}
		n = pp.Remote.Node
	}
	return true
}

// Rediscovered is what an incremental rediscovery did.
type Rediscovered struct {
	// Served is the number of answers taken from the Memo; Sent the SMPs
	// of the discovery that went to the fabric.
	Served, Sent int64
}

// Rediscover discovers the fabric again after a light sweep lr that saw
// a change over cfg.Memo's fabric, reading only what may have changed:
// the nodes lr found changed (LightResult.Dirty), and through the links
// it found changed or new (LightResult.Cut, and every port a changed
// node has that was not linked) whatever answers there now. Every other
// node's answers, reached over links found unchanged, are taken from the
// Memo, LocalPortNum set for the route taken, a switch's SwitchInfo the
// one lr read; a changed node's PortInfo is the one lr read, where it
// read it along a path of unchanged links. The discovery runs as a full one does (Discover, over
// those answers), so the fabric is the one a full discovery would build
// from the same answers: nodes a changed link cut off are not reached
// again, new ones are read, paths are the full discovery's. The Memo
// then holds the new fabric's answers.
//
// It returns ErrUntrusted (wrapped, with the reason) where the result
// cannot stand for a full discovery, and the caller should run one: the
// Memo holds no discovery, or one that started elsewhere than the local
// port; the light sweep could not read the local port's link, or found
// it changed; the rediscovery is partial (an SMP failed: a full one says
// what is missing) or inconsistent (a GUID seen twice, a LID on two
// ports, contradicting answers: answers of two moments may disagree).
//
// What it cannot see is what the light sweep cannot: a change on a node
// it did not mark changed (see LightSweep) keeps the answer memorised
// until the next full discovery.
func Rediscover(ctx context.Context, tr transport.Transport, cfg Config, lr *LightResult) (*Result, *Rediscovered, error) {
	m := cfg.Memo
	if m == nil || m.Fabric() == nil || m.Fabric() != lr.fabric {
		return nil, nil, fmt.Errorf("%w: no discovery of this fabric to start from", ErrUntrusted)
	}
	if cfg.From.Len() != 0 || cfg.MaxHops > 0 || cfg.StartOnly {
		return nil, nil, fmt.Errorf("%w: the discovery does not start at the local port or is limited", ErrUntrusted)
	}
	if lr.untrusted != "" {
		return nil, nil, fmt.Errorf("%w: %s", ErrUntrusted, lr.untrusted)
	}
	old := &Memo{fab: m.fab, nodes: m.nodes}
	srv := &server{recorder: recorder{Transport: tr, m: m}, old: old, lr: lr}
	cfg.Memo = nil
	cfg.LIDReads = false // answers are kept by directed route; the result is the same
	m.start()
	res, err := Discover(ctx, srv, cfg)
	if err != nil {
		m.bind(model.NewFabric())
		return res, nil, err
	}
	m.bind(res.Fabric)
	rd := &Rediscovered{Served: srv.served.Load(), Sent: res.SMPs - srv.served.Load()}
	switch {
	case res.Interrupted:
		return res, rd, nil
	case res.Partial():
		return res, rd, fmt.Errorf("%w: the rediscovery is partial", ErrUntrusted)
	case res.Inconsistent():
		return res, rd, fmt.Errorf("%w: the rediscovery is inconsistent (%d problems)", ErrUntrusted, len(res.Problems))
	}
	return res, rd, nil
}

package sim

import (
	"fmt"
	"strconv"

	"github.com/ibfabric/ibdiag/pkg/netfile"
)

// Exec runs one ibsim console command: Error, Unlink, ReLink, Link, Clear,
// Guid, Baselid or PerformanceSet, with ibsim's syntax (e.g. `Error "sw1"[3] 50 21`,
// `Unlink "Hca1"[1]`), or one of the fault-injection commands of the
// package doc (Drop, Kill, Revive, Inconsistent, Latency, After, At).
// Other ibsim commands return ErrUnsupported.
func (f *Fabric) Exec(cmd string) error {
	c, err := netfile.ParseCommand(cmd)
	if err != nil {
		return fmt.Errorf("%w: %q", ErrBadCommand, cmd)
	}
	return f.run(c)
}

func (f *Fabric) run(c netfile.Command) error {
	if done, err := f.runFault(c); done {
		return err
	}
	switch c.Verb {
	case "Error":
		if len(c.Args) == 0 {
			return fmt.Errorf("%w: error rate is missing", ErrBadCommand)
		}
		rate, _ := strconv.ParseUint(c.Args[0], 0, 32)
		var attr uint64
		if len(c.Args) > 1 {
			attr, _ = strconv.ParseUint(c.Args[1], 0, 16)
		}
		return f.SetErrorRate(c.Node, c.Port, int(rate), uint16(attr))
	case "Unlink":
		return f.Unlink(c.Node, c.Port)
	case "Clear":
		return f.Clear(c.Node, c.Port)
	case "ReLink":
		return f.ReLink(c.Node, c.Port)
	case "Link":
		return f.Link(c.Node, c.Port, c.Node2, c.Port2)
	case "Guid":
		if len(c.Args) == 0 {
			return nil // ibsim ignores a Guid command without a value
		}
		g, err := strconv.ParseUint(c.Args[0], 0, 64)
		if err != nil {
			return fmt.Errorf("%w: bad GUID %q", ErrBadCommand, c.Args[0])
		}
		if c.Port >= 0 {
			return f.checkPort(c.Node, c.Port, 1) // port GUIDs only matter to ibsim's Dump
		}
		return f.SetNodeGUID(c.Node, g)
	case "PerformanceSet":
		ps, err := c.PerfSet()
		if err != nil {
			return fmt.Errorf("%w: %q: want PerformanceSet \"nodeid\"[port] PortCounters|PortCountersExtended.Field=value", ErrBadCommand, c.Text)
		}
		return f.PerformanceSet(c.Node, c.Port, ps.Attr, ps.Field, ps.Value)
	case "Baselid":
		if len(c.Args) == 0 {
			return fmt.Errorf("%w: missing LID", ErrBadCommand)
		}
		lid, _ := strconv.ParseUint(c.Args[0], 0, 16)
		lmc := -1
		if len(c.Args) > 1 {
			v, _ := strconv.ParseUint(c.Args[1], 0, 8)
			lmc = int(v)
		}
		return f.SetBaseLID(c.Node, c.Port, uint16(lid), lmc)
	}
	return fmt.Errorf("%w: %s", ErrUnsupported, c.Verb)
}

// target resolves a node id and port number (-1 = all). lo is the lowest
// port number allowed on a switch (CAs always start at 1).
func (f *Fabric) target(id string, port, lo int) (int32, error) {
	n, ok := f.ids[id]
	if !ok {
		return -1, fmt.Errorf("%w: %q", ErrNoNode, id)
	}
	if port < 0 {
		return n, nil
	}
	if f.nodes[n].sw < 0 && lo == 0 {
		lo = 1
	}
	if port < lo || port > int(f.nodes[n].nports) {
		return -1, fmt.Errorf("%w: %q[%d]", ErrBadPort, id, port)
	}
	return n, nil
}

func (f *Fabric) checkPort(id string, port, lo int) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	_, err := f.target(id, port, lo)
	return err
}

// nodePorts returns the port index range of node n (switch: 0..N).
func (f *Fabric) nodePorts(n int32) (int32, int32) {
	d := &f.nodes[n]
	cnt := int32(d.nports)
	if d.sw >= 0 {
		cnt++
	}
	return d.base, d.base + cnt
}

// targetPorts is the index range of port of node id, or of all its ports
// when port < 0 (see target for lo).
func (f *Fabric) targetPorts(id string, port, lo int) (int32, int32, error) {
	n, err := f.target(id, port, lo)
	if err != nil {
		return 0, 0, err
	}
	if port >= 0 {
		i := f.portIndex(n, port)
		return i, i + 1, nil
	}
	first, end := f.nodePorts(n)
	return first, end, nil
}

// SetErrorRate makes port (or every port of the node when port < 0; on a
// switch port 0 included) drop packets with probability rate percent, as
// the console's Error command. attr 0 drops every packet entering the port,
// transit included; a non-zero attr drops only SMPs for that attribute
// that end at the port. Rate 0 clears.
func (f *Fabric) SetErrorRate(id string, port, rate int, attr uint16) error {
	if rate < 0 || rate > 100 {
		return fmt.Errorf("%w: error rate must be in [0..100] range (%d)", ErrBadCommand, rate)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	lo, hi, err := f.targetPorts(id, port, 0)
	if err != nil {
		return err
	}
	for i := lo; i < hi; i++ {
		f.ports[i].errRate, f.ports[i].errAttr = uint8(rate), attr
	}
	return nil
}

func (f *Fabric) unlinkPort(i int32) {
	pp := &f.ports[i]
	r := pp.remote
	rp := &f.ports[r]
	f.pcUnlinking(i)
	f.pcUnlinking(r)
	pp.prev, rp.prev = r, i
	pp.remote, rp.remote = -1, -1
	pp.state, rp.state = 1, 1
	pp.phys, rp.phys = 2, 2
	for _, x := range [2]*port{pp, rp} {
		if sw := f.nodes[x.node].sw; sw >= 0 {
			f.sws[sw].portChange = true
		}
	}
}

// Unlink disconnects port (or every linked port of the node when
// port < 0): both ends go Down/Polling and remember their peer for ReLink.
func (f *Fabric) Unlink(id string, port int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.target(id, port, 1)
	if err != nil {
		return err
	}
	if port >= 0 {
		i := f.portIndex(n, port)
		if f.ports[i].remote < 0 {
			return fmt.Errorf("%w: %q[%d]", ErrNotLinked, id, port)
		}
		f.unlinkPort(i)
		return nil
	}
	lo, hi := f.nodePorts(n)
	for i := lo; i < hi; i++ {
		if f.ports[i].remote >= 0 {
			f.unlinkPort(i)
		}
	}
	return nil
}

// Clear unlinks port (or all ports) and resets it: ibsim's Clear command
// (LID, LMC and SM LID 0, PortInfo back to the down defaults; switch port
// 0 back to its SMA defaults).
func (f *Fabric) Clear(id string, port int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	lo, hi, err := f.targetPorts(id, port, 1)
	if err != nil {
		return err
	}
	for i := lo; i < hi; i++ {
		pp := &f.ports[i]
		if pp.remote >= 0 {
			f.unlinkPort(i)
		}
		if f.isSwitch(pp) && pp.num == 0 {
			f.setTemplate(pp, tmplSMA)
			pp.state, pp.phys = 4, 5
		} else {
			f.setDown(pp)
		}
		pp.lid, pp.lmc, pp.smlid = 0, 0, 0
	}
	return nil
}

// ReLink restores the links removed by Unlink on port (or on all ports of
// the node when port < 0); the ends come back Init/LinkUp.
func (f *Fabric) ReLink(id string, port int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.target(id, port, 1)
	if err != nil {
		return err
	}
	relink := func(i int32) error {
		pp := &f.ports[i]
		if pp.prev < 0 {
			return fmt.Errorf("%w: %q[%d]", ErrNoPrevious, id, pp.num)
		}
		r := pp.prev
		if err := f.link(i, r); err != nil {
			return err
		}
		pp.prev, f.ports[r].prev = -1, -1
		return nil
	}
	if port >= 0 {
		return relink(f.portIndex(n, port))
	}
	lo, hi := f.nodePorts(n)
	for i := lo; i < hi; i++ {
		if f.ports[i].prev >= 0 {
			_ = relink(i) // like ibsim: ports that cannot relink are skipped
		}
	}
	return nil
}

// Link connects two free ports (console Link); both go Init/LinkUp.
func (f *Fabric) Link(id string, port int, id2 string, port2 int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if port < 0 || port2 < 0 {
		return fmt.Errorf("%w: Link needs two ports", ErrBadPort)
	}
	a, err := f.target(id, port, 1)
	if err != nil {
		return err
	}
	b, err := f.target(id2, port2, 1)
	if err != nil {
		return err
	}
	ia, ib := f.portIndex(a, port), f.portIndex(b, port2)
	if ia == ib {
		return fmt.Errorf("%w: %q[%d] to itself", ErrBadPort, id, port)
	}
	if err := f.link(ia, ib); err != nil {
		return err
	}
	f.ports[ia].prev, f.ports[ib].prev = -1, -1
	return nil
}

// SetNodeGUID changes a node's GUID (console Guid "id" guid). Port GUIDs
// follow (CA port n = GUID+n); SystemImageGUID does not change. The GUID
// may be another node's: that is how tests make duplicate GUIDs.
func (f *Fabric) SetNodeGUID(id string, guid uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.target(id, -1, 0)
	if err != nil {
		return err
	}
	f.nodes[n].guid = guid
	return nil
}

// SetBaseLID sets a port's LID and, when lmc ≥ 0... as ibsim: when lmc > 0,
// its LMC (console Baselid "id"[p] lid [lmc]).
func (f *Fabric) SetBaseLID(id string, port int, lid uint16, lmc int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if port < 0 {
		return fmt.Errorf("%w: Baselid needs a port", ErrBadPort)
	}
	n, err := f.target(id, port, 0)
	if err != nil {
		return err
	}
	pp := &f.ports[f.portIndex(n, port)]
	pp.lid = lid
	if lmc > 0 {
		pp.lmc = uint8(lmc) & 7
	}
	if sw := f.nodes[n].sw; sw >= 0 {
		f.sws[sw].portChange = true
	} else if pp.remote >= 0 {
		if rsw := f.nodes[f.ports[pp.remote].node].sw; rsw >= 0 {
			f.sws[rsw].portChange = true
		}
	}
	return nil
}

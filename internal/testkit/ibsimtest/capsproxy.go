//go:build unix

package ibsimtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// ibsim's net files give every switch port, every CA port and every
// switch port 0 the same PortInfo template: the two ends of a link always
// have the same MTUCap and VLCap, and a PortInfo Set of NeighborMTU is not
// kept. CapsProxy makes links with mixed capabilities that a live OpenSM
// can decide on: it speaks ibsim's socket protocol to its clients (tools
// under libumad2sim, ibdiag's --ibsim) and relays everything to a real
// ibsim, rewriting MTUCap and VLCap in the PortInfo answers of chosen
// ports and recording every PortInfo Set (what the SM programs). Answers
// then carry the NeighborMTU last set, as a real port would. Only
// directed-route SMPs are rewritten (OpenSM configures ports by directed
// route); ports are identified by the NodeInfo answered on the same
// directed route of the same client.

// PortKey names a physical port: node GUID and port number.
type PortKey struct {
	GUID uint64
	Port uint8
}

// Caps are PortInfo capability codes: MTUCap (1=256 .. 5=4096) and
// VLCap (1=VL0, 2=VL0-1, 3=VL0-3, 4=VL0-7, 5=VL0-14).
type Caps struct{ MTUCap, VLCap uint8 }

// PortSet is what an SM programmed into a port by its last PortInfo Set.
type PortSet struct{ NeighborMTU, OperationalVLs uint8 }

// CapsProxy relays ibsim's protocol with rewritten port capabilities.
type CapsProxy struct {
	// Sim is the proxy as a simulator: its RunTool, RunOpenSM and Env
	// reach ibsim through the proxy.
	Sim *Sim

	up   string // upstream IBSIM_SOCKNAME
	name string
	caps map[PortKey]Caps
	ctl  *net.UnixConn

	mu       sync.Mutex
	sets     map[PortKey]PortSet
	sessions [10]*proxySession
	closed   bool
}

type proxySession struct {
	slot    int
	upSlot  uint32
	upCtl   *net.UnixConn
	upData  *net.UnixConn
	out     *net.UnixConn // our :out<slot>, connected to by the client
	client  *net.UnixAddr // the client's :in<id>
	mu      sync.Mutex
	guids   map[string]uint64 // DR path → node GUID
	local   map[string]uint8  // DR path → NodeInfo LocalPortNum
	isCA    map[string]bool
	stopped chan struct{}
}

func abstract(name string) *net.UnixAddr {
	return &net.UnixAddr{Net: "unixgram", Name: "@" + name + "\x00"}
}

var proxySeq sync.Mutex
var proxyIDs uint32

func nextProxyID() uint32 {
	proxySeq.Lock()
	defer proxySeq.Unlock()
	proxyIDs++
	return uint32(os.Getpid()%(1<<20))<<10 | proxyIDs&0x3ff | 1<<30
}

// StartCapsProxy starts a proxy in front of s that gives the ports in caps
// those capabilities; it stops at the end of the test.
func (s *Sim) StartCapsProxy(t testing.TB, caps map[PortKey]Caps) *CapsProxy {
	t.Helper()
	p := &CapsProxy{up: s.SockName, name: s.SockName + "p", caps: caps, sets: make(map[PortKey]PortSet)}
	ctl, err := net.ListenUnixgram("unixgram", abstract(p.name+":ctl"))
	if err != nil {
		t.Fatalf("caps proxy: %v", err)
	}
	p.ctl = ctl
	p.Sim = &Sim{SockName: p.name, NetFile: s.NetFile, Dir: s.Dir, LogPath: s.LogPath}
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// Sets returns the PortInfo Sets seen so far, by port.
func (p *CapsProxy) Sets() map[PortKey]PortSet {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[PortKey]PortSet, len(p.sets))
	for k, v := range p.sets {
		m[k] = v
	}
	return m
}

func (p *CapsProxy) close() {
	p.mu.Lock()
	p.closed = true
	sessions := p.sessions
	p.mu.Unlock()
	p.ctl.Close()
	for _, ss := range sessions {
		if ss != nil {
			ss.disconnect()
		}
	}
}

const (
	ctlLen     = 80
	ctlMagic   = 0xdeadbeef
	ctlError   = 0
	ctlConnect = 1
	ctlDisconn = 2
	reqLen     = 288
)

func (p *CapsProxy) serve() {
	buf := make([]byte, 512)
	le := binary.LittleEndian
	for {
		n, from, err := p.ctl.ReadFromUnix(buf)
		if err != nil {
			return
		}
		if n < ctlLen || le.Uint32(buf) != ctlMagic {
			continue
		}
		msg := append([]byte(nil), buf[:ctlLen]...)
		reply := p.handleCtl(msg)
		if reply != nil {
			// (Go drops the trailing NUL of abstract names that ibsim's
			// clients bind with)
			to := &net.UnixAddr{Net: "unixgram", Name: strings.TrimSuffix(from.Name, "\x00") + "\x00"}
			p.ctl.WriteToUnix(reply, to)
		}
	}
}

func errReply(msg []byte) []byte {
	binary.LittleEndian.PutUint32(msg[8:], ctlError)
	return msg
}

func (p *CapsProxy) handleCtl(msg []byte) []byte {
	le := binary.LittleEndian
	typ := le.Uint32(msg[8:])
	if typ == ctlConnect {
		return p.connect(msg)
	}
	slot := le.Uint32(msg[4:])
	p.mu.Lock()
	var ss *proxySession
	if slot < 10 {
		ss = p.sessions[slot]
	}
	p.mu.Unlock()
	if ss == nil {
		return errReply(msg)
	}
	le.PutUint32(msg[4:], ss.upSlot)
	reply, err := ss.ctlRoundTrip(msg)
	if err != nil {
		return errReply(msg)
	}
	le.PutUint32(reply[4:], slot)
	if typ == ctlDisconn {
		ss.stop()
		p.mu.Lock()
		p.sessions[slot] = nil
		p.mu.Unlock()
	}
	return reply
}

func (ss *proxySession) ctlRoundTrip(msg []byte) ([]byte, error) {
	ss.upCtl.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := ss.upCtl.Write(msg); err != nil {
		return nil, err
	}
	reply := make([]byte, 512)
	n, err := ss.upCtl.Read(reply)
	if err != nil {
		return nil, err
	}
	if n < ctlLen {
		return nil, errors.New("short ctl reply")
	}
	return reply[:ctlLen], nil
}

func (p *CapsProxy) connect(msg []byte) []byte {
	le := binary.LittleEndian
	clientID := le.Uint32(msg[16:])
	p.mu.Lock()
	slot := -1
	for i, ss := range p.sessions {
		if ss == nil {
			slot = i
			break
		}
	}
	p.mu.Unlock()
	if slot < 0 {
		return errReply(msg)
	}
	uid := nextProxyID()
	ss := &proxySession{slot: slot, client: abstract(fmt.Sprintf("%s:in%d", p.name, clientID)),
		guids: map[string]uint64{}, local: map[string]uint8{}, isCA: map[string]bool{}, stopped: make(chan struct{})}
	var err error
	if ss.upData, err = net.ListenUnixgram("unixgram", abstract(fmt.Sprintf("%s:in%d", p.up, uid))); err != nil {
		return errReply(msg)
	}
	if ss.upCtl, err = net.DialUnix("unixgram", abstract(fmt.Sprintf("%s:ctl%d", p.up, uid)), abstract(p.up+":ctl")); err != nil {
		ss.upData.Close()
		return errReply(msg)
	}
	if ss.out, err = net.ListenUnixgram("unixgram", abstract(fmt.Sprintf("%s:out%d", p.name, slot))); err != nil {
		ss.upData.Close()
		ss.upCtl.Close()
		return errReply(msg)
	}
	up := append([]byte(nil), msg...)
	le.PutUint32(up[16:], uid)
	reply, err := ss.ctlRoundTrip(up)
	if err != nil || le.Uint32(reply[8:]) == ctlError {
		ss.close()
		return errReply(msg)
	}
	ss.upSlot = le.Uint32(reply[16:])
	le.PutUint32(reply[16:], uint32(slot))
	p.mu.Lock()
	p.sessions[slot] = ss
	p.mu.Unlock()
	go p.relay(ss, ss.out, true)
	go p.relay(ss, ss.upData, false)
	return reply
}

// relay copies MAD datagrams: from the client to ibsim (toUp) or back.
func (p *CapsProxy) relay(ss *proxySession, from *net.UnixConn, toUp bool) {
	buf := make([]byte, 1024)
	upOut := abstract(fmt.Sprintf("%s:out%d", p.up, ss.upSlot))
	for {
		n, _, err := from.ReadFromUnix(buf)
		if err != nil {
			return
		}
		if n != reqLen {
			continue
		}
		if toUp {
			p.request(ss, buf[32:reqLen])
			ss.upData.WriteToUnix(buf[:n], upOut)
		} else {
			p.response(ss, buf[32:reqLen])
			ss.out.WriteToUnix(buf[:n], ss.client)
		}
	}
}

// drKey is a DR SMP's initial path (hop count and ports), or "" when mad
// is no directed-route SMP of PortInfo/NodeInfo interest.
func drKey(mad []byte) string {
	if mad[1] != 0x81 {
		return ""
	}
	hops := int(mad[7])
	if hops > 63 {
		return ""
	}
	return string(mad[128 : 128+hops+1][1:]) + string(rune(hops))
}

const (
	attrNodeInfo = 0x0011
	attrPortInfo = 0x0015
)

func (ss *proxySession) port(key string, mod uint32) uint8 {
	port := uint8(mod)
	if port == 0 && ss.isCA[key] {
		port = ss.local[key]
	}
	return port
}

// request records a PortInfo Set (client to ibsim).
func (p *CapsProxy) request(ss *proxySession, mad []byte) {
	key := drKey(mad)
	if key == "" || mad[3] != 0x02 || binary.BigEndian.Uint16(mad[16:]) != attrPortInfo {
		return
	}
	ss.mu.Lock()
	guid, ok := ss.guids[key]
	port := ss.port(key, binary.BigEndian.Uint32(mad[20:]))
	ss.mu.Unlock()
	if !ok {
		return
	}
	data := mad[64:128]
	p.mu.Lock()
	p.sets[PortKey{guid, port}] = PortSet{NeighborMTU: data[36] >> 4, OperationalVLs: data[43] >> 4}
	p.mu.Unlock()
}

// response learns NodeInfo and rewrites PortInfo answers (ibsim to client).
func (p *CapsProxy) response(ss *proxySession, mad []byte) {
	key := drKey(mad)
	if key == "" || mad[3] != 0x81 || binary.BigEndian.Uint16(mad[4:])&0x7fff != 0 {
		return
	}
	data := mad[64:128]
	switch binary.BigEndian.Uint16(mad[16:]) {
	case attrNodeInfo:
		ss.mu.Lock()
		ss.guids[key] = binary.BigEndian.Uint64(data[12:])
		ss.local[key] = data[36]
		ss.isCA[key] = data[2] != 2
		ss.mu.Unlock()
	case attrPortInfo:
		ss.mu.Lock()
		guid, ok := ss.guids[key]
		port := ss.port(key, binary.BigEndian.Uint32(mad[20:]))
		ss.mu.Unlock()
		if !ok {
			return
		}
		k := PortKey{guid, port}
		if c, ok := p.caps[k]; ok {
			data[41] = data[41]&0xf0 | c.MTUCap&0x0f
			data[37] = c.VLCap<<4 | data[37]&0x0f
		}
		p.mu.Lock()
		set, ok := p.sets[k]
		p.mu.Unlock()
		if ok && set.NeighborMTU != 0 {
			data[36] = set.NeighborMTU<<4 | data[36]&0x0f
		}
	}
}

func (ss *proxySession) stop() {
	select {
	case <-ss.stopped:
	default:
		close(ss.stopped)
		ss.close()
	}
}

func (ss *proxySession) close() {
	ss.upData.Close()
	ss.upCtl.Close()
	if ss.out != nil {
		ss.out.Close()
	}
}

// disconnect releases the upstream slot of a client that never said
// goodbye.
func (ss *proxySession) disconnect() {
	select {
	case <-ss.stopped:
		return
	default:
	}
	msg := make([]byte, ctlLen)
	le := binary.LittleEndian
	le.PutUint32(msg, ctlMagic)
	le.PutUint32(msg[4:], ss.upSlot)
	le.PutUint32(msg[8:], ctlDisconn)
	ss.ctlRoundTrip(msg)
	ss.stop()
}

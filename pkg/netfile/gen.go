package netfile

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrSpec is returned (wrapped) by Generate for a bad generator spec.
var ErrSpec = errors.New("bad fabric spec")

// Generate builds a fabric from a generator spec. The only generator is
//
//	fattree:levels=2|3,radix=R[,hosts=H][,links=K][,leaves=L][,pods=P][,caports=C]
//
// radix R (2..254) is the port count of every switch; hosts H is the
// number of hosts per leaf switch (default R/2); links K the number of
// parallel links between a leaf and each switch above it (default 1).
//
// levels=2: leaves L (default R/K) each with H hosts and R-H uplinks, to
// (R-H)/K spines; every spine has L*K ≤ R ports in use.
//
// levels=3: P pods (default R, at most R); each pod has L leaves (default
// R/2/K) and A = (R-H)/K aggregation switches, every leaf linked K times
// to every aggregation switch of its pod; every aggregation switch has
// U = R-L*K uplinks, to U core switches of its core group: core c = a*U+u
// links to aggregation switch a of every pod (core port = pod+1). Hosts =
// P*L*H, e.g. "fattree:levels=3,radix=48,hosts=36,leaves=36" gives 62,208
// hosts.
//
// Nodes are laid out hosts first (so the first host is the default attach
// point), then leaves, then spines or aggregation switches, then cores.
// Ids are "H<n>", "L<n>", "S<n>", "A<n>", "C<n>" numbered from 0 in that
// order, descriptions are empty (ibsim then reports the id), and GUIDs are
// ibsim's defaults for that order: switches 0x200000+i, hosts
// 0x100000+i*(C+1). Leaf ports 1..H go to hosts, then the uplinks.
//
// The spec may end in console commands, each after a ';', which become
// the fabric's Commands as "do" lines would: e.g.
// "fattree:levels=3,radix=16;Latency hop=1us sma=20us vl15=1;Drop 10".
func Generate(spec string) (*Fabric, error) { return GenerateLimit(spec, 0) }

// GenerateLimit is Generate refusing, before building anything, a fabric
// of more than maxNodes nodes (an error wrapping ErrTooManyNodes); 0 sets
// no limit.
func GenerateLimit(spec string, maxNodes int) (*Fabric, error) {
	spec, cmds, _ := strings.Cut(spec, ";")
	f, err := generate(spec, maxNodes)
	if err != nil || cmds == "" {
		return f, err
	}
	for _, text := range strings.Split(cmds, ";") {
		c, err := ParseCommand(text)
		if err != nil {
			return nil, fmt.Errorf("%w %q: command %q: %w", ErrSpec, spec, strings.TrimSpace(text), err)
		}
		c.Pos = Pos{File: spec}
		err = checkTargets(&c, func(id string) (*Node, string, bool) {
			i, ok := f.Lookup(id)
			if !ok {
				return nil, id, false
			}
			return &f.Nodes[i], id, true
		}, func(format string, a ...any) error {
			return fmt.Errorf("%w %q: %s", ErrSpec, spec, fmt.Sprintf(format, a...))
		})
		if err != nil {
			return nil, err
		}
		f.Commands = append(f.Commands, c)
	}
	return f, nil
}

func generate(spec string, maxNodes int) (*Fabric, error) {
	kind, args, ok := strings.Cut(spec, ":")
	if !ok || kind != "fattree" {
		return nil, fmt.Errorf("%w %q: want fattree:key=value,...", ErrSpec, spec)
	}
	v := map[string]int{"levels": 2, "radix": 0, "hosts": -1, "links": 1, "leaves": -1, "pods": -1, "caports": 1}
	for _, kv := range strings.Split(args, ",") {
		if kv == "" {
			continue
		}
		k, val, ok := strings.Cut(kv, "=")
		if _, known := v[k]; !ok || !known {
			return nil, fmt.Errorf("%w %q: unknown parameter %q", ErrSpec, spec, kv)
		}
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w %q: %s is not a count", ErrSpec, spec, kv)
		}
		v[k] = n
	}
	R, K := v["radix"], v["links"]
	bad := func(msg string, a ...any) (*Fabric, error) {
		return nil, fmt.Errorf("%w %q: %s", ErrSpec, spec, fmt.Sprintf(msg, a...))
	}
	if R < 2 || R > 254 {
		return bad("radix must be 2..254")
	}
	if K < 1 || v["caports"] < 1 || v["caports"] > 254 {
		return bad("links and caports must be ≥ 1")
	}
	H := v["hosts"]
	if H < 0 {
		H = R / 2
	}
	if H >= R {
		return bad("hosts per leaf must leave uplinks (hosts < radix)")
	}
	up := (R - H) / K
	if up < 1 {
		return bad("no room for %d links per uplink", K)
	}
	tooMany := func(n int) error {
		if maxNodes > 0 && n > maxNodes {
			return fmt.Errorf("%w: %q has %d nodes, more than the limit of %d", ErrTooManyNodes, spec, n, maxNodes)
		}
		return nil
	}
	b := newBuilder(v["caports"])
	switch v["levels"] {
	case 2:
		L := v["leaves"]
		if L < 0 {
			L = R / K
		}
		if L < 1 || L*K > R {
			return bad("leaves*links must be 1..radix")
		}
		if err := tooMany(L*H + L + up); err != nil {
			return nil, err
		}
		hosts := b.hosts(L * H)
		leaves := b.switches("L", L, R)
		spines := b.switches("S", up, R)
		for l := 0; l < L; l++ {
			for h := 0; h < H; h++ {
				b.link(leaves+int32(l), h+1, hosts+int32(l*H+h), 1)
			}
			for s := 0; s < up; s++ {
				for k := 0; k < K; k++ {
					b.link(leaves+int32(l), H+s*K+k+1, spines+int32(s), l*K+k+1)
				}
			}
		}
	case 3:
		L := v["leaves"]
		if L < 0 {
			L = R / 2 / K
		}
		if L < 1 || L*K >= R {
			return bad("leaves*links per pod must be 1..radix-1")
		}
		P := v["pods"]
		if P < 0 {
			P = R
		}
		if P < 1 || P > R {
			return bad("pods must be 1..radix")
		}
		A, U := up, R-L*K
		if err := tooMany(P*L*H + P*L + P*A + A*U); err != nil {
			return nil, err
		}
		hosts := b.hosts(P * L * H)
		leaves := b.switches("L", P*L, R)
		aggs := b.switches("A", P*A, R)
		cores := b.switches("C", A*U, R)
		for p := 0; p < P; p++ {
			for l := 0; l < L; l++ {
				leaf := leaves + int32(p*L+l)
				for h := 0; h < H; h++ {
					b.link(leaf, h+1, hosts+int32((p*L+l)*H+h), 1)
				}
				for a := 0; a < A; a++ {
					for k := 0; k < K; k++ {
						b.link(leaf, H+a*K+k+1, aggs+int32(p*A+a), l*K+k+1)
					}
				}
			}
			for a := 0; a < A; a++ {
				for u := 0; u < U; u++ {
					b.link(aggs+int32(p*A+a), L*K+u+1, cores+int32(a*U+u), p+1)
				}
			}
		}
	default:
		return bad("levels must be 2 or 3")
	}
	b.f.reindex()
	return b.f, nil
}

type builder struct {
	f       *Fabric
	caports int
	swGUID  uint64
	caGUID  uint64
}

func newBuilder(caports int) *builder {
	return &builder{f: &Fabric{}, caports: caports, swGUID: 0x200000, caGUID: 0x100000}
}

func (b *builder) add(t NodeType, id string, nports int) {
	n := Node{Type: t, ID: id, NumPorts: nports}
	if t == Switch {
		n.GUID = b.swGUID
		b.swGUID++
	} else {
		n.GUID = b.caGUID
		b.caGUID += uint64(nports) + 1
	}
	n.SysImageGUID = n.GUID
	n.Ports = make([]Port, nports+1)
	for i := range n.Ports {
		n.Ports[i] = Port{Remote: -1, WidthEnabled: DefaultWidth, SpeedEnabled: DefaultSpeed}
	}
	b.f.Nodes = append(b.f.Nodes, n)
}

func (b *builder) hosts(n int) int32 {
	first := int32(len(b.f.Nodes))
	b.f.Nodes = growNodes(b.f.Nodes, n)
	for i := 0; i < n; i++ {
		b.add(CA, "H"+strconv.Itoa(i), b.caports)
	}
	return first
}

func (b *builder) switches(prefix string, n, radix int) int32 {
	first := int32(len(b.f.Nodes))
	b.f.Nodes = growNodes(b.f.Nodes, n)
	base := 0
	for i := range b.f.Nodes {
		if strings.HasPrefix(b.f.Nodes[i].ID, prefix) && b.f.Nodes[i].Type == Switch {
			base++
		}
	}
	for i := 0; i < n; i++ {
		b.add(Switch, prefix+strconv.Itoa(base+i), radix)
	}
	return first
}

func growNodes(s []Node, n int) []Node {
	if cap(s)-len(s) < n {
		t := make([]Node, len(s), len(s)+n)
		copy(t, s)
		return t
	}
	return s
}

func (b *builder) link(a int32, pa int, c int32, pc int) {
	b.f.Nodes[a].Ports[pa].Remote = c
	b.f.Nodes[a].Ports[pa].RemotePort = uint8(pc)
	b.f.Nodes[c].Ports[pc].Remote = a
	b.f.Nodes[c].Ports[pc].RemotePort = uint8(pa)
}

package routing

import (
	"fmt"
	"strings"

	"github.com/ibfabric/ibdiag/pkg/model"
)

// Engine is one of OpenSM's unicast routing engines (opensm -R NAME).
type Engine string

// The routing engines OpenSM 3.3.23 ships.
const (
	MinHop    Engine = "minhop"
	UpDn      Engine = "updn"
	DnUp      Engine = "dnup"
	File      Engine = "file"
	FTree     Engine = "ftree"
	LASH      Engine = "lash"
	DOR       Engine = "dor"
	Torus2QoS Engine = "torus-2QoS"
	Nue       Engine = "nue"
	DFSSSP    Engine = "dfsssp"
	SSSP      Engine = "sssp"
)

// Engines lists every engine, in the order of opensm's usage text.
var Engines = []Engine{MinHop, UpDn, DnUp, File, FTree, LASH, DOR, Torus2QoS, Nue, DFSSSP, SSSP}

// ParseEngine finds an engine by name, ignoring case as OpenSM does.
func ParseEngine(name string) (Engine, error) {
	for _, e := range Engines {
		if strings.EqualFold(name, string(e)) {
			return e, nil
		}
	}
	names := make([]string, len(Engines))
	for i, e := range Engines {
		names[i] = string(e)
	}
	return "", fmt.Errorf("unknown routing engine %q (one of %s)", name, strings.Join(names, ", "))
}

// FromTables reports whether the engine's hop matrix is derived from the
// switches' forwarding tables (which must then be read) rather than
// from the topology.
func (e Engine) FromTables() bool { return e == DFSSSP || e == SSSP || e == Nue }

// EngineHops returns the hop tables OpenSM's opensm-lid-matrix.dump holds
// after OpenSM routed f with engine e (default options), and notes, one
// line each, on what the result rests on where SMPs cannot tell it all.
// t holds the forwarding tables for the engines whose matrix is derived
// from them (FromTables); it may be nil for the others.
//
//   - minhop, dor, lash: the min-hop matrix (osm_ucast_mgr_build_lid_
//     matrices); dor and lash route over it without changing it.
//   - file: the min-hop matrix, unless OpenSM loaded a LID matrix file.
//   - ftree: the min-hop matrix; ftree writes its own up/down hop counts
//     for switch LIDs over it, which on fat trees are the same.
//   - torus-2QoS: no rows: torus-2QoS builds no matrix (when it cannot
//     route, OpenSM falls back to min-hop, which SMPs cannot tell).
//   - updn, dnup: their up/down searches (ComputeUpDn, ComputeDnUp),
//     min-hop where they give up.
//   - dfsssp, sssp: the hop counts of the programmed routes at the port
//     each route leaves by (RoutedHops); nue the counts nue records there,
//     from a replay of nue checked against the tables (NueHops).
func EngineHops(f *model.Fabric, e Engine, t *Tables) (*model.HopTables, []string) {
	switch e {
	case UpDn:
		h, ok := ComputeUpDn(f)
		if !ok {
			return h, []string{"updn: no root switch found: OpenSM gives up updn and falls back to min-hop (printed); a root_guid_file, which SMPs cannot read, would change that"}
		}
		return h, []string{"updn: as OpenSM computes it with its default options (roots found from the min-hop tables; no root_guid_file, ids_guid_file or connect_roots, which SMPs cannot read)"}
	case DnUp:
		h, ok := ComputeDnUp(f)
		if !ok {
			return h, []string{"dnup: no switch has a CA or router: OpenSM gives up dnup and falls back to min-hop (printed)"}
		}
		return h, []string{"dnup: as OpenSM computes it with its default options (connect_roots off)"}
	case DFSSSP, SSSP, Nue:
		if t == nil {
			t = NewTables()
		}
		if e == Nue {
			h, replayed := nueHops(f, t)
			if replayed {
				return h, []string{"nue: replayed with OpenSM's defaults nue_max_num_vls 1 and nue_include_switches FALSE, which program the switches' forwarding tables as read; the counts are those nue records, its search's where it backtracked or fell back to its escape paths"}
			}
			return h, []string{"nue: the switches' forwarding tables as read are not the routes OpenSM's nue programs on this fabric with its defaults nue_max_num_vls 1 and nue_include_switches FALSE; derived from them as nue would record them had its search reached no impasse: OpenSM's dump only if they are nue's routes (and nue did not fall back to min-hop)"}
		}
		return RoutedHops(f, t), []string{fmt.Sprintf("%s: derived from the switches' forwarding tables as read: OpenSM's %s records the hop count of each route it programs; equal to its dump only if these are its routes (and %s did not fall back to min-hop)", e, e, e)}
	case File:
		return model.ComputeHops(f), []string{"file: the min-hop matrix, which OpenSM uses unless it was given a LID matrix file (lid_matrix_file), which SMPs cannot read"}
	case FTree:
		return model.ComputeHops(f), []string{"ftree: the min-hop matrix; OpenSM's ftree writes its own up/down hop counts for switch LIDs over it (the same on the fat trees compared), and falls back to min-hop on other fabrics"}
	case Torus2QoS:
		return model.NewHopTables(f), []string{"torus-2QoS: builds no hop matrix, so OpenSM's dump has only the \"Switch:\" lines when torus-2QoS routed the fabric; when it could not (not a torus, no torus-2QoS.conf, QoS off) OpenSM fell back to min-hop (--routing-engine minhop); SMPs cannot tell which happened"}
	}
	return model.ComputeHops(f), nil
}

// CheckHops returns the least hop counts Check compares the routes of
// the forwarding tables t with when they are checked against engine e,
// and notes as EngineHops: e's matrix, except for nue, whose counts are no
// route lengths for switch LIDs nor where its search backtracked or fell
// back to its escape paths: its routes are judged as dfsssp's and
// sssp's, by the hops they program (RoutedHops; nue is not replayed).
func CheckHops(f *model.Fabric, e Engine, t *Tables) (*model.HopTables, []string) {
	if e == Nue {
		if t == nil {
			t = NewTables()
		}
		return RoutedHops(f, t), []string{"nue: routes are compared with the hops they program (as dfsssp's and sssp's): the counts nue records are no route lengths for switch LIDs, nor where its search backtracked or fell back to its escape paths"}
	}
	return EngineHops(f, e, t)
}

// UnroutedRule returns, for the engines that leave some switch-to-LID
// routes out on purpose, whether engine e's rule has no route from switch
// at to dlid, with a sentence naming the rule; nil for the other engines
// (and for updn and dnup when OpenSM would fall back to min-hop).
//   - updn: routes only up*down* paths over the ranks from its roots (found
//     from the min-hop tables): none between two roots, or from a switch to
//     a root it reaches only by going down first.
//   - dnup: the same from the switches with a CA or router (rank 0).
//   - ftree: on a fat tree, up/down routes over the levels from the leaves
//     (dnup's ranks): none from a spine to another spine; on other fabrics
//     ftree falls back to min-hop, which routes everything, so there is no
//     black hole for the rule to explain.
func UnroutedRule(f *model.Fabric, e Engine) (func(at *model.Node, dlid uint16) bool, string) {
	var h *model.HopTables
	var ok bool
	var rule string
	switch e {
	case UpDn:
		h, ok = ComputeUpDn(f)
		rule = "updn routes only up/down paths from its roots, and there is none from that switch"
	case DnUp:
		h, ok = ComputeDnUp(f)
		rule = "dnup routes only down/up paths from the switches with CAs, and there is none from that switch"
	case FTree:
		h, ok = ComputeDnUp(f)
		rule = "ftree routes only up/down paths over the fat tree's levels, and there is none from that switch"
	default:
		return nil, ""
	}
	if !ok {
		return nil, ""
	}
	return func(at *model.Node, dlid uint16) bool {
		return h.Matrix(at) != nil && h.LeastHopsTo(at, dlid) == model.NoPath
	}, rule
}

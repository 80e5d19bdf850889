package routing

import "github.com/ibfabric/ibdiag/pkg/model"

// Reasons a check has nothing to check (see NothingToCheck).
const (
	NoLIDs     = "no LIDs are assigned — is a subnet manager running?"
	NoTables   = "no forwarding tables are programmed (LinearFDBTop is 0 on every switch) — is a subnet manager running?"
	NoSwitches = "the fabric has no switch, so no route goes through a forwarding table"
)

// NothingToCheck says why checks of routes, paths or SM-set link values
// on f would check nothing, "" when there is something to check: no port
// has a LID (no SM has run), or (with switches set) no switch has a
// forwarding table or there is no switch at all. A check that checked
// nothing must not report "clean".
func NothingToCheck(f *model.Fabric, switches bool) string {
	if f.MaxLID() == 0 {
		return NoLIDs
	}
	if !switches {
		return ""
	}
	sws := f.Switches()
	if len(sws) == 0 {
		return NoSwitches
	}
	for _, sw := range sws {
		if !sw.HasSwitchInfo || sw.SwitchInfo.LinearFDBTop != 0 {
			// a switch whose SwitchInfo was not read is partial, not empty
			return ""
		}
	}
	return NoTables
}

// Command ibhops prints the LID hop matrix of an InfiniBand fabric in
// OpenSM's opensm-lid-matrix.dump format, answers least-hop queries
// between ports, traces routes through the switches' forwarding tables
// (ibtracert's format), prints one switch's table (ibroute's format) and
// checks every switch-to-LID route for black holes, loops and detours.
package main

import "github.com/ibfabric/ibdiag/internal/cliapp"

// main leaves signals to cliapp.Main: SIGINT, SIGTERM, SIGHUP and SIGPIPE
// stop the run and release an ibsim slot before the process ends.
func main() { cliapp.Main(run) }

// Command ibavtrack checks the MTU and VL settings of every link as OpenSM
// computes them, prints the address vector (path MTU, static rate, hops)
// of the route between two ports, and watches those address vectors
// change.
package main

import "github.com/ibfabric/ibdiag/internal/cliapp"

// main leaves signals to cliapp.Main: SIGINT, SIGTERM, SIGHUP and SIGPIPE
// stop the run and release an ibsim slot before the process ends.
func main() { cliapp.Main(run) }

// Command ibcheck runs every health check of an InfiniBand fabric on one
// discovery (links, identifiers, MTU and VLs, error counters, routes,
// credit loops, changes against a baseline) and ranks what it finds.
package main

import "github.com/ibfabric/ibdiag/internal/cliapp"

// main leaves signals to cliapp.Main: SIGINT, SIGTERM, SIGHUP and SIGPIPE
// stop the run and release an ibsim slot before the process ends.
func main() { cliapp.Main(run) }

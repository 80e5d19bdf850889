// Command ibdiscover discovers an InfiniBand fabric by directed-route SMPs
// and prints it in ibnetdiscover's formats, or as JSON or DOT.
package main

import "github.com/ibfabric/ibdiag/internal/cliapp"

// main leaves signals to cliapp.Main: SIGINT, SIGTERM, SIGHUP and SIGPIPE
// stop the run and release an ibsim slot before the process ends.
func main() { cliapp.Main(run) }

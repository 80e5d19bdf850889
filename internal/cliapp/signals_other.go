//go:build !unix

package cliapp

import "os"

// raiseAbort ends the process as an abort does.
func raiseAbort() { os.Exit(2) }

// watchReader does nothing where pipes cannot be polled for their reader.
func (p *pipeWriter) watchReader() (stop func()) { return func() {} }

// canTellReaderGone: readerGone cannot tell; every SIGPIPE stops the run.
const canTellReaderGone = false

func readerGone(*os.File) bool { return false }

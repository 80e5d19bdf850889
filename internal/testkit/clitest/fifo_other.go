//go:build !linux

package clitest

import (
	"testing"
	"time"
)

// WaitFIFOOpenBlocked returns at once where a blocked open cannot be
// seen (Linux's /proc/self/task/*/wchan): the tests calling it expect the
// same outcome whether the interruption comes before the open or during
// it.
func WaitFIFOOpenBlocked(testing.TB, time.Duration) {}

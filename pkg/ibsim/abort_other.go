//go:build !linux

package ibsim

// Abort does nothing where there is no ibsim client.
func Abort() {}

package topology

import (
	"strconv"
	"testing"
)

// The hand-written hex formatting agrees with strconv's (smp's
// TestAppendHex16 checks the 16-digit form).
func TestAppendHex(t *testing.T) {
	for _, v := range []uint64{0, 1, 0xf, 0x10, 0xabc, 0x2c90300001234, 1<<63 - 1, 1 << 63, ^uint64(0)} {
		if got, want := string(appendHex([]byte("x"), v)), "x"+strconv.FormatUint(v, 16); got != want {
			t.Errorf("appendHex(%#x) = %q, want %q", v, got, want)
		}
	}
}

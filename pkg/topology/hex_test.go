package topology

import (
	"strconv"
	"testing"
)

// The hand-written hex formatting agrees with strconv's.
func TestAppendHex(t *testing.T) {
	for _, v := range []uint64{0, 1, 0xf, 0x10, 0xabc, 0x2c90300001234, 1<<63 - 1, 1 << 63, ^uint64(0)} {
		if got, want := string(appendHex([]byte("x"), v)), "x"+strconv.FormatUint(v, 16); got != want {
			t.Errorf("appendHex(%#x) = %q, want %q", v, got, want)
		}
		want := strconv.FormatUint(v, 16)
		for len(want) < 16 {
			want = "0" + want
		}
		if got := string(appendHex16(nil, v)); got != want {
			t.Errorf("appendHex16(%#x) = %q, want %q", v, got, want)
		}
	}
}

package suggest

import (
	"reflect"
	"testing"
)

func TestClosest(t *testing.T) {
	descs := []string{"node001 mlx5_0", "node002 mlx5_0", "spine01", "leaf01", "leaf02"}
	tests := []struct {
		word string
		want []string
	}{
		{"node001", []string{"node001 mlx5_0"}},
		{"leaf1", []string{"leaf01"}},
		{"spine", []string{"spine01"}},
		{"nosuch", nil},
		{"hop", []string{"hops"}},
	}
	for _, tt := range tests {
		cands := descs
		if tt.word == "hop" {
			cands = []string{"help", "hops", "from", "full"}
		}
		if got := Closest(tt.word, cands, 1); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Closest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
	if got := DidYouMean([]string{"a", "b", "c"}, func(s string) string { return "-" + s }); got != " (did you mean -a, -b or -c?)" {
		t.Errorf("DidYouMean: %q", got)
	}
}

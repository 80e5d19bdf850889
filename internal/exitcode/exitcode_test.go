package exitcode

import "testing"

func TestStatus(t *testing.T) {
	tests := []struct {
		name string
		o    Outcome
		want int
	}{
		{"clean", Outcome{}, OK},
		{"warnings only", Outcome{Inconsistent: true}, OK},
		{"warnings, strict", Outcome{Inconsistent: true, Strict: true}, Inconsistent},
		{"strict, no warnings", Outcome{Strict: true}, OK},
		{"partial", Outcome{Partial: true}, Partial},
		{"partial and inconsistent, strict", Outcome{Partial: true, Inconsistent: true, Strict: true}, Partial},
		{"nothing checked", Outcome{NothingChecked: true}, NothingChecked},
		{"nothing checked, strict warnings", Outcome{NothingChecked: true, Inconsistent: true, Strict: true}, NothingChecked},
		{"partial, nothing checked", Outcome{Partial: true, NothingChecked: true}, Partial},
		{"problem", Outcome{Problem: true}, Problem},
		{"problem on a partial view", Outcome{Problem: true, Partial: true}, Problem},
		{"interrupted", Outcome{Interrupted: true, Problem: true, Partial: true}, Interrupted},
	}
	for _, tc := range tests {
		if got := tc.o.Status(); got != tc.want {
			t.Errorf("%s: Status() = %d, want %d", tc.name, got, tc.want)
		}
	}
	// The statuses are distinct.
	seen := map[int]bool{}
	for _, c := range []int{OK, Fatal, Usage, Partial, Problem, NothingChecked, Inconsistent, Interrupted} {
		if seen[c] {
			t.Errorf("status %d used twice", c)
		}
		seen[c] = true
	}
}

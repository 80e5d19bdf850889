package umad

import (
	"strings"
	"testing"
)

// TestPermissionHint: the hint gives a group access (0660), and warns
// against 0666, which lets every local user send SMPs.
func TestPermissionHint(t *testing.T) {
	msg := ErrPermission.Error()
	for _, want := range []string{`GROUP="rdma"`, `MODE="0660"`, "every local user"} {
		if !strings.Contains(msg, want) {
			t.Errorf("hint %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, `MODE="0666",`) || strings.Contains(msg, `MODE="0666" (`) {
		t.Errorf("hint still suggests 0666: %q", msg)
	}
}

package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "ibdiscover version devel, commit unknown, go1.26.0 linux/amd64"},
		{"work tree, clean", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "6827d99b2c41f00ddeadbeef0000000000000000"}, {Key: "vcs.modified", Value: "false"},
		}}, "ibdiscover version devel, commit 6827d99b2c41, go1.26.8 linux/amd64"},
		{"pseudo-version, modified", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261130225318-6827d99b2c41+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "6827d99b2c41f00d"}, {Key: "vcs.modified", Value: "true"},
		}}, "ibdiscover version v0.0.0-20261130225318-6827d99b2c41+dirty, commit 6827d99b2c41 (modified), go1.26.8 linux/amd64"},
		{"release", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}}, "ibdiscover version v1.2.0, commit unknown, go1.26.0 linux/amd64"},
	}
	for _, tt := range tests {
		if got := format("ibdiscover", tt.bi, "go1.26.0", "linux/amd64"); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestLine(t *testing.T) {
	got := Line("ibhops")
	if !strings.HasPrefix(got, "ibhops version ") || !strings.Contains(got, ", go1.") || strings.Contains(got, "\n") {
		t.Errorf("Line: %q", got)
	}
}

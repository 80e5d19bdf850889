// Package version says which build of the suite is running: the module
// version, the VCS commit and the Go toolchain, from the build info the
// Go linker embeds.
package version

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Line returns the one-line version of tool, e.g.
//
//	ibdiscover version v1.2.0, commit 6827d99b2c41 (modified), go1.26.8 linux/amd64
//
// A binary built from a work tree without a module version says "devel";
// one built without VCS information says "commit unknown".
func Line(tool string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return format(tool, bi, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH)
}

func format(tool string, bi *debug.BuildInfo, goVersion, platform string) string {
	ver, commit, modified := "devel", "unknown", false
	if bi != nil {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			ver = v
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
				if len(commit) > 12 {
					commit = commit[:12]
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	var b strings.Builder
	b.WriteString(tool + " version " + ver + ", commit " + commit)
	if modified {
		b.WriteString(" (modified)")
	}
	b.WriteString(", " + goVersion + " " + platform)
	return b.String()
}

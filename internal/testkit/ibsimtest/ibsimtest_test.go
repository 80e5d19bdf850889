//go:build linux

package ibsimtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const exampleNet = ExampleNet + "/net.2sw2path4hca"

func TestToolsAndOpenSM(t *testing.T) {
	s := Start(t, exampleNet, WithConsole())

	out, errOut, exit := s.RunTool(t, "", "ibnetdiscover")
	if exit != 0 || !strings.Contains(string(out), `Switch	8 "S-0000000000200000"`) {
		t.Fatalf("ibnetdiscover exit %d\n%s%s", exit, out, errOut)
	}
	if !strings.Contains(string(errOut), `attached as client`) {
		t.Errorf("no shim banner on stderr: %s", errOut)
	}

	// Before the SM sweep the CA port is Init with LID 0.
	out, _, _ = s.RunTool(t, "Hca2", "smpquery", "-D", "portinfo", "0")
	if !strings.Contains(string(out), "LinkState:.......................Initialize") {
		t.Fatalf("before opensm:\n%s", out)
	}

	dump := t.TempDir()
	log := s.RunOpenSM(t, "Hca1", dump)
	if !strings.Contains(string(log), "SUBNET UP") {
		t.Fatalf("opensm log:\n%s", log)
	}
	for _, f := range []string{"opensm-lid-matrix.dump", "opensm-lfts.dump", "opensm-subnet.lst"} {
		if fi, err := os.Stat(filepath.Join(dump, f)); err != nil || fi.Size() == 0 {
			t.Errorf("dump %s: %v", f, err)
		}
	}
	out, _, _ = s.RunTool(t, "Hca2", "smpquery", "-D", "portinfo", "0")
	if !strings.Contains(string(out), "LinkState:.......................Active") ||
		strings.Contains(string(out), "Lid:.............................0\n") {
		t.Fatalf("after opensm:\n%s", out)
	}
	// LID routing works now: ibtracert from Hca2 to LID 1 (the SM's CA).
	out, errOut, exit = s.RunTool(t, "Hca2", "ibtracert", "3", "1")
	if exit != 0 {
		t.Fatalf("ibtracert exit %d\n%s%s", exit, out, errOut)
	}

	if got := s.Console(t, "Attached"); strings.Contains(got, "Client") {
		t.Errorf("tools left clients attached:\n%s", got)
	}
	s.Console(t, `Unlink "Switch1"[1]`)
	out, _, _ = s.RunTool(t, "", "smpquery", "-D", "portinfo", "0", "1")
	if !strings.Contains(string(out), "LinkState:.......................Down") {
		t.Fatalf("after Unlink:\n%s", out)
	}
	if !s.Alive() {
		t.Fatal("ibsim died")
	}
}

func TestHasSocket(t *testing.T) {
	b := []byte("Num       RefCount Protocol Flags    Type St Inode Path\n" +
		"0000000008fce4d0: 00000002 00000000 00000000 0002 01 11501 @exp3453:ctl@\n" +
		"0000000079b81c76: 00000002 00000000 00000000 0002 01 11502 @exp3453:out0@\n")
	if !hasSocket(b, "@exp3453:ctl@") || hasSocket(b, "@exp345:ctl@") || hasSocket(b, "@exp3453:ctl") {
		t.Fatal("hasSocket")
	}
}

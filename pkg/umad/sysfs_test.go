package umad

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ibfabric/ibdiag/pkg/transport"
)

func fixture(t testing.TB, name string) *FS {
	t.Helper()
	f, err := NewFS(filepath.Join("testdata", name, "sys"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestNewFS(t *testing.T) {
	if _, err := NewFS(filepath.Join("testdata", "nope")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing root: %v", err)
	}
	if _, err := NewFS(filepath.Join("testdata", "mkfixtures.sh")); err == nil {
		t.Error("file as root accepted")
	}
	f, err := NewFS("")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but no /sys here: %v", err)
		}
		t.Skipf("no /sys here: %v", err)
	}
	if f.Root() != DefaultRoot {
		t.Errorf("root %q", f.Root())
	}
}

func TestCAs(t *testing.T) {
	cas, err := fixture(t, "active").CAs()
	if err != nil {
		t.Fatal(err)
	}
	want := []CA{{
		Name: "mlx5_0", NodeType: NodeCA, NodeGUID: 0x0c42a1030067a2b0, SysImageGUID: 0x0c42a1030067a2b0,
		NodeDesc: "node1 HCA-1", FWVer: "20.31.1014", HCAType: "MT4123", BoardID: "MT_0000000223",
		Ports: []Port{{
			Number: 1, LID: 0x1b, SMLID: 1, State: StateActive, PhysState: PhysLinkUp,
			Rate: Rate{Mbps: 100000, Width: 4, Speed: "EDR"}, CapMask: 0x2651e84a, LinkLayer: "InfiniBand",
			GID: [16]byte{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x0c, 0x42, 0xa1, 0x03, 0x00, 0x67, 0xa2, 0xb0},
		}},
	}}
	if !reflect.DeepEqual(cas, want) {
		t.Errorf("got  %+v\nwant %+v", cas, want)
	}
	if g := cas[0].Ports[0].PortGUID(); g != 0x0c42a1030067a2b0 {
		t.Errorf("port GUID %#x", g)
	}
	if cas[0].Port(2) != nil || cas[0].Port(1) == nil {
		t.Error("CA.Port lookup")
	}

	cas, err = fixture(t, "twocas").CAs()
	if err != nil {
		t.Fatal(err)
	}
	if len(cas) != 2 || cas[0].Name != "mlx5_0" || cas[1].Name != "mlx5_1" || len(cas[0].Ports) != 2 ||
		cas[0].Ports[0].State != StateInit || cas[1].Ports[0].Rate != (Rate{56000, 4, "FDR"}) {
		t.Errorf("twocas: %+v", cas)
	}
	sw, err := fixture(t, "switch").CA("switchib0")
	if err != nil || sw.NodeType != NodeSwitch || len(sw.Ports) != 1 || sw.Ports[0].Number != 0 || sw.NodeDesc != "MF0;sw1:MSB7700/U1" {
		t.Errorf("switch: %+v %v", sw, err)
	}
	if cas, err := fixture(t, "empty").CAs(); err != nil || len(cas) != 0 {
		t.Errorf("empty: %v %v", cas, err)
	}
	if _, err := fixture(t, "active").CA("mlx9_9"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing CA: %v", err)
	}
}

func TestUmadDevices(t *testing.T) {
	devs, err := fixture(t, "twocas").UmadDevices()
	if err != nil {
		t.Fatal(err)
	}
	want := []UmadDev{
		{0, "mlx5_1", 1, "/dev/infiniband/umad0", "/dev/infiniband/issm0"},
		{1, "mlx5_0", 2, "/dev/infiniband/umad1", "/dev/infiniband/issm1"},
		{2, "mlx5_0", 1, "/dev/infiniband/umad2", "/dev/infiniband/issm2"},
	}
	if !reflect.DeepEqual(devs, want) {
		t.Errorf("got %+v", devs)
	}
	if v, err := fixture(t, "twocas").ABIVersion(); v != 5 || err != nil {
		t.Errorf("abi %d %v", v, err)
	}
	if v, err := fixture(t, "abi4").ABIVersion(); v != 4 || err != nil {
		t.Errorf("abi4 %d %v", v, err)
	}
	if _, err := fixture(t, "noumad").ABIVersion(); !errors.Is(err, ErrNoUmad) {
		t.Errorf("noumad abi: %v", err)
	}
	if devs, err := fixture(t, "noumad").UmadDevices(); err != nil || devs != nil {
		t.Errorf("noumad devs %v %v", devs, err)
	}
}

func TestSelect(t *testing.T) {
	tests := []struct {
		name    string
		tree    string
		ca      string
		port    int
		wantCA  string
		wantP   int
		wantDev string
		errs    []error  // errors.Is targets
		msg     []string // substrings of the message
	}{
		{name: "auto active", tree: "active", wantCA: "mlx5_0", wantP: 1, wantDev: "/dev/infiniband/umad0"},
		{name: "explicit", tree: "active", ca: "mlx5_0", port: 1, wantCA: "mlx5_0", wantP: 1, wantDev: "/dev/infiniband/umad0"},
		{name: "auto switch port 0", tree: "switch", wantCA: "switchib0", wantP: 0, wantDev: "/dev/infiniband/umad0"},
		{name: "switch by name", tree: "switch", ca: "switchib0", wantCA: "switchib0", wantP: 0, wantDev: "/dev/infiniband/umad0"},
		{name: "first active port beats init port", tree: "twocas", wantCA: "mlx5_0", wantP: 2, wantDev: "/dev/infiniband/umad1"},
		{name: "umad by ibdev+port", tree: "twocas", ca: "mlx5_0", port: 1, wantCA: "mlx5_0", wantP: 1, wantDev: "/dev/infiniband/umad2"},
		{name: "second CA", tree: "twocas", ca: "mlx5_1", wantCA: "mlx5_1", wantP: 1, wantDev: "/dev/infiniband/umad0"},
		{name: "port only", tree: "twocas", port: 1, wantCA: "mlx5_1", wantP: 1, wantDev: "/dev/infiniband/umad0"},
		{name: "skip roce CA, take linkup", tree: "mixed", wantCA: "mlx5_1", wantP: 1, wantDev: "/dev/infiniband/umad1"},

		{name: "no device", tree: "empty", errs: []error{ErrNoInfiniBand, transport.ErrNoDevice},
			msg: []string{"no InfiniBand device", "--sim", "--ibsim"}},
		{name: "roce only", tree: "roce", errs: []error{ErrEthernet, transport.ErrNoDevice},
			msg: []string{"mlx5_0", "Ethernet", "RoCE", "no SMPs"}},
		{name: "roce explicit", tree: "mixed", ca: "mlx5_0", port: 1, errs: []error{ErrEthernet}, msg: []string{"mlx5_0"}},
		{name: "down port", tree: "down", wantCA: "mlx4_0", wantP: 1, wantDev: "/dev/infiniband/umad0",
			errs: []error{ErrPortNotActive, transport.ErrNoDevice},
			msg: []string{"umad: no usable InfiniBand port\n",
				"\n  mlx4_0 port 1: port is DOWN (physical Polling): no link; check the cable and the peer port\n",
				"\n  mlx4_0 port 2: port is Disabled (state DOWN)", "-C/--Ca", "--sim", "--ibsim"}},
		{name: "down port explicit", tree: "down", ca: "mlx4_0", port: 1, wantCA: "mlx4_0", wantP: 1, wantDev: "/dev/infiniband/umad0",
			errs: []error{ErrPortNotActive}, msg: []string{"mlx4_0 port 1 is 1: DOWN", "2: Polling", "not Active"}},
		{name: "every reason", tree: "reasons", wantCA: "mlx5_2", wantP: 1,
			errs: []error{ErrNoUmad, ErrEthernet, ErrPortNotActive, ErrNotInfiniBand, transport.ErrNoDevice},
			msg: []string{
				"umad: no usable InfiniBand port\n" +
					"  mlx5_0 port 1: link layer is Ethernet (RoCE): no subnet management, no SMPs\n" +
					"  mlx5_1 port 1: port is DOWN (physical Polling): no link; check the cable and the peer port\n" +
					"  mlx5_1 port 2: no SMI (IsSMDisabled in the capability mask): a GSI-only port\n" +
					"  mlx5_2 port 1: no umad device: load the ib_umad kernel module (modprobe ib_umad)\n" +
					"  siw0: a RNIC device (node type 4), not InfiniBand: no subnet management\n" +
					"  choose a port with -C/--Ca and -P/--Port, or work without hardware"}},
		{name: "disabled port explicit", tree: "down", ca: "mlx4_0", port: 2,
			errs: []error{ErrPortNotActive}, msg: []string{"mlx4_0 port 2 is 1: DOWN", "3: Disabled"}},
		{name: "unknown CA", tree: "twocas", ca: "mlx5_7", errs: []error{ErrNotFound, transport.ErrNoDevice},
			msg: []string{`"mlx5_7"`, "mlx5_0, mlx5_1", "not found"}},
		{name: "unknown port", tree: "active", ca: "mlx5_0", port: 2, errs: []error{ErrNotFound},
			msg: []string{"port 2 on CA mlx5_0"}},
		{name: "unknown port any CA", tree: "twocas", port: 3, errs: []error{ErrNotFound}, msg: []string{"port 3 on any CA"}},
		{name: "switch port 1", tree: "switch", ca: "switchib0", port: 1, errs: []error{ErrNotFound},
			msg: []string{"only has port 0"}},
		{name: "CA given, no devices", tree: "empty", ca: "mlx5_0", errs: []error{ErrNotFound}},
		{name: "abi 4", tree: "abi4", wantCA: "mthca0", wantP: 1, wantDev: "/dev/infiniband/umad0",
			errs: []error{ErrABIVersion, transport.ErrNoDevice}, msg: []string{"umad: no usable InfiniBand port\n  kernel user_mad ABI version 4 is below 5"}},
		{name: "abi 4 explicit", tree: "abi4", ca: "mthca0", port: 1, wantCA: "mthca0", wantP: 1, wantDev: "/dev/infiniband/umad0",
			errs: []error{ErrABIVersion, transport.ErrNoDevice}, msg: []string{"abi_version 4", "below 5"}},
		{name: "no ib_umad", tree: "noumad", wantCA: "mlx5_0", wantP: 1,
			errs: []error{ErrNoUmad, transport.ErrNoDevice}, msg: []string{"infiniband_mad missing", "modprobe ib_umad"}},
		{name: "no ib_umad explicit", tree: "noumad", ca: "mlx5_0", wantCA: "mlx5_0", wantP: 1,
			errs: []error{ErrNoUmad, transport.ErrNoDevice}, msg: []string{"mlx5_0 port 1", "modprobe ib_umad"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, err := Select(fixture(t, tt.tree), tt.ca, tt.port)
			if tt.errs == nil && err != nil {
				t.Fatalf("error: %v", err)
			}
			for _, e := range tt.errs {
				if !errors.Is(err, e) {
					t.Errorf("error %v is not %v", err, e)
				}
			}
			for _, m := range tt.msg {
				if err == nil || !strings.Contains(err.Error(), m) {
					t.Errorf("error %v does not mention %q", err, m)
				}
			}
			if ref.CA != tt.wantCA || ref.Port != tt.wantP || ref.Device != tt.wantDev {
				t.Errorf("ref = %s port %d %q, want %s port %d %q", ref.CA, ref.Port, ref.Device,
					tt.wantCA, tt.wantP, tt.wantDev)
			}
		})
	}
}

func TestSelectRefDetails(t *testing.T) {
	ref, err := Select(fixture(t, "twocas"), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if ref.String() != "mlx5_0 port 2 (/dev/infiniband/umad1)" || ref.Issm != "/dev/infiniband/issm1" ||
		ref.NodeGUID != 0x0c42a10300000010 || ref.Info.LID != 0x2a || ref.NodeType != NodeCA {
		t.Errorf("%s %+v", ref, ref)
	}
}

func TestParseGUID(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0002:c903:00a1:b2c3", 0x0002c90300a1b2c3, true},
		{"ffff:ffff:ffff:ffff", 0xffffffffffffffff, true},
		{"0:0:0:1", 1, true},
		{"0C42:A103:0067:A2B0", 0x0c42a1030067a2b0, true},
		{"0002:c903:00a1", 0, false},
		{"0002:c903:00a1:b2c3:0000", 0, false},
		{"0002:c903:00a1:b2c3:", 0, false},
		{"00002:c903:00a1:b2c3", 0, false},
		{"0002::00a1:b2c3", 0, false},
		{"0x02:c903:00a1:b2c3", 0, false},
		{"+002:c903:00a1:b2c3", 0, false},
		{"0002:c903:00a1:b2cg", 0, false},
		{"0x0002c90300a1b2c3", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		g, err := ParseGUID(tt.in)
		if (err == nil) != tt.ok || g != tt.want || !tt.ok && !errors.Is(err, ErrFormat) {
			t.Errorf("ParseGUID(%q) = %#x, %v", tt.in, g, err)
		}
		if tt.ok && tt.in == strings.ToLower(tt.in) && len(tt.in) == 19 && FormatGUID(g) != tt.in {
			t.Errorf("FormatGUID(%#x) = %s", g, FormatGUID(g))
		}
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want Rate
		ok   bool
	}{
		{"100 Gb/sec (4X EDR)", Rate{100000, 4, "EDR"}, true},
		{"2.5 Gb/sec (1X SDR)", Rate{2500, 1, "SDR"}, true},
		{"10 Gb/sec (4X)", Rate{10000, 4, ""}, true},
		{"56 Gb/sec (4X FDR)", Rate{56000, 4, "FDR"}, true},
		{"40 Gb/sec (4X FDR10)", Rate{40000, 4, "FDR10"}, true},
		{"600 Gb/sec (12X HDR)", Rate{600000, 12, "HDR"}, true},
		{"800 Gb/sec (4X XDR)", Rate{800000, 4, "XDR"}, true},
		{"13.64 Gb/sec (1X FDR)", Rate{13640, 1, "FDR"}, true},
		{"25 Gb/sec", Rate{25000, 0, ""}, true},
		{"100 Gb/sec 4X EDR", Rate{}, false},
		{"100 Gb/sec (X EDR)", Rate{}, false},
		{"100 Gb/sec (4 EDR)", Rate{}, false},
		{"100 Gb/sec (4X EDR", Rate{}, false},
		{"Gb/sec (4X EDR)", Rate{}, false},
		{" Gb/sec (4X EDR)", Rate{}, false},
		{"1.2345 Gb/sec (1X SDR)", Rate{}, false},
		{"-1 Gb/sec (1X SDR)", Rate{}, false},
		{"100 Mb/sec (4X EDR)", Rate{}, false},
		{"", Rate{}, false},
	}
	for _, tt := range tests {
		r, err := parseRate(tt.in)
		if (err == nil) != tt.ok || r != tt.want {
			t.Errorf("parseRate(%q) = %+v, %v", tt.in, r, err)
		}
	}
	for _, s := range []string{"100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)", "10 Gb/sec (4X)", "13.64 Gb/sec (1X FDR)"} {
		r, _ := parseRate(s)
		if r.String() != s {
			t.Errorf("Rate.String() = %q, want %q", r.String(), s)
		}
	}
}

func TestParseEnum(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		name string
		ok   bool
	}{
		{"4: ACTIVE", 4, "ACTIVE", true},
		{"5: LinkUp", 5, "LinkUp", true},
		{"7: Phy Test", 7, "Phy Test", true},
		{"1: CA", 1, "CA", true},
		{"2", 2, "", true},
		{"ACTIVE", 0, "", false},
		{": ACTIVE", 0, "", false},
		{"-1: DOWN", 0, "", false},
		{"1234: X", 0, "", false},
		{"", 0, "", false},
	}
	for _, tt := range tests {
		n, name, err := parseEnum(tt.in)
		if (err == nil) != tt.ok || n != tt.n || name != tt.name {
			t.Errorf("parseEnum(%q) = %d %q %v", tt.in, n, name, err)
		}
	}
	if StateActive.String() != "ACTIVE" || PhysLinkUp.String() != "LinkUp" || PortState(9).String() != "UNKNOWN(9)" ||
		NodeSwitch.String() != "switch" || PhysTest.String() != "Phy Test" {
		t.Error("state names")
	}
}

func FuzzParseGUID(f *testing.F) {
	for _, s := range []string{"0002:c903:00a1:b2c3", "0:0:0:1", "ffff:ffff:ffff:ffff", "0002::00a1:b2c3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGUID(s)
		if err != nil {
			return
		}
		// Whatever parses must round-trip through the canonical form.
		g2, err := ParseGUID(FormatGUID(g))
		if err != nil || g2 != g {
			t.Fatalf("%q -> %#x -> %s -> %#x, %v", s, g, FormatGUID(g), g2, err)
		}
	})
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)", "10 Gb/sec (4X)", "25 Gb/sec", "1.2345 Gb/sec"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseRate(s)
		if err != nil {
			return
		}
		r2, err := parseRate(r.String())
		if err != nil || r2 != r {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, r, r.String(), r2, err)
		}
	})
}

func FuzzParseEnum(f *testing.F) {
	for _, s := range []string{"4: ACTIVE", "5: LinkUp", "2", ": x", "999: Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, _, err := parseEnum(s)
		if err == nil && (n < 0 || n > 999) {
			t.Fatalf("%q -> %d", s, n)
		}
	})
}

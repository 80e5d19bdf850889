//go:build linux

package umad

import (
	"bufio"
	"bytes"
	"github.com/ibfabric/ibdiag/internal/testkit/clitest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const abiHeader = "/usr/include/rdma/ib_user_mad.h"

// abiProgram prints "name value" lines for every size, offset and ioctl
// number the Go code hard-codes.
const abiProgram = `#include <stdio.h>
#include <stddef.h>
#include <rdma/ib_user_mad.h>
#define S(t) printf("sizeof." #t " %zu\n", sizeof(struct t))
#define O(t, f) printf("offsetof." #t "." #f " %zu\n", offsetof(struct t, f))
#define Z(t, f) printf("sizeof." #t "." #f " %zu\n", sizeof(((struct t *)0)->f))
int main(void) {
	S(ib_user_mad_hdr); S(ib_user_mad_hdr_old); S(ib_user_mad_reg_req); S(ib_user_mad_reg_req2);
	O(ib_user_mad_hdr, id); O(ib_user_mad_hdr, status); O(ib_user_mad_hdr, timeout_ms);
	O(ib_user_mad_hdr, retries); O(ib_user_mad_hdr, length); O(ib_user_mad_hdr, qpn);
	O(ib_user_mad_hdr, qkey); O(ib_user_mad_hdr, lid); O(ib_user_mad_hdr, sl);
	O(ib_user_mad_hdr, path_bits); O(ib_user_mad_hdr, grh_present); O(ib_user_mad_hdr, gid_index);
	O(ib_user_mad_hdr, hop_limit); O(ib_user_mad_hdr, traffic_class); O(ib_user_mad_hdr, gid);
	O(ib_user_mad_hdr, flow_label); O(ib_user_mad_hdr, pkey_index); O(ib_user_mad_hdr, reserved);
	O(ib_user_mad_reg_req, id); O(ib_user_mad_reg_req, method_mask); Z(ib_user_mad_reg_req, method_mask);
	O(ib_user_mad_reg_req, qpn); O(ib_user_mad_reg_req, mgmt_class);
	O(ib_user_mad_reg_req, mgmt_class_version); O(ib_user_mad_reg_req, oui);
	O(ib_user_mad_reg_req, rmpp_version);
	O(ib_user_mad_reg_req2, id); O(ib_user_mad_reg_req2, qpn); O(ib_user_mad_reg_req2, mgmt_class);
	O(ib_user_mad_reg_req2, mgmt_class_version); O(ib_user_mad_reg_req2, res);
	O(ib_user_mad_reg_req2, flags); O(ib_user_mad_reg_req2, method_mask);
	O(ib_user_mad_reg_req2, oui); O(ib_user_mad_reg_req2, rmpp_version);
	O(ib_user_mad_reg_req2, reserved);
	printf("ioctl.REGISTER_AGENT %lu\n", (unsigned long)IB_USER_MAD_REGISTER_AGENT);
	printf("ioctl.UNREGISTER_AGENT %lu\n", (unsigned long)IB_USER_MAD_UNREGISTER_AGENT);
	printf("ioctl.ENABLE_PKEY %lu\n", (unsigned long)IB_USER_MAD_ENABLE_PKEY);
	printf("ioctl.REGISTER_AGENT2 %lu\n", (unsigned long)IB_USER_MAD_REGISTER_AGENT2);
	printf("abi %d\n", IB_USER_MAD_ABI_VERSION);
	printf("flag.USER_RMPP %d\n", IB_USER_MAD_USER_RMPP);
	return 0;
}
`

// TestKernelABI compiles a C program against <rdma/ib_user_mad.h> and
// checks every size, offset and ioctl number used by the Go codec. It
// skips when the header or a C compiler is missing, except under CI=true.
func TestKernelABI(t *testing.T) {
	out, cc := runC(t, abiProgram)
	got := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		n, err := strconv.ParseUint(v, 10, 64)
		if !ok || err != nil {
			t.Fatalf("bad line %q", sc.Text())
		}
		got[k] = n
	}

	// Offsets the hand-written codec uses (abi.go).
	want := map[string]uint64{
		"sizeof.ib_user_mad_hdr":     HeaderSize,
		"sizeof.ib_user_mad_hdr_old": OldHeaderSize,
		"sizeof.ib_user_mad_reg_req": RegReqSize, "sizeof.ib_user_mad_reg_req2": RegReq2Size,
		"offsetof.ib_user_mad_hdr.id": 0, "offsetof.ib_user_mad_hdr.status": 4,
		"offsetof.ib_user_mad_hdr.timeout_ms": 8, "offsetof.ib_user_mad_hdr.retries": 12,
		"offsetof.ib_user_mad_hdr.length": 16, "offsetof.ib_user_mad_hdr.qpn": 20,
		"offsetof.ib_user_mad_hdr.qkey": 24, "offsetof.ib_user_mad_hdr.lid": 28,
		"offsetof.ib_user_mad_hdr.sl": 30, "offsetof.ib_user_mad_hdr.path_bits": 31,
		"offsetof.ib_user_mad_hdr.grh_present": 32, "offsetof.ib_user_mad_hdr.gid_index": 33,
		"offsetof.ib_user_mad_hdr.hop_limit": 34, "offsetof.ib_user_mad_hdr.traffic_class": 35,
		"offsetof.ib_user_mad_hdr.gid": 36, "offsetof.ib_user_mad_hdr.flow_label": 52,
		"offsetof.ib_user_mad_hdr.pkey_index": 56, "offsetof.ib_user_mad_hdr.reserved": 58,
		"offsetof.ib_user_mad_reg_req.id": 0, "offsetof.ib_user_mad_reg_req.method_mask": 4,
		"sizeof.ib_user_mad_reg_req.method_mask": 16,
		"offsetof.ib_user_mad_reg_req.qpn":       20, "offsetof.ib_user_mad_reg_req.mgmt_class": 21,
		"offsetof.ib_user_mad_reg_req.mgmt_class_version": 22, "offsetof.ib_user_mad_reg_req.oui": 23,
		"offsetof.ib_user_mad_reg_req.rmpp_version": 26,
		"offsetof.ib_user_mad_reg_req2.id":          0, "offsetof.ib_user_mad_reg_req2.qpn": 4,
		"offsetof.ib_user_mad_reg_req2.mgmt_class": 8, "offsetof.ib_user_mad_reg_req2.mgmt_class_version": 9,
		"offsetof.ib_user_mad_reg_req2.res": 10, "offsetof.ib_user_mad_reg_req2.flags": 12,
		"offsetof.ib_user_mad_reg_req2.method_mask": 16, "offsetof.ib_user_mad_reg_req2.oui": 32,
		"offsetof.ib_user_mad_reg_req2.rmpp_version": 36, "offsetof.ib_user_mad_reg_req2.reserved": 37,
		"ioctl.REGISTER_AGENT": IoctlRegisterAgent, "ioctl.UNREGISTER_AGENT": IoctlUnregisterAgent,
		"ioctl.ENABLE_PKEY": IoctlEnablePKey, "ioctl.REGISTER_AGENT2": IoctlRegisterAgent2,
		"abi": MinABIVersion, "flag.USER_RMPP": UserRMPP,
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: not printed by the C program", k)
			continue
		}
		if g != w {
			t.Errorf("%s = %d in C, %d in Go", k, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("C printed %d values, Go checks %d", len(got), len(want))
	}
	t.Logf("checked %d sizes/offsets/ioctls against %s with %s", len(want), abiHeader, cc)
}

// runC compiles program against the kernel headers and returns what it
// prints, and the compiler used. It skips when the header or a C compiler
// is missing, except under CI=true, where it fails.
func runC(t *testing.T, program string) ([]byte, string) {
	t.Helper()
	ci := os.Getenv("CI") == "true"
	cc, err := exec.LookPath("cc")
	if err != nil {
		if ci {
			t.Fatalf("CI=true but no C compiler: %v", err)
		}
		clitest.Skip(t, "SKIP kernel ABI check: no cc on PATH (%v); install gcc and linux-libc-dev to run it", err)
	}
	if _, err := os.Stat(abiHeader); err != nil {
		if ci {
			t.Fatalf("CI=true but %s is missing: %v (install linux-libc-dev)", abiHeader, err)
		}
		clitest.Skip(t, "SKIP kernel ABI check: %v (install linux-libc-dev)", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "abi.c")
	bin := filepath.Join(dir, "abi")
	if err := os.WriteFile(src, []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-Wall", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return out, cc
}

// abiBytesProgram fills the kernel's structs with the samples of
// abi_test.go (sampleHeader, sampleRegReq, sampleRegReq2) and prints
// their bytes in hex: the __be fields through htonl/htons, as the
// header's types say, everything else in host order.
const abiBytesProgram = `#include <stdio.h>
#include <stddef.h>
#include <string.h>
#include <arpa/inet.h>
#include <rdma/ib_user_mad.h>
static void dump(const char *name, const void *p, size_t n) {
	const unsigned char *b = p;
	printf("%s ", name);
	for (size_t i = 0; i < n; i++) printf("%02x", b[i]);
	printf("\n");
}
int main(void) {
	struct ib_user_mad_hdr h;
	struct ib_user_mad_reg_req r;
	struct ib_user_mad_reg_req2 r2;
	memset(&h, 0, sizeof h); memset(&r, 0, sizeof r); memset(&r2, 0, sizeof r2);
	h.id = 0x01020304; h.status = 0x05060708; h.timeout_ms = 0x090a0b0c;
	h.retries = 0x0d0e0f10; h.length = 0x11121314;
	h.qpn = htonl(0x00abcdef); h.qkey = htonl(0x80010203); h.lid = htons(0x1234);
	h.sl = 0x5a; h.path_bits = 0x6b; h.grh_present = 0x01; h.gid_index = 0x7c;
	h.hop_limit = 0x8d; h.traffic_class = 0x9e;
	for (int i = 0; i < 16; i++) h.gid[i] = 0xf0 + i;
	h.flow_label = htonl(0x000abcde); h.pkey_index = 0x0102;
	dump("hdr", &h, sizeof h);
	r.id = 0x01020304;
	/* method_mask is an array of longs: 64 bits each here, two halves of one on 32-bit */
	unsigned long long m0 = 0x8000000000000021ULL, m1 = 0x0102030405060708ULL;
	memcpy((char *)r.method_mask, &m0, 8); memcpy((char *)r.method_mask + 8, &m1, 8);
	r.qpn = 1; r.mgmt_class = 0x81; r.mgmt_class_version = 0x02;
	r.oui[0] = 0x00; r.oui[1] = 0x14; r.oui[2] = 0x05; r.rmpp_version = 0x01;
	dump("reg_req", &r, sizeof r);
	r2.id = 0x0a0b0c0d; r2.qpn = 0x01020304; r2.mgmt_class = 0x81; r2.mgmt_class_version = 0x03;
	r2.flags = 0x00010001; r2.method_mask[0] = m0; r2.method_mask[1] = m1;
	r2.oui = 0x0002c9; r2.rmpp_version = 0x01;
	dump("reg_req2", &r2, sizeof r2);
	printf("data_offset %zu\n", offsetof(struct ib_user_mad, data));
	return 0;
}
`

// TestKernelABIBytes checks the codec field by field against bytes that
// a C program compiled against <rdma/ib_user_mad.h> put in struct
// ib_user_mad_hdr, ib_user_mad_reg_req and ib_user_mad_reg_req2 (an
// independent source: the test's own codec decodes nothing here), with
// asymmetric values in every field, and checks the recorded vectors of
// TestCodecVectors against the same program.
func TestKernelABIBytes(t *testing.T) {
	out, cc := runC(t, abiBytesProgram)
	got := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		got[k] = v
	}
	if got["data_offset"] != strconv.Itoa(HeaderSize) {
		t.Errorf("struct ib_user_mad: the MAD starts at %s, Go puts it at %d", got["data_offset"], HeaderSize)
	}
	hdr, req, req2 := mustHex(t, got["hdr"]), mustHex(t, got["reg_req"]), mustHex(t, got["reg_req2"])
	if len(hdr) != HeaderSize || len(req) != RegReqSize || len(req2) != RegReq2Size {
		t.Fatalf("C printed %d/%d/%d bytes, want %d/%d/%d", len(hdr), len(req), len(req2), HeaderSize, RegReqSize, RegReq2Size)
	}
	checkSamples(t, "C ("+cc+")", hdr, req, req2)
	if littleEndian() {
		for name, rec := range map[string]string{"hdr": sampleHeaderHex, "reg_req": sampleRegReqHex, "reg_req2": sampleRegReq2Hex} {
			if got[name] != rec {
				t.Errorf("recorded %s vector differs from the C program's:\n got %s\nwant %s", name, rec, got[name])
			}
		}
	}
}

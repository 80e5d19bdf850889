#!/bin/bash
# capture.sh regenerates the SMP test vectors in this directory from a
# running ibsim (Debian ibsim-utils 0.10) and the real infiniband-diags 44.0
# tools under libumad2sim. Each response MAD is taken from libibmad's own
# "rcv buf" dump (smpquery/ibroute -d -d -d): ibsim -v -v -v hex-dumps
# only the requests it receives, not its responses. The tool's printed
# output is stored next to the bytes so the tests can compare field by
# field. MADs differ between runs only in their TIDs and in stack garbage
# that umad2sim leaves in the unused tail of the return path area.
#
# usage: testdata/capture.sh   (run from pkg/smp; needs ibsim, smpquery,
#                               ibroute, opensm, python3)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shim=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
work=$(mktemp -d)
trap 'kill "${simpid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"

# start_sim NETFILE: private socket, hex dumps of every request (-v -v -v).
start_sim() {
	sock=smpcap$$_$RANDOM
	IBSIM_SOCKNAME=$sock ibsim -s -n -v -v -v "$1" >ibsim.log 2>&1 &
	simpid=$!
	for _ in $(seq 50); do
		grep -q "@$sock:ctl@" /proc/net/unix && return 0
		sleep 0.1
	done
	echo "ibsim did not start" >&2
	exit 1
}
stop_sim() { kill "$simpid"; wait "$simpid" 2>/dev/null || true; simpid=; }

# q NAME NETLABEL ATTR MAX TOOL ARGS...: run a tool with -d -d -d and save
# the first MAX received MADs of attribute ATTR as NAME[-k].hex.
q() {
	local name=$1 net=$2 attr=$3 max=$4 tool=$5
	shift 5
	IBSIM_SOCKNAME=$sock LD_PRELOAD=$shim "$tool" -d -d -d "$@" >out.txt 2>err.txt || true
	python3 - "$here" "$name" "$net" "$tool $*" "$attr" "$max" <<'PY'
import sys, re
here, name, net, cmd = sys.argv[1:5]
want, maxn = int(sys.argv[5], 16), int(sys.argv[6])
err = open("err.txt").read().splitlines()
out = open("out.txt").read().splitlines()
mads, cur = [], None
for line in err:
    if line.strip() == "rcv buf":
        cur = []
        continue
    if cur is not None:
        if re.fullmatch(r"([0-9a-f]{4} ){7}[0-9a-f]{4}", line.strip()):
            cur.append(line.strip())
            if len(cur) == 16:
                mads.append(cur); cur = None
        else:
            cur = None
mads = [m for m in mads if int(m[1].split()[0], 16) == want][:maxn]
for i, m in enumerate(mads):
    raw = bytes.fromhex("".join(m).replace(" ", ""))
    attr = int.from_bytes(raw[16:18], "big"); mod = int.from_bytes(raw[20:24], "big")
    fn = name if len(mads) == 1 else "%s-%d" % (name, i)
    with open("%s/%s.hex" % (here, fn), "w") as f:
        f.write("# source: ibsim 0.10 (Debian ibsim-utils 0.10-2), net file %s,\n" % net)
        f.write("#   response MAD received by `%s` (infiniband-diags 44.0 under libumad2sim),\n" % cmd)
        f.write("#   attribute 0x%04x modifier 0x%08x, MAD %d of %d, from libibmad's \"rcv buf\" dump\n" % (attr, mod, i + 1, len(mads)))
        for o in out:
            f.write("> %s\n" % o)
        for l in m:
            f.write(l + "\n")
PY
}

two=/usr/share/doc/ibsim-utils/net-examples/net.2sw2path4hca
start_sim "$two"
n=net.2sw2path4hca
q 2sw-nodeinfo-0     $n 0x0011 1 smpquery -D nodeinfo 0
q 2sw-nodeinfo-0,1   $n 0x0011 1 smpquery -D nodeinfo 0,1
q 2sw-nodeinfo-0,3   $n 0x0011 1 smpquery -D nodeinfo 0,3
q 2sw-nodedesc-0,1   $n 0x0010 1 smpquery -D nodedesc 0,1
q 2sw-switchinfo-0   $n 0x0012 1 smpquery -D switchinfo 0
q 2sw-portinfo-0-0   $n 0x0015 1 smpquery -D portinfo 0 0
q 2sw-portinfo-0-1   $n 0x0015 1 smpquery -D portinfo 0 1
q 2sw-portinfo-0-4   $n 0x0015 1 smpquery -D portinfo 0 4
q 2sw-portinfo-0,1   $n 0x0015 1 smpquery -D portinfo 0,1
q 2sw-pkeys-0,1      $n 0x0016 2 smpquery -D pkeys 0,1
q 2sw-sl2vl-0,1      $n 0x0017 2 smpquery -D sl2vl 0,1
q 2sw-vlarb-0,1      $n 0x0018 2 smpquery -D vlarb 0,1
q 2sw-guidinfo-0,1   $n 0x0014 2 smpquery -D guidinfo 0,1
q 2sw-mepi-0,1       $n 0xff90 1 smpquery -D mlnxextportinfo 0,1
stop_sim

# Own fabric: LIDs from the net file, then an SM sweep so that ports are
# Active and the LFTs are programmed.
start_sim "$here/speeds.net"
n=testdata/speeds.net
mkdir -p osm
SIM_HOST=HcaA OSM_CACHE_DIR=$work/osm OSM_TMP_DIR=$work/osm IBSIM_SOCKNAME=$sock LD_PRELOAD=$shim \
	opensm --once -f "$work/osm/log" -F /dev/null >/dev/null 2>&1 || true
q sp-nodeinfo-0      $n 0x0011 1 smpquery -D nodeinfo 0
q sp-nodeinfo-0,1    $n 0x0011 1 smpquery -D nodeinfo 0,1
q sp-nodeinfo-0,3    $n 0x0011 1 smpquery -D nodeinfo 0,3
q sp-nodeinfo-0,4    $n 0x0011 1 smpquery -D nodeinfo 0,4
q sp-nodedesc-0      $n 0x0010 1 smpquery -D nodedesc 0
q sp-switchinfo-0    $n 0x0012 1 smpquery -D switchinfo 0
q sp-switchinfo-0,3  $n 0x0012 1 smpquery -D switchinfo 0,3
q sp-portinfo-0-0    $n 0x0015 1 smpquery -D portinfo 0 0
q sp-portinfo-0-1    $n 0x0015 1 smpquery -D portinfo 0 1
q sp-portinfo-0-2    $n 0x0015 1 smpquery -D portinfo 0 2
q sp-portinfo-0-3    $n 0x0015 1 smpquery -D portinfo 0 3
q sp-portinfo-0-4    $n 0x0015 1 smpquery -D portinfo 0 4
q sp-portinfo-0-5    $n 0x0015 1 smpquery -D portinfo 0 5
q sp-portinfo-0,1    $n 0x0015 1 smpquery -D portinfo 0,1
q sp-portinfo-0,2    $n 0x0015 1 smpquery -D portinfo 0,2
q sp-portinfo-0,4    $n 0x0015 1 smpquery -D portinfo 0,4
q sp-mepi-0-2        $n 0xff90 1 smpquery -D mlnxextportinfo 0 2
q sp-mepi-0,2        $n 0xff90 1 smpquery -D mlnxextportinfo 0,2
q sp-pkeys-0-1       $n 0x0016 2 smpquery -D pkeys 0 1
q sp-sl2vl-0-1       $n 0x0017 2 smpquery -D sl2vl 0 1
q sp-vlarb-0-3       $n 0x0018 2 smpquery -D vlarb 0 3
q sp-guidinfo-0      $n 0x0014 2 smpquery -D guidinfo 0
# Link tokens as ibnetdiscover prints them, for the speed-token tests.
IBSIM_SOCKNAME=$sock LD_PRELOAD=$shim ibnetdiscover -p 2>/dev/null |
	sed '1i # ibnetdiscover -p (infiniband-diags 44.0) on ibsim 0.10, net file testdata/speeds.net, after opensm --once' \
	>"$here/speeds.ibnetdiscover-p.txt"
q sp-lft-0           $n 0x0019 1 ibroute -D 0
q sp-mft-0           $n 0x001b 2 ibroute -M -D 0
stop_sim

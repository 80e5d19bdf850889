#!/bin/bash
# capture.sh regenerates the PerfMgt test vectors in this directory from a
# running ibsim (Debian ibsim-utils 0.10) and the real perfquery of
# infiniband-diags 44.0 under libumad2sim. ibsim's PMA answers by LID only,
# so `opensm --once` first assigns LIDs and programs the switches. Counter
# values are injected through ibsim's console (PerformanceSet) besides the
# traffic counters that SMPs and GMPs move. Each response MAD is taken from
# libibmad's "rcv buf" dump (perfquery -d -d -d); perfquery's printed
# output is stored next to the bytes. The tail of the MAD (beyond the 64
# bytes ibsim copies back) holds whatever umad2sim left there.
#
# usage: testdata/capture.sh   (run from pkg/pma; needs ibsim, perfquery,
#                               opensm, python3)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
net=$(cd "$here/../../../testdata/fabrics" && pwd)/demo.net
shim=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
work=$(mktemp -d)
trap 'kill "${holder:-0}" "${simpid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
export IBSIM_SOCKNAME=pmacap$$_$RANDOM
mkfifo cons
sleep 3600 >cons &
holder=$!
ibsim -s "$net" <cons >ibsim.log 2>&1 &
simpid=$!
for _ in $(seq 50); do
	grep -q "@$IBSIM_SOCKNAME:ctl@" /proc/net/unix && break
	sleep 0.1
done
LD_PRELOAD=$shim SIM_HOST=H-0c42a10300300100 OSM_TMP_DIR=$work OSM_CACHE_DIR=$work \
	opensm --once -F /dev/null -f "$work/osm.log" --dump_files_dir "$work" >/dev/null 2>&1
exec 3>cons
printf '%s\n' \
	'PerformanceSet "S-0c42a1030020a000"[1] PortCounters.SymbolErrorCounter=12' \
	'PerformanceSet "S-0c42a1030020a000"[37] PortCounters.PortXmitDiscards=5' \
	'PerformanceSet "S-0c42a1030020a000"[38] PortCounters.LinkDownedCounter=255' \
	'PerformanceSet "H-0c42a10300300200"[1] PortCounters.PortRcvErrors=7' \
	'PerformanceSet "H-0c42a10300300200"[1] PortCounters.PortXmitWait=1234' \
	'PerformanceSet "H-0c42a10300300200"[1] PortCounters.LocalLinkIntegrityErrors=3' \
	'PerformanceSet "H-0c42a10300300200"[1] PortCounters.ExcessiveBufferOverrunErrors=9' \
	'PerformanceSet "H-0c42a10300300200"[1] PortCounters.VL15Dropped=65535' \
	'PerformanceSet "H-0c42a10300300200"[1] PortCountersExtended.PortUnicastXmitPkts=81985529216486895' \
	'PerformanceSet "H-0c42a10300300200"[1] PortCountersExtended.PortMulticastRcvPkts=3' >&3
sleep 1

# q NAME ATTR PERFQUERY-ARGS...: save the response MAD of attribute ATTR.
q() {
	local name=$1 attr=$2
	shift 2
	LD_PRELOAD=$shim perfquery -d -d -d "$@" >out.txt 2>err.txt || true
	python3 - "$here" "$name" "perfquery $*" "$attr" <<'PY'
import sys, re
here, name, cmd, want = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4], 16)
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
mads = [m for m in mads if int(m[1].split()[0], 16) == want]
m = mads[-1]
with open(f"{here}/{name}.hex", "w") as f:
    f.write("# source: ibsim 0.10 (Debian ibsim-utils 0.10-2), net file testdata/fabrics/demo.net after opensm --once,\n")
    f.write(f"#   response MAD received by `{cmd}` (infiniband-diags 44.0 under libumad2sim),\n")
    f.write(f"#   attribute 0x{want:04x}, from libibmad's \"rcv buf\" dump; counters injected by capture.sh\n")
    for l in out:
        f.write("> " + l + "\n" if l else ">\n")
    for l in m:
        f.write(l + "\n")
PY
}
q ca-cpi 0001 11 1
q ca-pc 0012 11 1
q ca-pcx 001d -x 11 1
q sw-cpi 0001 3 1
q sw-pc-1 0012 3 1
q sw-pc-38 0012 3 38
q sw-pc-all 0012 3 255
q sw-pcx-all 001d -x 3 255

#!/bin/sh
# install-deps.sh: install what the integration tests need (ibsim,
# infiniband-diags, opensm, the umad2sim shim, kernel uapi headers, a C
# compiler, zsh and fish for the completion tests, slurm-wlm for the Slurm
# topology test, graphviz for the --svg and DOT rendering tests,
# prometheus for promtool check metrics and the scrape of ibcheck serve) on
# Debian/Ubuntu. Idempotent: does nothing when all is present.
#
# Without root (and without password-less sudo) it only prints which tests
# will skip. Exit status is 0 unless CI=true and something is still missing.
set -u

SHIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
HEADER=/usr/include/rdma/ib_user_mad.h
PACKAGES="ibsim-utils infiniband-diags opensm linux-libc-dev gcc zsh fish slurm-wlm graphviz prometheus"
# Debian installs the diags and opensm into sbin, which a normal user's
# PATH may lack.
PATH="$PATH:/usr/sbin:/sbin:/usr/local/sbin"
export PATH

missing() {
	m=""
	for p in ibsim ibnetdiscover smpquery ibtracert saquery perfquery ibqueryerrors opensm cc zsh fish slurmctld scontrol dot promtool prometheus; do
		command -v "$p" >/dev/null 2>&1 || m="$m $p"
	done
	[ -e "$SHIM" ] || m="$m $SHIM"
	[ -e "$HEADER" ] || m="$m $HEADER"
	echo "$m"
}

need=$(missing)
if [ -z "$need" ]; then
	exit 0
fi

if [ "$(id -u)" = 0 ]; then
	SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
	SUDO="sudo -n"
else
	SUDO=none
fi

if [ "$SUDO" != none ] && command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: missing:$need; installing $PACKAGES" >&2
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 &&
		$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $PACKAGES >&2 ||
		echo "install-deps: apt-get failed" >&2
	need=$(missing)
	[ -z "$need" ] && exit 0
fi

echo "install-deps: missing:$need; the integration tests needing them (ibsim, completions, slurmctld, dot) will skip (need root or sudo -n to apt-get install $PACKAGES)"
if [ "${CI:-}" = true ]; then
	exit 1
fi
exit 0

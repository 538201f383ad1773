#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run selftests/tdc/*.json with the kernel's own tdc.py, in a VM, to prove
# the cases are real tdc cases (run.py, the selftests' runner, checks more).
#
#   scripts/check/tdc-upstream.sh [KVER...]     default: 6.1 6.12, one VM at a time
#   scripts/check/tdc-upstream.sh --guest       (what runs inside the VM)
#
# On the host: tools/testing/selftests/tc-testing is unpacked once from
# Debian's linux-source-6.1 (/usr/src/linux-source-6.1.tar.xz, installed
# if missing) into ~/.cache/sch_carousel/tc-testing-6.1, outside the repo,
# with a tdc_config_local.py that passes PATH and TC_LIB_DIR to the
# commands (tdc.py runs them with the environment in its ENVIR, empty by
# default, and tc then could not find q_carousel.so).  The module and the
# plugin are built, then each kernel boots (scripts/lib/vm.sh).
#
# In the guest: the module is loaded and TC_LIB_DIR set as selftests/run.sh
# does; tc-testing is copied to /tmp (the host's files are read-only
# there) and `tdc.py -f selftests/tdc/carousel.json ...` runs.  The cases
# require nsPlugin, which tdc.py loads from plugin-lib/: it makes the veth
# pair $DEV0/$DEV1 and runs each command in the netns $NS.  Nothing else is
# needed: tdc.py, nsPlugin and their imports are Python's standard library
# (scapyPlugin and buildebpfPlugin, which are not, load only for cases that
# require them; ours do not).
#
# Results: $CAROUSEL_RESULTS/<release>.tdc-upstream.{tap,log} (default
# build/results/tdc-upstream-<date>/).  Exit 0 if tdc.py passed every case
# on every kernel.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${CAROUSEL_CACHE:-$HOME/.cache/sch_carousel}
TDC_DIR=$CACHE/tc-testing-6.1
SRC=/usr/src/linux-source-6.1.tar.xz
CASES=(selftests/tdc/carousel.json selftests/tdc/carousel-class.json)

guest() {
	local kver t tcl rc
	kver=$(uname -r)
	# The host's sign that the guest got to an end, whichever (vmresult.sh).
	trap 'echo "$?" >"$CAROUSEL_RESULTS/$kver.tdc-upstream.done"' EXIT
	cd "$REPO" || exit 1
	insmod "build/$kver/sch_carousel.ko" || exit 1
	tcl=$(mktemp -d /tmp/tdc-tclib.XXXXXX)
	for f in /usr/lib/x86_64-linux-gnu/tc/* /usr/lib/tc/* "$REPO"/tc/*.so; do
		[ -e "$f" ] && ln -sf "$f" "$tcl/"
	done
	export TC_LIB_DIR=$tcl
	t=$(mktemp -d /tmp/tdc.XXXXXX)
	cp -a "$TDC_DIR/." "$t/" || exit 1
	cd "$t" || exit 1
	echo "# tdc.py from linux-source-6.1 on $kver, $(tc -V)"
	python3 ./tdc.py -p "$(command -v tc)" --outfile "$CAROUSEL_RESULTS/$kver.tdc-upstream.tap" \
		-f "${CASES[@]/#/$REPO/}"
	rc=$?
	dmesg | grep -E -f "$REPO/selftests/tools/bad-kernel-lines.re" && rc=1
	rmmod sch_carousel || rc=1
	exit "$rc"
}

if [ "${1:-}" = --guest ]; then
	guest
fi

# --- host -------------------------------------------------------------------
cd "$REPO" || exit 1
# shellcheck source=scripts/lib/vmresult.sh
source scripts/lib/vmresult.sh
if [ ! -e "$TDC_DIR/tdc.py" ]; then
	if [ ! -e "$SRC" ]; then
		SUDO=
		[ "$(id -u)" = 0 ] || SUDO=sudo
		DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
			linux-source-6.1 || exit 1
	fi
	mkdir -p "$CACHE" || exit 1
	tmp=$(mktemp -d "$CACHE/tc-testing.XXXXXX")
	tar -xJf "$SRC" -C "$tmp" linux-source-6.1/tools/testing/selftests/tc-testing || exit 1
	rm -rf "$TDC_DIR"
	mv "$tmp/linux-source-6.1/tools/testing/selftests/tc-testing" "$TDC_DIR" || exit 1
	rm -rf "$tmp"
	cat >"$TDC_DIR/tdc_config_local.py" <<'EOF'
# Written by sch_carousel's scripts/check/tdc-upstream.sh: tdc.py runs commands
# with this environment only, and tc needs TC_LIB_DIR to find q_carousel.so.
import os
ENVIR = {k: os.environ[k] for k in ("PATH", "TC_LIB_DIR") if k in os.environ}
EOF
fi

make -s -C tc q_carousel.so >/dev/null || exit 1
RES=${CAROUSEL_RESULTS:-$REPO/build/results/tdc-upstream-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$RES" && RES=$(cd "$RES" && pwd -P)
export CAROUSEL_RESULTS=$RES CAROUSEL_CACHE=$CACHE
fails=0
for k in "${@:-6.1 6.12}"; do
	for kk in $k; do
		kver=$(bash scripts/lib/vm.sh --resolve "$kk") || { fails=$((fails + 1)); continue; }
		bash scripts/build/module.sh "$kver" "$RES/$kver.build.log" >/dev/null ||
			{ echo "tdc-upstream: build for $kver failed"; fails=$((fails + 1)); continue; }
		vmr_boot "$RES/$kver.console.log" "$RES/$kver.tdc-upstream.log" \
			"$RES/$kver.tdc-upstream.done" "$kver" bash scripts/check/tdc-upstream.sh --guest
		rc=$VMR_RC
		tap=$RES/$kver.tdc-upstream.tap
		p=0 f=0 s=0
		[ ! -e "$tap" ] || read -r p f s < <(vmr_tap_count "$tap")
		echo "tdc-upstream: $kver: exit $rc, $p ok, $f not ok, $s skipped ($tap)"
		[ -e "$RES/$kver.tdc-upstream.done" ] ||
			echo "tdc-upstream: $kver: the VM died: $(vmr_why "$RES/$kver.console.log")"
		[ "$rc" = 0 ] && [ "$f" = 0 ] && [ "$p" -gt 0 ] || fails=$((fails + 1))
	done
done
[ "$fails" = 0 ]

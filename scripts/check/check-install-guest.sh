#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Inside a VM of scripts/check/check-install.sh: use the module that DKMS
# installed on the host, by name, as a user would: modprobe, tc, lsmod,
# and the kernel's own autoload.  The guest's /lib/modules is the host's
# (scripts/lib/vm.sh boots a /boot kernel with virtme-ng, which keeps the host
# root and its /lib/modules/<release>), so nothing here is insmod'ed.
#
# Writes, in $CAROUSEL_RESULTS:
#   <release>.install.tap      "ok N - what" / "not ok N - what # why"
#   <release>.install.dmesg    the kernel's lines about the module
#   <release>.install.verdict  PASS or FAIL, written last
# Exit: 0 if every case passed.
set -uo pipefail

K=$(uname -r)
RES=${CAROUSEL_RESULTS:?}
TAP=$RES/$K.install.tap
DKMS_DIR=/lib/modules/$K/updates/dkms
N=0 FAILED=0

rm -f "$TAP" "$RES/$K.install.verdict" "$RES/$K.install.dmesg"
echo "TAP version 13" >"$TAP"

# result ok|fail WHAT [WHY]
result() {
	N=$((N + 1))
	if [ "$1" = ok ]; then
		echo "ok $N - $2" >>"$TAP"
	else
		FAILED=$((FAILED + 1))
		echo "not ok $N - $2${3:+ # $3}" >>"$TAP"
	fi
	tail -n 1 "$TAP"
}

# check WHAT CMD...: one case, passed when CMD succeeds; its output is
# kept as diagnostics.
check() {
	local what=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	[ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/# /' >>"$TAP"
	if [ "$rc" = 0 ]; then
		result ok "$what"
	else
		result fail "$what" "exit $rc"
	fi
}

loaded() { grep -q '^sch_carousel ' /proc/modules; }
not_loaded() { [ -r /proc/modules ] && ! loaded; }

# modinfo resolves the name to the DKMS copy, not to anything else.
from_dkms() {
	local f
	f=$(modinfo -F filename sch_carousel) || return 1
	echo "$f"
	case $f in
	"$DKMS_DIR"/sch_carousel.ko*) return 0 ;;
	esac
	return 1
}

qdisc_on_lo() { tc qdisc show dev lo | grep -E '^qdisc carousel '; }

# The installed plugin parses an option and prints it back.
plugin_rate() {
	tc qdisc change dev lo root carousel rate 1gbit || return 1
	tc qdisc show dev lo | grep -E '^qdisc carousel .* rate 1Gbit '
}

lsmod_shows() { lsmod | grep -E '^sch_carousel '; }

# modprobe -r, a few times: the last reference of a deleted qdisc may
# still be on its way.
unload() {
	local _
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		modprobe -r sch_carousel 2>/dev/null && return 0
		sleep 0.2
	done
	modprobe -r sch_carousel
}

echo "# $K: $(ls "$DKMS_DIR" 2>&1)" >>"$TAP"
check "not loaded at boot" not_loaded
check "modinfo finds sch_carousel in $DKMS_DIR" from_dkms
check "modprobe sch_carousel" modprobe sch_carousel
check "lsmod shows sch_carousel" lsmod_shows
check "tc qdisc add dev lo root carousel" tc qdisc add dev lo root carousel
check "tc qdisc show dev lo shows carousel" qdisc_on_lo
check "installed tc plugin: change rate 1gbit, shown back" plugin_rate
check "tc qdisc del dev lo root" tc qdisc del dev lo root
check "modprobe -r sch_carousel" unload
check "unloaded" not_loaded
# The kernel asks modprobe for the module itself (its alias, from Kbuild's
# probe: net-sch-carousel on 6.10+, sch_carousel before).
# compat: CAROUSEL_HAVE_ALIAS_NET_SCH, on both kernels in .ci/run
check "autoload on tc qdisc add (alias $(modinfo -F alias sch_carousel 2>/dev/null | paste -sd,))" \
	tc qdisc add dev lo root carousel
check "autoloaded" loaded
tc qdisc del dev lo root >/dev/null 2>&1
check "modprobe -r after autoload" unload
# The one pattern every VM run fails on (selftests/tools/bad-kernel-lines.re).
bad=$(dmesg | grep -E -f "${CAROUSEL_REPO:?}/selftests/tools/bad-kernel-lines.re")
if [ -z "$bad" ]; then
	result ok "kernel log clean"
else
	printf '%s\n' "$bad" | head -n 20 | sed 's/^/# kernel: /'
	result fail "kernel log clean" "$(printf '%s\n' "$bad" | wc -l) bad line(s)"
fi

echo "1..$N" >>"$TAP"
dmesg | grep -i 'sch_carousel\|carousel' >"$RES/$K.install.dmesg" 2>&1
if [ "$FAILED" = 0 ]; then
	echo PASS >"$RES/$K.install.verdict"
	exit 0
fi
echo FAIL >"$RES/$K.install.verdict"
exit 1

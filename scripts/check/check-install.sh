#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check-install`: the DKMS install end to end, on this host.
#
#   1. installs dkms with apt if it is missing (idempotent);
#   2. make dkms-install: dkms add, build and install for every kernel with
#      headers; dkms status must say "installed" for each kernel tested, and
#      /lib/modules/<release>/updates/dkms/sch_carousel.ko* must be what
#      modinfo -k <release> finds by name;
#   3. boots each kernel in a VM (scripts/lib/vm.sh) and runs
#      scripts/check/check-install-guest.sh there: modprobe sch_carousel by name,
#      lsmod, tc qdisc add dev lo root carousel with the installed tc plugin,
#      and the kernel's own autoload.  The guest sees the host's root
#      filesystem, /lib/modules included (virtme-ng with a /boot kernel keeps
#      the host's /lib/modules/<release>), so it loads what dkms installed;
#   4. make uninstall, then compares the list of files and directories under
#      every path an install writes to with the list taken before step 2:
#      they must be equal;
#   5. make install (the plain install: extra/ for each kernel, plugin,
#      tool, man page), modinfo finds it by name, make uninstall, and the
#      file list again equals the one before step 2.
#
# It refuses to start when something of sch_carousel is installed already
# (make uninstall first), and on any exit it uninstalls what it installed.
# dkms signs modules with its own key, /var/lib/dkms/mok.{key,pub}, created
# at the first signed build and shared by every DKMS module, so make
# uninstall leaves it; if it did not exist before, this check removes it
# and says so.  Before it installs and before each boot it waits (up to
# CAROUSEL_QEMU_WAIT s) until no other qemu, make check or make demo runs:
# their VMs see the host's /lib/modules, and their tests are
# timing-sensitive.
#
# Every step counts one case and each guest case one more; ends with
# "N passed, N failed, N skipped" and exits non-zero if anything failed.
#
# Environment:
#   CAROUSEL_KERNELS     kernels to boot (default "6.1 6.12", see scripts/lib/vm.sh)
#   CAROUSEL_SKIP_VM     1: steps 1, 2, 4 and 5 only, no VM
#   CAROUSEL_QEMU_WAIT   seconds to wait for other qemu to end (1200)
#   CAROUSEL_VM_CPUS     guest CPUs (1 here), and the rest of scripts/lib/vm.sh's
#   CAROUSEL_RESULTS     results dir (default build/results/check-install-<date>-<pid>)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
# shellcheck source=scripts/lib/summary.sh
source scripts/lib/summary.sh
# shellcheck source=scripts/lib/vmresult.sh
source scripts/lib/vmresult.sh

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
PKG=sch_carousel
VER=$(cat VERSION)
MOK=/var/lib/dkms/mok
TC_LIB=$(for d in /usr/lib/x86_64-linux-gnu/tc /usr/lib/tc /usr/lib64/tc; do
	[ -d "$d" ] && { echo "$d"; break; }; done)
TC_LIB=${TC_LIB:-/usr/lib/tc}
# Everything an install (module, DKMS, plugin, tool, man page) writes under.
WATCH=(/lib/modules /usr/src /var/lib/dkms /usr/local "$TC_LIB" /etc/dkms
       /etc/modprobe.d /etc/modules-load.d /opt)

# One vCPU: loading a module by name needs no SMP, it halves the load on a
# machine whose other VM tests are timing-sensitive, and under TCG it rules
# out the cross-vCPU code-patching race ("Oops: int3" in a static branch,
# seen at 6.12 boot with two vCPUs, before any module was loaded).
export CAROUSEL_VM_CPUS=${CAROUSEL_VM_CPUS:-1}

RES=${CAROUSEL_RESULTS:-$(bash scripts/lib/vm.sh --results-base)/check-install-$(date +%Y%m%d-%H%M%S)-$$}
mkdir -p "$RES"
RES=$(cd "$RES" && pwd -P)
export CAROUSEL_RESULTS=$RES

pass() { PASS=$((PASS + 1)); REPORT+=("ok      $*"); say "ok: $*"; }
fail() { FAIL=$((FAIL + 1)); REPORT+=("FAIL    $*"); say "FAIL: $*"; }
skip() { SKIP=$((SKIP + 1)); REPORT+=("skip    $*"); say "skip: $*"; }
note() { REPORT+=("        $*"); say "  $*"; }

# snapshot FILE: type and path of everything under WATCH, sorted.
snapshot() {
	{ $SUDO find "${WATCH[@]}" -xdev -printf '%y %p\n' 2>/dev/null || true; } |
		LC_ALL=C sort >"$1"
}

# ours: whatever of sch_carousel is installed now, one path a line.
ours() {
	local p
	for p in /var/lib/dkms/$PKG /usr/src/$PKG-* /lib/modules/*/extra/$PKG.ko* \
		 /lib/modules/*/updates/dkms/$PKG.ko* "$TC_LIB/q_carousel.so" \
		 /usr/local/sbin/carousel-cgroup /usr/local/share/man/man8/tc-carousel.8 \
		 /opt/cni/bin/carousel-cni; do
		[ -e "$p" ] && echo "$p"
	done
	return 0
}

# busy: another VM runs, or a make check / make demo that boots one next
# (check.sh builds for a while between its two VMs).
busy() {
	pgrep -f qemu-system >/dev/null || pgrep -f 'scripts/(check/check|demo/demo)\.sh' >/dev/null
}

# wait_qemu_idle: true once nothing is busy, false after the wait.
wait_qemu_idle() {
	local waited=0 max=${CAROUSEL_QEMU_WAIT:-1200}
	while busy; do
		if [ "$waited" -ge "$max" ]; then
			return 1
		fi
		say "another qemu is running: waiting (${waited}s of ${max}s)"
		sleep 30
		waited=$((waited + 30))
	done
}

# ---------------------------------------------------------------- kernels
KVERS=()
for k in ${CAROUSEL_KERNELS:-6.1 6.12}; do
	if ! kv=$(bash scripts/lib/vm.sh --resolve "$k"); then
		fail "$k: no such kernel in /boot"
		continue
	fi
	if [ ! -e "/lib/modules/$kv/build/Makefile" ]; then
		fail "$kv: no headers in /lib/modules/$kv/build"
		continue
	fi
	KVERS+=("$kv")
done
[ "${#KVERS[@]}" -gt 0 ] || { say "check-install: no kernel to test"; exit 1; }

left=$(ours)
if [ -n "$left" ]; then
	say "check-install: sch_carousel is installed already; 'make uninstall' first:" "$left" >&2
	exit 2
fi

# ---------------------------------------------------------------- dkms
hr "dkms"
if ! command -v dkms >/dev/null; then
	say "installing dkms"
	$SUDO apt-get update -q >"$RES/apt.log" 2>&1 || true
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
		dkms >>"$RES/apt.log" 2>&1 || true
fi
if command -v dkms >/dev/null; then
	pass "dkms present: $(dkms --version)"
else
	fail "dkms could not be installed: $RES/apt.log"
	exit 1
fi
mok_before=0
if [ -e "$MOK.key" ] || [ -e "$MOK.pub" ]; then
	mok_before=1
fi

# drop_mok: remove dkms's signing key if dkms made it during this check.
drop_mok() {
	if [ "$mok_before" = 0 ] && { [ -e "$MOK.key" ] || [ -e "$MOK.pub" ]; }; then
		$SUDO rm -f "$MOK.key" "$MOK.pub"
		return 0
	fi
	return 1
}

VM=1
[ "${CAROUSEL_SKIP_VM:-0}" != 1 ] || VM=0
# A VM of someone else's sees the host's /lib/modules live: install nothing
# under it.
if ! wait_qemu_idle; then
	fail "another VM still ran after ${CAROUSEL_QEMU_WAIT:-1200}s: nothing installed"
	say "$PASS passed, $FAIL failed, $SKIP skipped"
	exit 1
fi

# ---------------------------------------------------------------- install
INSTALLED=0
cleanup() {
	if [ "$INSTALLED" = 1 ]; then
		say "check-install: uninstalling after an early exit"
		$SUDO make -C "$REPO" uninstall >>"$RES/uninstall.log" 2>&1 || true
		drop_mok || true
	fi
}
trap cleanup EXIT

hr "make dkms-install"
snapshot "$RES/files.before"
INSTALLED=1
if $SUDO make -C "$REPO" dkms-install >"$RES/dkms-install.log" 2>&1; then
	pass "make dkms-install"
else
	fail "make dkms-install: $RES/dkms-install.log"
	tail -n 30 "$RES/dkms-install.log"
fi
snapshot "$RES/files.installed"
diff "$RES/files.before" "$RES/files.installed" | sed -n 's/^> //p' >"$RES/files.added" || true
say "the install added $(wc -l <"$RES/files.added") files and directories ($RES/files.added)"

dkms status -m "$PKG" >"$RES/dkms-status.txt" 2>&1 || true
for kv in "${KVERS[@]}"; do
	line=$(grep -F "$PKG/$VER, $kv, " "$RES/dkms-status.txt" || true)
	if [ -n "$line" ] && [ "${line##*: }" = installed ]; then
		pass "dkms status: $line"
	else
		fail "dkms status for $kv: ${line:-no line} ($RES/dkms-status.txt)"
	fi

	ko=$(ls "/lib/modules/$kv/updates/dkms/$PKG".ko* 2>/dev/null | head -n 1 || true)
	found=$(modinfo -k "$kv" -F filename "$PKG" 2>/dev/null || true)
	magic=$(modinfo -k "$kv" -F vermagic "$PKG" 2>/dev/null || true)
	if [ -n "$ko" ] && [ "$found" = "$ko" ] && [ "${magic%% *}" = "$kv" ]; then
		pass "$kv: modinfo -k finds $ko (vermagic $kv)"
	else
		fail "$kv: module '${ko:-none}' in updates/dkms, modinfo finds '${found:-nothing}', vermagic '${magic%% *}'"
	fi
done

# Debian's /usr/local/man is a link to share/man: compare real paths.
man_path=$(man -w tc-carousel 2>/dev/null || true)
if [ -n "$man_path" ] &&
   [ "$(readlink -f "$man_path")" = /usr/local/share/man/man8/tc-carousel.8 ] &&
   [ -e "$TC_LIB/q_carousel.so" ]; then
	pass "man -w tc-carousel: $man_path; plugin in $TC_LIB"
else
	fail "man -w tc-carousel: '${man_path:-none}'; plugin in $TC_LIB: $(ls "$TC_LIB/q_carousel.so" 2>&1)"
fi

# ---------------------------------------------------------------- VMs
for kv in "${KVERS[@]}"; do
	hr "VM $kv"
	if [ "$VM" = 0 ]; then
		skip "$kv: VM not booted"
		continue
	fi
	if ! wait_qemu_idle; then
		fail "$kv: another VM still ran after ${CAROUSEL_QEMU_WAIT:-1200}s; not booted"
		continue
	fi
	rm -f "$RES/$kv".install.{tap,verdict,dmesg}
	vmr_boot "$RES/$kv.console.log" "$RES/$kv.install.out" "$RES/$kv.install.verdict" "$kv" \
		bash scripts/check/check-install-guest.sh
	vrc=$VMR_RC
	p=0 f=0 s=0
	[ -e "$RES/$kv.install.tap" ] && read -r p f s < <(vmr_tap_count "$RES/$kv.install.tap")
	verdict=$(cat "$RES/$kv.install.verdict" 2>/dev/null || true)
	PASS=$((PASS + p)) FAIL=$((FAIL + f)) SKIP=$((SKIP + s))
	REPORT+=("== $kv in a VM: ${verdict:-no verdict}, $p passed, $f failed (vm.sh exit $vrc)")
	[ "$VMR_RETRIED" = 0 ] || REPORT+=("   (booted twice: $(grep -m1 '^RETRY:' "$RES/$kv.install.out"))")
	if [ -e "$RES/$kv.install.tap" ]; then
		while IFS= read -r l; do
			REPORT+=("$l")
		done < <(vmr_tap_table "$RES/$kv.install.tap" "   ")
	fi
	if [ -z "$verdict" ]; then
		why=$(vmr_why "$RES/$kv.console.log")
		fail "$kv: the VM died before its verdict${why:+: $why} (console: $RES/$kv.console.log)"
	elif [ "$verdict" = PASS ] && [ "$vrc" != 0 ]; then
		fail "$kv: verdict PASS but vm.sh exit $vrc"
	fi
done

# ---------------------------------------------------------------- uninstall
hr "make uninstall"
if $SUDO make -C "$REPO" uninstall >"$RES/uninstall.log" 2>&1; then
	INSTALLED=0
	pass "make uninstall"
else
	fail "make uninstall: $RES/uninstall.log"
	tail -n 30 "$RES/uninstall.log"
fi
st=$(dkms status -m "$PKG" 2>&1 || true)
if [ -z "$st" ]; then
	pass "dkms status -m $PKG: empty"
else
	fail "dkms status -m $PKG after uninstall: $st"
fi

if drop_mok; then
	note "dkms created its signing key $MOK.{key,pub} (dkms's, shared by every DKMS"
	note "module, left by make uninstall); it did not exist before: removed"
fi

snapshot "$RES/files.after"
if diff "$RES/files.before" "$RES/files.after" >"$RES/files.diff"; then
	pass "file list after uninstall = before ($(wc -l <"$RES/files.added") added by the install, none left)"
else
	fail "file list after uninstall differs from before: $RES/files.diff"
	sed 's/^/   /' "$RES/files.diff" | head -n 40
fi

# ---------------------------------------------------------------- make install
# The plain install the README gives first: the module under extra/ for
# each kernel (KDIR), the plugin, the tool and the man page; found by name,
# then make uninstall leaves the file list as it was before.  (The VM
# boots above load the DKMS build of the same sources.)
hr "make install"
INSTALLED=1
for kv in "${KVERS[@]}"; do
	if $SUDO make -C "$REPO" install KDIR="/lib/modules/$kv/build" >"$RES/install-$kv.log" 2>&1; then
		pass "make install KDIR=/lib/modules/$kv/build"
	else
		fail "make install for $kv: $RES/install-$kv.log"
		tail -n 30 "$RES/install-$kv.log"
	fi
	ko=$(ls "/lib/modules/$kv/extra/$PKG".ko* 2>/dev/null | head -n 1 || true)
	found=$(modinfo -k "$kv" -F filename "$PKG" 2>/dev/null || true)
	magic=$(modinfo -k "$kv" -F vermagic "$PKG" 2>/dev/null || true)
	if [ -n "$ko" ] && [ "$found" = "$ko" ] && [ "${magic%% *}" = "$kv" ]; then
		pass "$kv: modinfo -k finds $ko (vermagic $kv)"
	else
		fail "$kv: module '${ko:-none}' in extra/, modinfo finds '${found:-nothing}', vermagic '${magic%% *}'"
	fi
done
man_path=$(man -w tc-carousel 2>/dev/null || true)
if [ -n "$man_path" ] && [ -e "$TC_LIB/q_carousel.so" ] && [ -x /usr/local/sbin/carousel-cgroup ] &&
   [ -x /opt/cni/bin/carousel-cni ]; then
	pass "make install: man page $man_path, plugin in $TC_LIB, /usr/local/sbin/carousel-cgroup, /opt/cni/bin/carousel-cni"
else
	fail "make install: man page '${man_path:-none}', plugin or tool missing"
fi
if $SUDO make -C "$REPO" uninstall >"$RES/uninstall-2.log" 2>&1; then
	INSTALLED=0
	pass "make uninstall after make install"
else
	fail "make uninstall after make install: $RES/uninstall-2.log"
fi
snapshot "$RES/files.after-2"
if diff "$RES/files.before" "$RES/files.after-2" >"$RES/files-2.diff"; then
	pass "file list after make install + uninstall = before"
else
	fail "file list after make install + uninstall differs from before: $RES/files-2.diff"
	sed 's/^/   /' "$RES/files-2.diff" | head -n 40
fi

# ---------------------------------------------------------------- summary
summary "$RES"

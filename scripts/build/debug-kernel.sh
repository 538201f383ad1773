#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (once) the debug kernel that `make check-debug` boots: Debian's
# linux-source-6.1 with KASAN, kmemleak, lockdep, DEBUG_ATOMIC_SLEEP and
# debugobjects on top of virtme-ng's minimal config, everything the selftests
# need built in (scripts/build/debug-kernel.config).
#
#   scripts/build/debug-kernel.sh [LOG]
#
# The tree lives outside the repository, in
#   ${CAROUSEL_DEBUG_KERNEL_DIR:-~/.cache/sch_carousel/debug-kernel}/linux-source-6.1
# and is reused: when the stamp matches the tarball and the config fragment,
# nothing is rebuilt.  The build runs under `nice -n 19` with -j2
# (CAROUSEL_DEBUG_JOBS) because the machine is shared with other VM tests.
#
# Prints the kernel tree (the KDIR for M= builds) on success.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${CAROUSEL_DEBUG_KERNEL_DIR:-$HOME/.cache/sch_carousel/debug-kernel}
TARBALL=${CAROUSEL_DEBUG_KERNEL_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
JOBS=${CAROUSEL_DEBUG_JOBS:-2}
FRAG=$REPO/scripts/build/debug-kernel.config
TREE=$CACHE/linux-source-6.1
log=${1:-$CACHE/build.log}

mkdir -p "$CACHE"
# One builder at a time (two check-debug runs in different worktrees).
exec 9>"$CACHE/.lock"
flock 9

want=$( { stat -c '%n %s %Y' "$TARBALL"; sha256sum <"$FRAG"; } | sha256sum | cut -d' ' -f1)
if [ -f "$TREE/.carousel-stamp" ] && [ "$(cat "$TREE/.carousel-stamp")" = "$want" ] &&
   [ -f "$TREE/arch/x86/boot/bzImage" ] && [ -f "$TREE/Module.symvers" ]; then
	echo "$TREE"
	exit 0
fi

# vng: one that runs, on PATH or where scripts/build/deps.sh puts it; its
# directory first on PATH, for its helpers.
. "$REPO/scripts/lib/vng.sh"
VNG=$(vng_find) || { echo "vng (virtme-ng) not found: bash scripts/build/deps.sh" >&2; exit 1; }
PATH=${VNG%/*}:$PATH
[ -r "$TARBALL" ] || { echo "$TARBALL missing: apt-get install linux-source-6.1" >&2; exit 1; }

if [ ! -f "$TREE/Makefile" ]; then
	echo "unpacking $TARBALL into $CACHE" >&2
	nice -n 19 tar -C "$CACHE" -xf "$TARBALL"
fi
cd "$TREE"
rm -f .carousel-stamp
start=$(date +%s)
{
	echo "== $(date -u) config: vng --kconfig + $FRAG"
	# vng's minimal virtme config (it applies its own generic items after
	# --config, e.g. DWARF debug info), then our fragment again on top so
	# it wins, then olddefconfig.
	vng --kconfig --config "$FRAG"
	scripts/kconfig/merge_config.sh -m .config "$FRAG"
	make olddefconfig
} >"$log" 2>&1
# A fragment symbol the kernel dropped or could not set (a dependency is
# missing) would silently weaken the checks: refuse to build.
bad=0
while IFS= read -r line; do
	k=${line%%=*} v=${line#*=}
	got=$(grep -E "^$k=|^# $k is not set" .config | head -n1 || true)
	if [ "$v" = n ]; then
		[ -z "$got" ] || [ "$got" = "# $k is not set" ] || { echo "config: $k: want n, got $got" >&2; bad=1; }
	elif [ "$got" != "$k=$v" ]; then
		echo "config: $k: want $v, got '${got:-unset}'" >&2; bad=1
	fi
done < <(grep -E '^CONFIG_[A-Z0-9_]+=' "$FRAG")
[ "$bad" = 0 ] || exit 1

echo "building $TREE (nice 19, -j$JOBS); log $log" >&2
nice -n 19 make -j"$JOBS" >>"$log" 2>&1 || { tail -n 40 "$log" >&2; exit 1; }
echo "== $(date -u) done in $(( $(date +%s) - start )) s" >>"$log"
echo "$want" >.carousel-stamp
echo "$TREE"

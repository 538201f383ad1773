#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build sch_carousel.ko for one installed kernel into build/<release>/,
# with W=1; any compiler warning fails the build.
#
#   scripts/build/module.sh KVER [LOG]     KVER: a full release, 6.1 or 6.12
#
# Prints the path of the module on success.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
kver=$(bash scripts/lib/vm.sh --resolve "$1")
log=${2:-build/$kver.build.log}
d=build/$kver
mkdir -p "$d" "$(dirname "$log")"
# The module's sources, linked in place: a quoted #include finds its header
# next to the includer, so include/ is linked as a whole.
for f in Kbuild sch_carousel.c sch_carousel.h carousel_compat.h carousel_wheel.h include; do
	ln -sfn "../../$f" "$d/$f"
done
rc=0
sparse=()
# C=2: sparse on every source, built or not; its findings say warning: or
# error: as the compiler's do.
[ "${CAROUSEL_SPARSE:-0}" = 0 ] || sparse=(C=2 CHECK=sparse)
make -C "/lib/modules/$kver/build" M="$REPO/$d" W=1 "${sparse[@]}" modules >"$log" 2>&1 || rc=$?
if [ "$rc" != 0 ] || grep -qiE 'warning:|error:' "$log"; then
	grep -iE -A3 'warning:|error:' "$log" | head -n 40 >&2
	exit 1
fi
echo "$REPO/$d/sch_carousel.ko"

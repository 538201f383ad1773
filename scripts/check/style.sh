#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make style: the module's sources against the kernel's coding style.
#
#   1. checkpatch.pl --strict (scripts/build/checkpatch.sh fetches it) on
#      every file that goes into sch_carousel.ko, and on the userspace shim
#      the wheel is tested with.  Ignored, everywhere:
#        CAMELCASE          the kernel's own type names (struct Qdisc,
#                           Qdisc_ops) that a qdisc must use;
#        LONG_LINE_STRING   a user-visible string is never broken
#                           (coding-style.rst, "Breaking long lines");
#        MACRO_ARG_REUSE    every macro here takes names (an attribute's
#                           suffix, a struct field), never an expression.
#      include/uapi/carousel.h also COMPLEX_MACRO: its statistics lists
#      are X-macros, a list cannot be parenthesised.
#   2. sparse: a W=1 build with C=2 for each kernel (scripts/build/module.sh
#      with CAROUSEL_SPARSE=1); any sparse finding fails like a warning.
#      make check does this in its own builds and runs only step 1 here
#      (CAROUSEL_STYLE_SPARSE=0).
#
# Exit 0 when all is clean.  Environment: CAROUSEL_KERNELS (default
# "6.1 6.12"), CAROUSEL_STYLE_SPARSE.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO" || exit 1

FILES=(sch_carousel.c sch_carousel.h carousel_compat.h carousel_wheel.h tools/include/kshim.h)
UAPI=include/uapi/carousel.h
IGNORE=CAMELCASE,LONG_LINE_STRING,MACRO_ARG_REUSE
rc=0

if ! cp=$(bash scripts/build/checkpatch.sh); then
	echo "style: no checkpatch.pl" >&2
	exit 1
fi
# cpcheck IGNORE FILE...: one checkpatch run; fails on any finding, and if
# checkpatch failed without one (it prints nothing for a clean file).
cpcheck() {
	local ign=$1 out st=0 found

	shift
	out=$("$cp" --strict --no-tree --terse --show-types --ignore "$ign" -f "$@" 2>&1) || st=$?
	found=$(grep -E '^[^ ]+:[0-9]+: (ERROR|WARNING|CHECK):' <<<"$out")
	if [ -n "$found" ]; then
		printf '%s\n' "$found"
		return 1
	elif [ "$st" != 0 ]; then
		printf '%s\n' "$out" | tail -n 5
		echo "style: checkpatch exited $st with no finding"
		return 1
	fi
}
cp_ok=1
cpcheck "$IGNORE" "${FILES[@]}" || cp_ok=0
cpcheck "$IGNORE,COMPLEX_MACRO" "$UAPI" || cp_ok=0
if [ "$cp_ok" = 1 ]; then
	echo "style: checkpatch --strict: clean (${FILES[*]} $UAPI; $(cat "$(dirname "$cp")/from"))"
else
	echo "style: checkpatch --strict: findings above"
	rc=1
fi

if [ "${CAROUSEL_STYLE_SPARSE:-1}" != 0 ]; then
	for k in ${CAROUSEL_KERNELS:-6.1 6.12}; do
		kver=$(bash scripts/lib/vm.sh --resolve "$k") || { rc=1; continue; }
		log=build/$kver.sparse.log
		if CAROUSEL_SPARSE=1 bash scripts/build/module.sh "$kver" "$log" >/dev/null; then
			echo "style: sparse and W=1 on $kver: clean ($(grep -c ' CHECK ' "$log") file(s) checked)"
		else
			echo "style: sparse or W=1 on $kver: findings above ($log)"
			rc=1
		fi
	done
fi
exit "$rc"

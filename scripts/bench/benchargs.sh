# SPDX-License-Identifier: GPL-2.0
#
# benchargs.sh - the command line that bench.sh and insnbench.sh share:
#
#   [--smoke] [--out DIR]
#
# Sourced, with the arguments, from the repository's top directory; sets
# SMOKE (--smoke or empty), OUT (an absolute directory, made: DIR, else
# docs/bench, or build/bench-smoke with --smoke) and KERNEL
# (CAROUSEL_BENCH_KERNEL, default 6.12).

SMOKE=
OUT=
while [ $# -gt 0 ]; do
	case $1 in
	--smoke) SMOKE=--smoke; shift ;;
	--out) OUT=$2; shift 2 ;;
	*) echo "usage: $0 [--smoke] [--out DIR]" >&2; exit 2 ;;
	esac
done
if [ -z "$OUT" ]; then
	if [ -n "$SMOKE" ]; then OUT=build/bench-smoke; else OUT=docs/bench; fi
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
KERNEL=${CAROUSEL_BENCH_KERNEL:-6.12}

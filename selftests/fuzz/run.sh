#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# selftests/fuzz/run.sh [SECONDS]: build the wheel fuzzer with clang
# (libFuzzer, ASan, UBSan) and run it for SECONDS (default 60) on the
# corpus in build/fuzz/corpus (seeded on first use).  Ends with one line
#
#   fuzz: N ops in S s (X ops/s), C crashes (...)
#
# and exits non-zero on any crash, a failed build or missing statistics.
# Crash inputs land in build/fuzz/artifacts/; rerun one with
# build/fuzz/fuzz_wheel <file>.
#
# Environment:
#   FUZZ_OUT=dir      build and corpus dir (default build/fuzz)
#   HDRDIR=dir        take carousel_wheel.h from dir (a patched copy)
#   FUZZ_ARGS="..."   more libFuzzer flags
#   and those of fuzz_wheel.c (FUZZ_WHEEL_OPS ...).
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SECS=${1:-60}
OUT=${FUZZ_OUT:-$REPO/build/fuzz}
case "$SECS" in
''|*[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;;
esac
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)

# Rebuild whenever the header comes from elsewhere than last time.
hdr=$(cd "${HDRDIR:-$REPO}" && pwd) || exit 2
mkargs=(-s -C "$REPO/selftests/fuzz" O="$OUT" HDRDIR="$hdr")
[ "$(cat "$OUT/.hdrdir" 2>/dev/null)" = "$hdr" ] || mkargs+=(-B)
if ! make "${mkargs[@]}"; then
	echo "fuzz: build failed (clang with libFuzzer: make deps)"
	exit 1
fi
echo "$hdr" >"$OUT/.hdrdir"

CORPUS=$OUT/corpus
ART=$OUT/artifacts/$(date +%Y%m%d-%H%M%S)-$$
LOG=$OUT/fuzz.log
mkdir -p "$CORPUS" "$ART"
if [ -z "$(ls -A "$CORPUS")" ]; then
	FUZZ_WHEEL_WRITE_SEEDS=$CORPUS "$OUT/fuzz_wheel" >/dev/null || exit 1
fi

# One process: the machine is small and shared.  -timeout: one input runs
# a few thousand operations in milliseconds; seconds mean a loop.
# shellcheck disable=SC2086
"$OUT/fuzz_wheel" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=2048 \
	-print_final_stats=1 -artifact_prefix="$ART/" ${FUZZ_ARGS:-} \
	"$CORPUS" >"$LOG" 2>&1
rc=$?

crashes=$(find "$ART" -type f | wc -l)
rmdir "$ART" 2>/dev/null
read -r ops secs rate < <(sed -n -E \
	's/^fuzz_wheel: stats ops=([0-9]+) seconds=([0-9.]+) ops_per_s=([0-9]+).*/\1 \2 \3/p' \
	"$LOG" | tail -n 1)
cov=$(grep -E '^#[0-9]+' "$LOG" | tail -n 1 |
	sed -n -E 's/.*cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+).*/cov \1 ft \2 corpus \3/p')
execs=$(sed -n -E 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$LOG")

if [ "$rc" != 0 ] || [ "$crashes" != 0 ] || [ -z "${ops:-}" ]; then
	grep -E 'VIOLATION|^fuzz_wheel: now|ERROR: (AddressSanitizer|libFuzzer)|runtime error|WARNING: WARN_ON' \
		"$LOG" | head -n 5
	[ "$crashes" = 0 ] || echo "fuzz: crash input(s) in $ART; rerun: $OUT/fuzz_wheel <file>"
	[ "$crashes" != 0 ] || crashes=1
	echo "fuzz: ${ops:-?} ops in ${secs:-?} s (${rate:-?} ops/s), $crashes crashes (exit $rc, log $LOG)"
	exit 1
fi
echo "fuzz: $ops ops in $secs s ($rate ops/s), 0 crashes (${cov:-no cov}, ${execs:-?} inputs, log $LOG)"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench` / `make bench-smoke`.
#
#   scripts/bench/bench.sh [--smoke] [--out DIR]
#
# 1. The wheel microbenchmark (userspace, wheelbench: wall ns/pair and
#    callgrind instructions/pair for carousel, rbtree and heap).
# 2. One VM (CAROUSEL_BENCH_KERNEL, default 6.12) running guest.sh: rate
#    accuracy and kernel memory of carousel, htb, fq (and pfifo).
# 3. report.py: the JSON files, README.md and the PNG plots.
#
# Full run: results in docs/bench/.  --smoke: small sizes, results in
# build/bench-smoke/, and report.py --check verifies that every output is
# well formed.  Neither ever judges a figure; the exit status is non-zero
# only if something did not run or produced malformed output.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"

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

echo "bench: wheel microbenchmark"
make -s -C scripts/bench
python3 scripts/bench/wheel.py --bin scripts/bench/wheelbench --out "$OUT/wheel.json" $SMOKE

echo "bench: in-kernel benchmarks on $KERNEL"
kver=$(bash scripts/vm.sh --resolve "$KERNEL")
ko=$(bash scripts/build-module.sh "$kver")
make -s -C tc
# A results dir the guest can write (not under /tmp for a clone there).
RES=$(mktemp -d "$(bash scripts/vm.sh --results-base)/bench.XXXXXX")
export CAROUSEL_RESULTS=$RES
CONSOLE=$RES/$kver.console.log

# guest: one VM running guest.sh; sets rc.  `|| rc=$?`: under errexit and
# pipefail a bare failing pipeline would end the script here, with
# vm.sh's status and without a word of why.
guest() {
	rc=0
	rm -rf "$RES/bench"
	bash scripts/vm.sh --console "$CONSOLE" "$kver" -- \
		bash scripts/bench/guest.sh "$RES/bench" "$ko" $SMOKE |
		tee "$RES/guest.log" || rc=$?
}

guest
# 255 is a guest that left no exit status.  One more VM, said out loud,
# only for the one emulator cause known here: "Oops: int3", QEMU's race
# with the kernel patching a static branch while the other vCPU runs it
# (the module has no static branch; vm.sh holds the key it was seen on).
# A VM that died for any other reason, or with no reason on its console,
# fails at once: an unexplained death may be the code under test.
if [ "$rc" = 255 ] && grep -q 'Oops: int3' "$CONSOLE"; then
	mv "$CONSOLE" "$CONSOLE.1"
	echo "bench: RETRY: the VM ended with no exit status (Oops: int3, console: $CONSOLE.1); once more" >&2
	guest
fi
[ "$rc" = 0 ] || { echo "bench: guest failed (exit $rc), see $RES" >&2; exit 1; }

# Debian's python3-matplotlib lives under /usr/bin/python3, which may not be
# the python3 first in PATH (pyenv).
PY=python3
"$PY" -c 'import matplotlib' 2>/dev/null || PY=/usr/bin/python3
"$PY" scripts/bench/report.py --guest "$RES/bench" --out "$OUT" --kernel "$kver" \
	${SMOKE:+--check}
echo "bench: results in $OUT"

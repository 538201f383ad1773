#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make bench` / `make bench-smoke`.
#
#   scripts/bench/bench.sh [--smoke] [--out DIR]
#
# 1. The wheel microbenchmark (userspace, wheelbench: wall ns/pair and
#    callgrind instructions/pair for carousel, rbtree and heap).
# 2. One VM (CAROUSEL_BENCH_KERNEL, default 6.12) running bench-guest.sh: rate
#    accuracy and kernel memory of carousel, htb, fq (and pfifo).
# 3. insnbench.sh: another VM (one vCPU, QEMU's -icount, the insncount
#    plugin) counting guest instructions per packet: insn.json, insn.md.
# 4. report.py: the JSON files, README.md and the PNG plots.
#
# Full run: results in docs/bench/.  --smoke: small sizes, results in
# build/bench-smoke/, and report.py --check verifies that every output is
# well formed.  Neither ever judges a figure; the exit status is non-zero
# only if something did not run or produced malformed output.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
# shellcheck source=scripts/lib/vmresult.sh
source scripts/lib/vmresult.sh

# shellcheck source=scripts/bench/benchargs.sh
source scripts/bench/benchargs.sh "$@"

echo "bench: wheel microbenchmark"
make -s -C scripts/bench
python3 scripts/bench/wheel.py --bin scripts/bench/wheelbench --out "$OUT/wheel.json" $SMOKE

echo "bench: in-kernel benchmarks on $KERNEL"
kver=$(bash scripts/lib/vm.sh --resolve "$KERNEL")
ko=$(bash scripts/build/module.sh "$kver")
make -s -C tc
# A results dir the guest can write (not under /tmp for a clone there).
RES=$(mktemp -d "$(bash scripts/lib/vm.sh --results-base)/bench.XXXXXX")
export CAROUSEL_RESULTS=$RES
CONSOLE=$RES/$kver.console.log

# One VM running bench-guest.sh, which writes $RES/bench/done last.  If it
# dies with QEMU's "Oops: int3" race, vmr_boot boots it once more and says
# so on a RETRY: line; any other death fails.
rm -rf "$RES/bench"
vmr_boot "$CONSOLE" "$RES/guest.log" "$RES/bench/done" "$kver" \
	bash scripts/bench/bench-guest.sh "$RES/bench" "$ko" $SMOKE
if [ "$VMR_RC" != 0 ] || [ ! -e "$RES/bench/done" ]; then
	echo "bench: guest failed (vm.sh exit $VMR_RC$([ -e "$RES/bench/done" ] || echo ", no end")): $(vmr_why "$CONSOLE"); see $RES" >&2
	exit 1
fi

echo "bench: instructions per packet on $KERNEL"
bash scripts/bench/insnbench.sh $SMOKE --out "$OUT"

# Debian's python3-matplotlib lives under /usr/bin/python3, which may not be
# the python3 first in PATH (pyenv).
PY=python3
"$PY" -c 'import matplotlib' 2>/dev/null || PY=/usr/bin/python3
"$PY" scripts/bench/report.py --guest "$RES/bench" --out "$OUT" --kernel "$kver" \
	${SMOKE:+--check}
echo "bench: results in $OUT"

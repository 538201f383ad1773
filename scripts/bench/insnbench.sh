#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The deterministic per-packet cost: guest instructions per packet of
# carousel, htb, fq, fq_codel and pfifo (and noqueue, the path without a
# qdisc), counted by the insncount QEMU plugin in one boot.
#
#   scripts/bench/insnbench.sh [--smoke] [--out DIR]
#
# One VM of one vCPU (the plugin's counters are not atomic) under
# `-icount shift=0,sleep=off`, so that the guest's timer interrupts come at
# fixed instruction counts whatever the host's load, with nokaslr, runs
# insnbench-guest.sh; insnreport.py turns its windows into per-packet
# counts, (window(2K) - window(K)) / K, and a per-function breakdown.
# Writes DIR/insn.json and DIR/insn.md, and insnlines.py's breakdown of
# the module's instructions by source line, DIR/insn-lines.md (DIR: docs/bench, or
# build/bench-smoke with --smoke, which runs toy sizes and checks only
# that everything ran).  Environment: CAROUSEL_BENCH_KERNEL (6.12), and
# the guest's CAROUSEL_INSN_* (insnbench-guest.sh).
#
# docs/bench/README.md (section 2) has the figures, docs/design.md ("Per-
# packet cost") what they say about the data path.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
# shellcheck source=scripts/lib/vmresult.sh
source scripts/lib/vmresult.sh

# shellcheck source=scripts/bench/benchargs.sh
source scripts/bench/benchargs.sh "$@"

so=$(bash scripts/build/qemu-plugin.sh)
mkdir -p build/bench
gcc -O2 -Wall -Wextra -Werror -o build/bench/insnmark scripts/bench/insnmark.c
make -s -C scripts/bench prio.bpf.o
kver=$(bash scripts/lib/vm.sh --resolve "$KERNEL")
ko=$(bash scripts/build/module.sh "$kver")
make -s -C tc
RES=$(mktemp -d "$(bash scripts/lib/vm.sh --results-base)/insn.XXXXXX")
export CAROUSEL_RESULTS=$RES
export CAROUSEL_VM_CPUS=1 CAROUSEL_VM_RETRY_CPUS=1
export CAROUSEL_VM_APPEND=nokaslr
# the crowd of a million packets holds about 1 GiB
export CAROUSEL_VM_MEM=${CAROUSEL_VM_MEM:-4G}
export CAROUSEL_VM_QEMU_OPTS="-icount shift=0,sleep=off -plugin $so,out=$RES/windows.txt,pertb=on"
if [ -n "$SMOKE" ]; then
	export CAROUSEL_INSN_CLASSES=${CAROUSEL_INSN_CLASSES:-1 100}
	export CAROUSEL_INSN_PKTS=${CAROUSEL_INSN_PKTS:-1000}
	export CAROUSEL_INSN_REPS=${CAROUSEL_INSN_REPS:-1}
	export CAROUSEL_INSN_HASH=${CAROUSEL_INSN_HASH:-hash}
	export CAROUSEL_INSN_BACKLOG_N=${CAROUSEL_INSN_BACKLOG_N:-50}
	export CAROUSEL_INSN_BACKLOG_PKTS=${CAROUSEL_INSN_BACKLOG_PKTS:-500}
	export CAROUSEL_INSN_CROWD=${CAROUSEL_INSN_CROWD-4096}
	export CAROUSEL_INSN_TCP_N=${CAROUSEL_INSN_TCP_N:-10}
	export CAROUSEL_INSN_TCP_BYTES=${CAROUSEL_INSN_TCP_BYTES:-16384}
fi

echo "insnbench: $kver, one vCPU, QEMU's -icount and $so"
t0=$(date +%s)
vmr_boot "$RES/$kver.console.log" "$RES/guest.log" "$RES/insn/done" "$kver" \
	bash scripts/bench/insnbench-guest.sh "$RES/insn" "$ko" "$REPO/scripts/bench/prio.bpf.o"
if [ "$VMR_RC" != 0 ] || [ ! -e "$RES/insn/done" ]; then
	echo "insnbench: guest failed (vm.sh exit $VMR_RC): $(vmr_why "$RES/$kver.console.log"); see $RES" >&2
	exit 1
fi
echo "insnbench: the VM took $(( $(date +%s) - t0 )) s"
python3 scripts/bench/insnreport.py --plan "$RES/insn/plan.txt" --windows "$RES/windows.txt" \
	--kallsyms "$RES/insn/kallsyms.txt" --crowd "$RES/insn/crowd.txt" \
	--kernel "$kver" --json "$OUT/insn.json" --md "$OUT/insn.md"
# The module's share by source line (a reading aid; the figures above
# are the results).
python3 scripts/bench/insnlines.py --plan "$RES/insn/plan.txt" --windows "$RES/windows.txt" \
	--kallsyms "$RES/insn/kallsyms.txt" --ko "$ko" --md "$OUT/insn-lines.md"
echo "insnbench: results in $OUT/insn.json and $OUT/insn.md, by source line in $OUT/insn-lines.md"

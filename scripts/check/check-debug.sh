#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check-debug`: the selftests on a debug kernel (KASAN, kmemleak,
# lockdep, DEBUG_ATOMIC_SLEEP, debugobjects), never part of `make check`.
#
#   scripts/check/check-debug.sh                 build (once), boot, test, report
#   scripts/check/check-debug.sh --report DIR    only step 4, on the results of an
#                                          earlier run (DIR)
#
#   1. scripts/build/debug-kernel.sh: Debian's linux-source-6.1 with
#      scripts/build/debug-kernel.config, built once into
#      ~/.cache/sch_carousel/debug-kernel/ (reused afterwards; the first build
#      takes about an hour on the shared 2-core box, nice 19, -j2);
#   2. a W=1 build of the module against that tree into build/debug/ (any
#      warning fails);
#   3. boots the tree's bzImage with scripts/lib/vm.sh (CAROUSEL_VM_KERNEL) and
#      runs scripts/check/check-debug-guest.sh there: selftests/run.sh, then two
#      kmemleak scans a few seconds apart;
#   4. reads the guest's kernel log and kmemleak reports from the results dir
#      and classifies them.
#
# Verdict (the exit code): 0 KASAN reports, 0 lockdep reports, 0 ODEBUG,
# 0 kmemleak reports involving our code, no other BUG:/WARNING:/sleeping-in-
# atomic splat, and a VM that reached the end.  Selftest failures are listed
# but do not fail it (the debug kernel under TCG is ~5-10x slower and the
# rate/latency tests' tolerances are set for the plain kernel) unless
# CAROUSEL_DEBUG_STRICT=1.
#
# A kmemleak report "involves our code" when a frame of its backtrace is in
# sch_carousel, or is an unsymbolised module address: run.sh unloads the
# module before the final scan, and ours is the only module this kernel
# ever loads (everything else is built in).  Reports whose backtrace is in
# the qdisc/classifier core are listed apart, for review; the rest are the
# kernel's own.
#
# The guest boots with panic_on_warn=0 (vm.sh's default is 1) and
# kasan_multi_shot, so one slow run collects every splat instead of stopping
# at the first; CAROUSEL_DEBUG_PANIC_ON_WARN=1 restores the panic.
#
# Environment:
#   CAROUSEL_TESTS                 only these selftests (see selftests/run.sh)
#   CAROUSEL_DEBUG_TIMEOUT_SCALE   multiply every test's "# timeout:" and
#                                  lib.sh's busywait limits (6)
#   CAROUSEL_DEBUG_STRICT          1: selftest failures fail the check too
#   CAROUSEL_DEBUG_PANIC_ON_WARN   1: keep panic_on_warn=1
#   CAROUSEL_QEMU_WAIT             max seconds to wait until at most one other
#                                  qemu runs (600)
#   CAROUSEL_RESULTS               results dir (default
#                                  build/results/check-debug-<date>-<pid>)
#   CAROUSEL_VM_CPUS (2), CAROUSEL_VM_MEM (3G), CAROUSEL_VM_TIMEOUT (sum of
#   the scaled test timeouts + 20 min) and the rest of scripts/lib/vm.sh's;
#   CAROUSEL_DEBUG_KERNEL_DIR, CAROUSEL_DEBUG_JOBS: scripts/build/debug-kernel.sh.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO" || exit 1
# shellcheck source=scripts/lib/summary.sh
source scripts/lib/summary.sh
# shellcheck source=scripts/lib/vmresult.sh
source scripts/lib/vmresult.sh
CACHE=${CAROUSEL_DEBUG_KERNEL_DIR:-$HOME/.cache/sch_carousel/debug-kernel}

REPORT_ONLY=
if [ "${1:-}" = --report ]; then
	[ -d "${2:-}" ] || { echo "usage: $0 [--report RESULTS_DIR]" >&2; exit 2; }
	REPORT_ONLY=1
	CAROUSEL_RESULTS=$2
fi
RES=${CAROUSEL_RESULTS:-$(bash scripts/lib/vm.sh --results-base)/check-debug-$(date +%Y%m%d-%H%M%S)-$$}
mkdir -p "$RES" || exit 1
RES=$(cd "$RES" && pwd -P)
if [ -z "$REPORT_ONLY" ]; then
	mkdir -p "$REPO/build/results" && ln -sfn "$RES" "$REPO/build/results/latest-debug" 2>/dev/null
fi
export CAROUSEL_RESULTS=$RES

die() { say "check-debug: $*"; say "check-debug: FAIL"; exit 1; }

# Steps 1-3; --report skips to the results.
if [ -z "$REPORT_ONLY" ]; then
	# ---------------------------------------------------------------- kernel
	hr "debug kernel"
	k0=$(date +%s)
	TREE=$(bash scripts/build/debug-kernel.sh "$RES/kernel.build.log") ||
		die "debug kernel build failed: $RES/kernel.build.log"
	KIMG=$TREE/arch/x86/boot/bzImage
	KREL=$(cat "$TREE/include/config/kernel.release") || die "no kernel.release in $TREE"
	say "$KREL: $KIMG (ready after $(( $(date +%s) - k0 ))s)"

	# ---------------------------------------------------------------- module
	# As scripts/build/module.sh, with the debug tree as KDIR.
	hr "module (W=1)"
	d=build/debug
	mkdir -p "$d"
	for f in Kbuild sch_carousel.c sch_carousel.h carousel_compat.h carousel_wheel.h include; do
		ln -sfn "../../$f" "$d/$f"
	done
	blog=$RES/debug.build.log
	rc=0
	make -C "$TREE" M="$REPO/$d" W=1 modules >"$blog" 2>&1 || rc=$?
	if [ "$rc" != 0 ] || grep -qiE 'warning:|error:' "$blog"; then
		grep -iE -A3 'warning:|error:' "$blog" | head -n 40
		die "module build failed or warned (W=1): $blog"
	fi
	KO=$REPO/$d/sch_carousel.ko
	say "built $KO"

	# ---------------------------------------------------------------- tests
	# run.sh takes each test's limit from its "# timeout: N" line; every test has
	# one, so CAROUSEL_TEST_TIMEOUT alone changes nothing.  Run copies with the
	# limit scaled (CAROUSEL_TESTS_DIR); lib.sh is a symlink, and it finds the
	# repo's tools through its own real path.
	SCALE=${CAROUSEL_DEBUG_TIMEOUT_SCALE:-6}
	TD=$RES/tests
	rm -rf "$TD" && mkdir -p "$TD"
	ln -s "$REPO/selftests/lib.sh" "$TD/lib.sh"
	total_tmo=0
	for t in selftests/[0-9][0-9]-*.sh; do
		n=$(head -n 30 "$t" | sed -n 's/^#[[:space:]]*timeout:[[:space:]]*\([0-9][0-9]*\).*/\1/p' | head -n1)
		n=${n:-300}
		sed "1,30s/^\(#[[:space:]]*timeout:[[:space:]]*\)[0-9][0-9]*/\1$((n * SCALE))/" "$t" >"$TD/${t##*/}"
		name=${t##*/}; name=${name%.sh}
		keep=1
		if [ -n "${CAROUSEL_TESTS:-}" ]; then
			keep=0
			for pat in ${CAROUSEL_TESTS//,/ }; do
				# shellcheck disable=SC2053
				if [[ $name == $pat ]] || [[ $name =~ $pat ]]; then keep=1; break; fi
			done
		fi
		[ "$keep" = 0 ] || total_tmo=$((total_tmo + n * SCALE))
	done
	# The same factor for lib.sh's busywait limits (a sender or server that
	# must come up within a few seconds on the plain kernel).
	export CAROUSEL_TESTS_DIR=$TD CAROUSEL_TEST_TIMEOUT=$((300 * SCALE)) CAROUSEL_WAIT_SCALE=$SCALE
	[ -e selftests/23-churn.sh ] || say "note: selftests/23-churn.sh does not exist on this branch: no churn test"

	# ---------------------------------------------------------------- VM
	# Never two of our VMs at once; and wait (a while) until at most one other
	# qemu runs: the box has 2 cores and other engineers' timing tests.
	exec 8>"$CACHE/.vm-lock"
	flock 8
	others() { pgrep -c -f '^[^ ]*qemu-system' 2>/dev/null || true; }
	waited=0 max=${CAROUSEL_QEMU_WAIT:-600}
	while [ "$(others)" -gt 1 ] && [ "$waited" -lt "$max" ]; do
		say "$(others) other qemu running: waiting (${waited}s of ${max}s)"
		sleep 30
		waited=$((waited + 30))
	done

	append="log_buf_len=8M kasan_multi_shot"
	[ "${CAROUSEL_DEBUG_PANIC_ON_WARN:-0}" = 1 ] || append+=" panic_on_warn=0"
	export CAROUSEL_VM_APPEND="$append ${CAROUSEL_VM_APPEND:-}"
	export CAROUSEL_VM_MEM=${CAROUSEL_VM_MEM:-3G}
	export CAROUSEL_VM_TIMEOUT=${CAROUSEL_VM_TIMEOUT:-$((total_tmo + 1200))}
	# (a debug kernel boots slower: half an hour before its boot hangs)
	export CAROUSEL_VM_BOOT_TIMEOUT=${CAROUSEL_VM_BOOT_TIMEOUT:-1800}
	export CAROUSEL_VM_KERNEL=$KIMG

	# QEMU's "Oops: int3" race (vmresult.sh): the one retry, on 1 vCPU.
	export CAROUSEL_VM_RETRY_CPUS=${CAROUSEL_VM_RETRY_CPUS:-1}
	cpus=${CAROUSEL_VM_CPUS:-2}
	hr "$KREL, $cpus vCPU, test timeouts x$SCALE, VM limit ${CAROUSEL_VM_TIMEOUT}s"
	rm -f "$RES/$KREL".{tap,verdict,counts,current,out,console.log,dmesg,dmesg-end,kmemleak,kmemleak-boot,debug-done}
	CAROUSEL_VM_CPUS=$cpus vmr_boot "$RES/$KREL.console.log" "$RES/$KREL.out" "$RES/$KREL.debug-done" \
		"$KREL" bash scripts/check/check-debug-guest.sh "$KO"
	vrc=$VMR_RC vm_s=$VMR_SECS
	[ "$VMR_RETRIED" = 0 ] || cpus=$CAROUSEL_VM_RETRY_CPUS

fi

# ---------------------------------------------------------------- results
if [ -n "$REPORT_ONLY" ]; then
	KREL=$(cd "$RES" && ls -- *.tap *.console.log 2>/dev/null | sed -E 's/\.(tap|console\.log)$//' | head -n1)
	[ -n "$KREL" ] || { echo "no results in $RES" >&2; exit 2; }
	cpus=${CAROUSEL_VM_CPUS:-?} vm_s=? vrc=?
fi
hr "results (in $RES)"
FAILED=()
p=0 f=0 s=0
[ -e "$RES/$KREL.tap" ] && read -r p f s < <(vmr_tap_count "$RES/$KREL.tap")
run_s=$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' "$RES/$KREL.counts" 2>/dev/null)
REPORT+=("selftests on $KREL ($cpus vCPU): $p passed, $f failed, $s skipped (VM ${vm_s}s${run_s:+, tests ${run_s}s}, exit $vrc)")
if [ -e "$RES/$KREL.tap" ]; then
	while IFS= read -r l; do REPORT+=("$l"); done < <(vmr_tap_table "$RES/$KREL.tap" "   ")
fi
if [ ! -e "$RES/$KREL.debug-done" ]; then
	cur=$(cat "$RES/$KREL.current" 2>/dev/null)
	why=$(vmr_why "$RES/$KREL.console.log")
	FAILED+=("VM did not reach the end (exit $vrc, during ${cur:-boot}${why:+; $why}): $RES/$KREL.console.log")
fi
if [ "$f" != 0 ] && [ "${CAROUSEL_DEBUG_STRICT:-0}" = 1 ]; then
	FAILED+=("$f selftest case(s) failed (CAROUSEL_DEBUG_STRICT=1)")
fi

# The kernel log: the guest's dmesg at the end, or the console if the VM
# died first (loglevel 5 there: warnings and worse, which covers splats).
LOG=$RES/$KREL.dmesg-end
[ -s "$LOG" ] || LOG=$RES/$KREL.console.log
# Stack frames (func+0x1/0x2) name lockdep_* and kasan_* in every trace:
# only the splats' own lines count.
nonframe() { grep -vE '\+0x[0-9a-f]+/0x[0-9a-f]+' "$LOG" 2>/dev/null; }
declare -A PAT=(
	[KASAN]='KASAN'
	# lockdep's report headings; not the bare word, which its boot banner
	# ("RCU lockdep checking is enabled.") has too.
	[lockdep]='possible circular locking|possible recursive locking|inconsistent lock state|irq lock inversion|lock order detected|suspicious RCU usage|bad unlock balance|held lock freed|lock held when returning|DEBUG_LOCKS_WARN_ON|lockdep is turned off'
	[ODEBUG]='ODEBUG'
	[sleep-in-atomic]='sleeping function called from invalid context'
	[BUG]='\bBUG:'
	[WARNING]='WARNING:'
)
# Each splat: its first line up to the next splat, an "---[ end trace", or
# 80 lines; "ours" when it names sch_carousel (a frame in the module).
ALL_RE=$(IFS='|'; echo "${PAT[*]}")
splats() {	# splats CATEGORY: its splats, blank-line separated
	awk -v re="${PAT[$1]}" -v all="$ALL_RE" '
	/\+0x[0-9a-f]+\/0x[0-9a-f]+/ { if (on) { print; if (++n > 80) on = 0 } next }
	$0 ~ re { if (on) print ""; on = 1; n = 0; print; next }
	$0 ~ all || /---\[ end trace/ { if (on) { if (/end trace/) print; print ""; on = 0 } next }
	on { print; if (++n > 80) { print ""; on = 0 } }' "$LOG"
}
: >"$RES/splats.txt"
say "kernel log: $LOG"
for cat in KASAN lockdep ODEBUG sleep-in-atomic BUG WARNING; do
	lines=$(nonframe | grep -E "${PAT[$cat]}")
	n=0 ours=0
	[ -z "$lines" ] || n=$(printf '%s\n' "$lines" | wc -l)
	if [ "$n" != 0 ]; then
		sp=$(splats "$cat")
		printf '==== %s\n%s\n\n' "$cat" "$sp" >>"$RES/splats.txt"
		ours=$(printf '%s\n' "$sp" | awk 'BEGIN { RS = "" } /sch_carousel|carousel_/ { n++ } END { print n + 0 }')
	fi
	REPORT+=("$(printf '%-16s %3d line(s)%s' "$cat:" "$n" "$( [ "$ours" = 0 ] || echo ", $ours splat(s) naming sch_carousel")")")
	[ -z "$lines" ] || while IFS= read -r l; do REPORT+=("      $l"); done < <(printf '%s\n' "$lines" | head -n 12)
	[ "$n" = 0 ] || FAILED+=("$n $cat line(s) in the kernel log (see $RES/splats.txt)")
done

# kmemleak: one line per report, classified by its backtrace.
classify() {
	awk '
	function flush() {
		if (obj == "") return
		cls = ours ? "OURS" : (sched ? "net/sched (review)" : "kernel/unrelated")
		printf "%-18s %s %s comm %s:%s\n", cls, obj, size, comm, frames
		obj = ""
	}
	/^unreferenced object/ { flush(); obj = $3; size = $4 " " $5; sub(/:$/, "", size)
		comm = "?"; inbt = 0; ours = 0; sched = 0; frames = ""; nf = 0; next }
	/^ *comm "/ { comm = $2; sub(/,$/, "", comm); next }
	/^ *backtrace:/ { inbt = 1; next }
	inbt && /\[</ {
		sym = $2
		if ($0 ~ /carousel/) ours = 1
		# No symbol, in the module area: an unloaded module, i.e. ours.
		else if (sym ~ /^0xffffffff[a-f]/) { ours = 1; sym = sym "(unloaded module)" }
		if (sym ~ /qdisc|tcf_|tc_|cls_|sch_|tca_|Qdisc/) sched = 1
		if (nf < 4 && sym !~ /^(kmemleak|__kmalloc|kmalloc|kmem_cache|__kmem_cache|slab_|__kasan|kasan|__alloc|alloc_|kzalloc|kvmalloc|__kvmalloc|kmalloc_trace)/) {
			sub(/\/0x[0-9a-f]+$/, "", sym); frames = frames " " sym; nf++ }
	}
	END { flush() }' "$1"
}
for kf in kmemleak-boot kmemleak; do
	[ -e "$RES/$KREL.$kf" ] || { REPORT+=("$kf: no report file (VM died?)"); continue; }
	classify "$RES/$KREL.$kf" >"$RES/$KREL.$kf.classified"
	tot=$(wc -l <"$RES/$KREL.$kf.classified")
	n_ours=$(grep -c '^OURS' "$RES/$KREL.$kf.classified")
	n_sched=$(grep -c '^net/sched' "$RES/$KREL.$kf.classified")
	REPORT+=("$kf: $tot report(s): $n_ours ours, $n_sched net/sched to review, $((tot - n_ours - n_sched)) kernel/unrelated")
	while IFS= read -r l; do REPORT+=("      $l"); done < <(head -n 20 "$RES/$KREL.$kf.classified")
	[ "$tot" -le 20 ] || REPORT+=("      ... $RES/$KREL.$kf.classified")
	[ "$n_ours" = 0 ] || FAILED+=("$n_ours kmemleak report(s) involving sch_carousel ($RES/$KREL.$kf)")
done

for l in "${REPORT[@]}"; do say "$l"; done
say_duration
if [ "${#FAILED[@]}" = 0 ]; then
	say "check-debug: PASS (0 KASAN, 0 lockdep, 0 ODEBUG, 0 kmemleak reports of ours, no other splat)"
	exit 0
fi
for l in "${FAILED[@]}"; do say "!! $l"; done
say "check-debug: FAIL"
exit 1

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `make check`: on the host the unit tests, a run of the wheel fuzzer, the
# man page check (scripts/check/check-man.sh), checkpatch --strict
# (scripts/check/style.sh) and that every Kbuild probe has a compat-tier
# selftest; then, for each kernel, a W=1 build of the module with sparse
# and one VM running the selftests of its tier (selftests/run.sh); last,
# the benchmarks at toy sizes (scripts/bench/bench.sh --smoke).
# Results come from the files the guest writes in the shared results dir,
# never from the console.  Ends with one line, "N passed, N failed, N
# skipped", and exits non-zero if anything failed, a build warned or a VM
# died.
#
# Environment:
#   CAROUSEL_KERNELS   kernels to test (default "6.1 6.12"; prefixes or full
#                      releases, see scripts/lib/vm.sh)
#   CAROUSEL_TIERS     the selftest tier of each kernel, "KERNEL:TIER ..."
#                      (default "6.1:compat 6.12:main"; make check-full: every
#                      kernel full; a kernel not named: full).  Tiers are in
#                      selftests/tools/tier.sh: compat is what a kernel's
#                      version can change, main the rest of make check, full
#                      adds the rest (CI runs 6.12 full).
#   CAROUSEL_TESTS     only selftests matching these globs/regexes ("01 0[2-4]-*"),
#                      whatever their tier
#   CAROUSEL_RESULTS   results dir (default build/results/check-<date>-<pid>;
#                      build/results/latest points to the last one)
#   CAROUSEL_MODULE    "none": no build, tests run without the module (harness
#                      development only)
#   CAROUSEL_SKIP_UNIT 1: skip the unit tests
#   CAROUSEL_FUZZ_SECONDS  how long the wheel fuzzer runs (default 60; 0 skips)
#   CAROUSEL_SKIP_BENCH 1: skip bench-smoke (scripts/bench/bench.sh --smoke)
#   and those of scripts/lib/vm.sh (CAROUSEL_VM_TIMEOUT ...) and selftests/run.sh.
#
# Counting: each unit test, the fuzzer run (one), the man page, style and
# compat coverage checks (one each), each TAP case of each kernel,
# bench-smoke (one); a failed build and a VM that died (no verdict file)
# count one failure each.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO" || exit 1
# shellcheck source=scripts/lib/summary.sh
source scripts/lib/summary.sh
# shellcheck source=scripts/lib/vmresult.sh
source scripts/lib/vmresult.sh

RES=${CAROUSEL_RESULTS:-$(bash scripts/lib/vm.sh --results-base)/check-$(date +%Y%m%d-%H%M%S)-$$}
# One VM runs every selftest of a kernel: about 20 minutes under TCG (a
# slow CI host has taken 26), so vm.sh's default limit of 30 would leave
# too little headroom; 40 still leaves CI's 90 room to report a guest
# that hung (one CI run's 6.1 guest hung and its limit, then 60, took
# the run to 88 minutes).
export CAROUSEL_VM_TIMEOUT=${CAROUSEL_VM_TIMEOUT:-2400}
mkdir -p "$RES" || exit 1
RES=$(cd "$RES" && pwd -P)
mkdir -p "$REPO/build/results" && ln -sfn "$RES" "$REPO/build/results/latest" 2>/dev/null || true
export CAROUSEL_RESULTS=$RES

# ---------------------------------------------------------------- unit tests
if [ -f selftests/unit/Makefile ] && [ "${CAROUSEL_SKIP_UNIT:-0}" != 1 ]; then
	hr "unit tests"
	make -C selftests/unit run 2>&1 | tee "$RES/unit.log"
	urc=${PIPESTATUS[0]}
	# Prefer the "N passed, N failed[, N skipped]" lines; else count TAP.
	# Several binaries (plain, sanitizers) may each print one: add them up.
	read -r up uf us < <(
		sed -n -E 's/^[#[:space:]]*([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?.*$/\1 \2 \4/p' \
			"$RES/unit.log" | awk 'NF { p += $1; f += $2; s += $3; n++ }
				END { if (n) print p, f, s + 0 }')
	if [ -z "${up:-}" ]; then
		read -r up uf us < <(vmr_tap_count "$RES/unit.log")
		if [ "$((up + uf + us))" = 0 ]; then
			up=0 uf=0 us=0
			[ "$urc" = 0 ] && up=1 || uf=1
		fi
	fi
	us=${us:-0}
	note=
	if [ "$urc" != 0 ] && [ "$uf" = 0 ]; then
		uf=1
		note=" (make exited $urc)"
	fi
	PASS=$((PASS + up)) FAIL=$((FAIL + uf)) SKIP=$((SKIP + us))
	REPORT+=("unit: $up passed, $uf failed, $us skipped$note")
fi

# ---------------------------------------------------------------- fuzzer
# selftests/fuzz/run.sh: the wheel against its model under libFuzzer, in
# userspace; one pass, or one failure (a crash, a failed build).
# carousel-cni's Go tests: configuration, validation, the burst cap (its
# behaviour on a kernel is selftest 37's).
if [ -f tc/cni/Makefile ] && [ "${CAROUSEL_SKIP_UNIT:-0}" != 1 ]; then
	hr "carousel-cni unit tests"
	if make -s -C tc/cni test 2>&1 | tee "$RES/cni-unit.log"; then
		PASS=$((PASS + 1))
		REPORT+=("cni unit: PASS  go vet and go test in tc/cni")
	else
		FAIL=$((FAIL + 1))
		REPORT+=("cni unit: FAIL  $RES/cni-unit.log")
	fi
fi

FUZZ_S=${CAROUSEL_FUZZ_SECONDS:-60}
if [ -f selftests/fuzz/run.sh ] && [ "$FUZZ_S" != 0 ]; then
	hr "wheel fuzzer, ${FUZZ_S}s"
	bash selftests/fuzz/run.sh "$FUZZ_S" 2>&1 | tee "$RES/fuzz.log"
	frc=${PIPESTATUS[0]}
	cp build/fuzz/fuzz.log "$RES/fuzz.libfuzzer.log" 2>/dev/null
	fline=$(sed -n 's/^fuzz: //p' "$RES/fuzz.log" | tail -n 1)
	if [ "$frc" = 0 ]; then
		PASS=$((PASS + 1))
		REPORT+=("fuzz: PASS  $fline")
	else
		FAIL=$((FAIL + 1))
		REPORT+=("fuzz: FAIL  ${fline:-no summary} (exit $frc)")
	fi
fi

# ---------------------------------------------------------------- man page
# On the host: tc-carousel(8) renders with no groff or man warning.
hr "man page"
if bash scripts/check/check-man.sh 2>&1 | tee "$RES/man.log"; then
	PASS=$((PASS + 1))
	REPORT+=("man: 1 passed, 0 failed, 0 skipped")
else
	FAIL=$((FAIL + 1))
	REPORT+=("man: 0 passed, 1 failed, 0 skipped (tc-carousel.8 warns: $RES/man.log)")
fi

# ---------------------------------------------------------------- kernels
# build_module KVER: W=1 build with sparse (C=2) in build/KVER/; any
# warning of either fails it.
build_module() {
	CAROUSEL_SPARSE=1 bash scripts/build/module.sh "$1" "$RES/$1.build.log" >/dev/null
}

# tier_of KVER: the tier CAROUSEL_TIERS gives that kernel (full if none).
TIERS=${CAROUSEL_TIERS-6.1:compat 6.12:main}
tier_of() {
	local e

	for e in $TIERS; do
		if [ "$(bash scripts/lib/vm.sh --resolve "${e%%:*}" 2>/dev/null)" = "$1" ]; then
			echo "${e#*:}"
			return
		fi
	done
	echo full
}

# ---------------------------------------------------------------- style
# checkpatch --strict here; sparse runs in each kernel's build below.
hr "style"
if CAROUSEL_STYLE_SPARSE=0 bash scripts/check/style.sh 2>&1 | tee "$RES/style.log"; then
	PASS=$((PASS + 1))
	REPORT+=("style: PASS  checkpatch --strict clean; sparse runs in each build")
else
	FAIL=$((FAIL + 1))
	REPORT+=("style: FAIL  checkpatch --strict: $RES/style.log")
fi

# ---------------------------------------------------------------- compat lint
# Every selftest names a tier run.sh knows, and every kernel difference
# Kbuild probes runs on every kernel: it is named on the "# compat:" line
# of a compat-tier selftest, or by the install check (both kernels in
# .ci/run).  Else a new probe could land with its only test on 6.12.
hr "compat coverage"
# shellcheck source=selftests/tools/tier.sh
source selftests/tools/tier.sh
lint_ok=1
for t in selftests/[0-9][0-9]-*.sh; do
	tier=$(head -n 30 "$t" | sed -n 's/^#[[:space:]]*tier:[[:space:]]*\([a-z]*\).*/\1/p' | head -n1)
	if [ -z "$(tier_rank "$tier")" ]; then
		say "${t##*/}: tier '${tier}' is not compat, main or rest"
		lint_ok=0
	fi
done
for have in $(grep -o 'CAROUSEL_HAVE_[A-Z0-9_]*' Kbuild | sort -u); do
	where=$(grep -l -E "^# compat:.*\b$have\b" selftests/[0-9][0-9]-*.sh scripts/check/check-install-guest.sh 2>/dev/null |
		while read -r f; do
			case $f in
			selftests/*) grep -q -E '^# tier:[[:space:]]*compat' "$f" || continue ;;
			esac
			echo "${f##*/}"
		done | paste -sd' ')
	say "$have: ${where:-NOTHING}"
	[ -n "$where" ] || lint_ok=0
done
if [ "$lint_ok" = 1 ]; then
	PASS=$((PASS + 1))
	REPORT+=("compat coverage: PASS  every selftest has a tier; every Kbuild probe is named by a compat-tier test")
else
	FAIL=$((FAIL + 1))
	REPORT+=("compat coverage: FAIL  a selftest without a known tier, or a Kbuild probe no compat-tier test names (the stage above says which)")
fi

KERNELS=${CAROUSEL_KERNELS:-6.1 6.12}
for k in $KERNELS; do
	if ! kver=$(bash scripts/lib/vm.sh --resolve "$k"); then
		FAIL=$((FAIL + 1))
		REPORT+=("== $k: FAIL: no such kernel installed")
		continue
	fi
	tier=$(tier_of "$kver")
	hr "$kver, tier $tier"
	runarg=()
	if [ "${CAROUSEL_MODULE:-}" = none ]; then
		runarg=(--no-module)
	else
		say "building build/$kver (W=1, sparse)"
		b0=$(date +%s)
		if ! build_module "$kver"; then
			FAIL=$((FAIL + 1))
			REPORT+=("== $kver: FAIL: module build failed or warned (W=1, sparse): $RES/$kver.build.log")
			tail -n 20 "$RES/$kver.build.log"
			continue
		fi
		say "built in $(( $(date +%s) - b0 ))s"
	fi

	rm -f "$RES/$kver".{tap,verdict,counts,current,out,console.log}
	export CAROUSEL_TIER=$tier
	vmr_boot "$RES/$kver.console.log" "$RES/$kver.out" "$RES/$kver.verdict" "$kver" \
		bash selftests/run.sh "${runarg[@]}"
	vrc=$VMR_RC vm_s=$VMR_SECS

	p=0 f=0 s=0 died=0
	[ -e "$RES/$kver.tap" ] && read -r p f s < <(vmr_tap_count "$RES/$kver.tap")
	verdict=$(cat "$RES/$kver.verdict" 2>/dev/null)
	run_s=$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' "$RES/$kver.counts" 2>/dev/null)
	planned=$(sed -n 's/.*planned=\([0-9]*\).*/\1/p' "$RES/$kver.counts" 2>/dev/null)
	extra=
	if [ -z "$verdict" ]; then
		# No verdict: the VM died (panic on WARN/oops, timeout, vng error).
		died=1
		f=$((f + 1))
		cur=$(cat "$RES/$kver.current" 2>/dev/null)
		why=$(vmr_why "$RES/$kver.console.log")
		extra="VM DIED (exit $vrc) during ${cur:-boot}${why:+: $why}"
		verdict=FAIL
	elif [ "$verdict" = PASS ] && { [ "$vrc" != 0 ] || [ "$f" != 0 ]; }; then
		f=$((f + 1))
		extra="verdict PASS but VM exit $vrc, $f failed case(s)"
		verdict=FAIL
	elif [ "$verdict" != PASS ] && [ "$f" = 0 ]; then
		f=1
		extra="verdict $verdict with no failed case"
		verdict=FAIL
	elif [ -n "$planned" ] && [ "$((p + f + s))" != "$planned" ]; then
		extra="$((p + f + s)) cases reported, $planned planned"
		f=$((f + 1))
		verdict=FAIL
	fi
	PASS=$((PASS + p)) FAIL=$((FAIL + f)) SKIP=$((SKIP + s))
	timing="VM ${vm_s}s"
	[ -z "$run_s" ] || timing+=": tests ${run_s}s, boot+shutdown $(awk -v a="$vm_s" -v b="$run_s" 'BEGIN { printf "%.1f", a - b }')s"
	REPORT+=("== $kver, tier $tier: $verdict  $p passed, $f failed, $s skipped  ($timing)")
	[ "$VMR_RETRIED" = 0 ] || REPORT+=("   (booted twice: $(grep -m1 '^RETRY:' "$RES/$kver.out"))")
	[ -e "$RES/$kver.tap" ] && while IFS= read -r l; do REPORT+=("$l"); done < <(vmr_tap_table "$RES/$kver.tap" "   ")
	[ -z "$extra" ] || REPORT+=("   !! $extra" "   console: $RES/$kver.console.log")
	if [ "$died" = 1 ]; then
		# CI may keep only the end of our output: the kernel's complaint
		# (a hung guest may have said only that a CPU or task stalled)
		# and what the guest printed last go into the summary.
		while IFS= read -r l; do
			REPORT+=("   | $l")
		done < <({ grep -m4 -E "Kernel panic|$VMR_BAD_RE|detected stall|blocked for more than" \
				"$RES/$kver.console.log"
			   grep -v '^\s*$' "$RES/$kver.out" | tail -n 8; } | cut -c1-160)
	fi
done

# ---------------------------------------------------------------- bench smoke
# `make bench-smoke`: the benchmarks at toy sizes (the wheel on the host, one
# VM on the last kernel tested) run and their output is well formed.  One
# pass or one failure; a figure never fails it.
if [ "${CAROUSEL_SKIP_BENCH:-0}" != 1 ] && [ "${CAROUSEL_MODULE:-}" != none ]; then
	bk=${KERNELS##* }
	hr "bench-smoke ($bk)"
	b0=$(date +%s)
	CAROUSEL_BENCH_KERNEL=$bk bash scripts/bench/bench.sh --smoke 2>&1 |
		tee "$RES/bench-smoke.log"
	brc=${PIPESTATUS[0]}
	bline="$(( $(date +%s) - b0 ))s, output in build/bench-smoke/"
	! grep -q '^RETRY:' "$RES/bench-smoke.log" ||
		bline+=" (its first VM died: see the RETRY line in the log)"
	if [ "$brc" = 0 ]; then
		PASS=$((PASS + 1))
		REPORT+=("bench-smoke: PASS  $bline")
	else
		FAIL=$((FAIL + 1))
		REPORT+=("bench-smoke: FAIL  (exit $brc) $RES/bench-smoke.log")
		# CI may keep only the end of our output: why it failed goes into
		# the summary, the kernel's complaint first, then the log's end.
		while IFS= read -r l; do
			REPORT+=("   | $l")
		done < <({ grep -m4 -E "Kernel panic|RIP:|$VMR_BAD_RE" "$RES/bench-smoke.log"
			   tail -n 8 "$RES/bench-smoke.log"; } | cut -c1-160)
	fi
fi

# ---------------------------------------------------------------- summary
summary "$RES"

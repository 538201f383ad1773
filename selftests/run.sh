#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the selftests inside the test VM, as root, and print KTAP.
#
#   selftests/run.sh [KO | --no-module]
#
# KO defaults to build/$(uname -r)/sch_carousel.ko; --no-module runs the tests
# without loading it (harness development; the load/unload cases SKIP).
#
# Cases, in order:
#   1          insmod sch_carousel.ko
#   2..N+1     selftests/[0-9][0-9]-*.sh, sorted, each under a timeout
#   N+2        rmmod sch_carousel (refcount back to 0, module removable)
#   N+3        kernel log clean (no WARNING:/BUG:/Oops/... since boot: the
#              pattern in tools/bad-kernel-lines.re)
#
# A test exits 0 (pass), 4 (skip, reason via lib.sh's skip) or anything else
# (fail).  It also fails if it leaves a netns behind or if the kernel logged
# a bad line while it ran.  Its output is shown as "# " diagnostics.
#
# Results, for the host (never scraped from the console), in
# $CAROUSEL_RESULTS (default /tmp/carousel-results):
#   <kver>.tap       the KTAP above, diagnostics included
#   <kver>.counts    pass=N fail=N skip=N total=N planned=N seconds=S uptime=S
#   <kver>.verdict   one word, PASS or FAIL, written last: missing = VM died
#   <kver>.current   the case running (left behind if the VM dies)
#   <kver>.dmesg     the kernel log at the end
#   <kver>.d/<test>/ artifacts the tests saved (iperf JSON ...)
#
# Environment:
#   CAROUSEL_TIER           compat, main or full (default): only the tests
#                           of that tier and the ones before it, by their
#                           "# tier:" line (none: compat); see tools/tier.sh
#   CAROUSEL_TESTS          only tests whose name (NN-name) matches one of
#                           these space/comma separated globs or regexes; it
#                           overrides CAROUSEL_TIER's choice of tests
#   CAROUSEL_TESTS_DIR      where the NN-*.sh are (default: selftests/)
#   CAROUSEL_TEST_TIMEOUT   default per-test limit in s (300); a test may set
#                           its own with a "# timeout: N" line near its top
# The tests see the module run.sh loaded as CAROUSEL_KO (23-churn reloads it).
#
# Exit: 0 when every case passed or skipped, 1 otherwise.
set -u

SELF_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$SELF_DIR/.." && pwd)
KVER=$(uname -r)
TESTS_DIR=${CAROUSEL_TESTS_DIR:-$SELF_DIR}
DEF_TIMEOUT=${CAROUSEL_TEST_TIMEOUT:-300}
RESULTS=${CAROUSEL_RESULTS:-/tmp/carousel-results}
# A kernel line that fails the run, one extended regex shared with
# tools/kmsg.py (python's re reads it alike).  Of kmemleak it takes the
# reports ("N new suspected memory leaks") and our own line for a
# non-empty scan below, not its "initialized" banner at boot.
BAD_RE=$(<"$SELF_DIR/tools/bad-kernel-lines.re")
[ -n "$BAD_RE" ] || { echo "run.sh: no pattern in tools/bad-kernel-lines.re" >&2; exit 1; }

KO=$REPO/build/$KVER/sch_carousel.ko
LOAD=1
case ${1:-} in
--no-module) LOAD=0 ;;
-h|--help) sed -n '3,/^set -u/p' "$0" | sed '$d'; exit 0 ;;
'') ;;
*) KO=$1 ;;
esac
export CAROUSEL_KO=$KO

mkdir -p "$RESULTS" || exit 1
TAP=$RESULTS/$KVER.tap
rm -rf "$TAP" "$RESULTS/$KVER.counts" "$RESULTS/$KVER.verdict" "$RESULTS/$KVER.current" \
	"$RESULTS/$KVER.dmesg" "$RESULTS/$KVER.d"
WORK=$(mktemp -d /tmp/carousel-run.XXXXXX)

T0=${EPOCHREALTIME/./}
UPTIME0=$(cut -d' ' -f1 /proc/uptime)

# out LINE...: one KTAP line to the console and the TAP file.
out() {
	printf '%s\n' "$@" | tee -a "$TAP"
}

NUM=0 PASS=0 FAIL=0 SKIP=0
result() {	# result ok|fail|skip NAME [REASON]
	NUM=$((NUM + 1))
	case $1 in
	ok) PASS=$((PASS + 1)); out "ok $NUM $2" ;;
	skip) SKIP=$((SKIP + 1)); out "ok $NUM $2 # SKIP ${3:-}" ;;
	*) FAIL=$((FAIL + 1)); out "not ok $NUM $2${3:+ # $3}" ;;
	esac
}

# The kernel log: lines matching BAD_RE after line $1 (0: since boot).
DMESG_SEEN=0
dmesg_bad_since() {
	dmesg 2>/dev/null | tail -n +"$(($1 + 1))" | grep -E "$BAD_RE"
}
dmesg_lines() { dmesg 2>/dev/null | wc -l; }

# --- the test list -------------------------------------------------------
# shellcheck source=selftests/tools/tier.sh
source "$SELF_DIR/tools/tier.sh"
export CAROUSEL_TIER=${CAROUSEL_TIER:-full}
RUN_RANK=$(tier_rank "$CAROUSEL_TIER")
[ -n "$RUN_RANK" ] || { echo "run.sh: CAROUSEL_TIER=$CAROUSEL_TIER: not compat, main or full" >&2; exit 1; }
TESTS=()
OUT_OF_TIER=()
for t in $(LC_ALL=C ls "$TESTS_DIR" 2>/dev/null | grep -E '^[0-9][0-9]-.*\.sh$'); do
	name=${t%.sh}
	if [ -z "${CAROUSEL_TESTS:-}" ]; then
		tier=$(head -n 30 "$TESTS_DIR/$t" | sed -n 's/^#[[:space:]]*tier:[[:space:]]*\([a-z]*\).*/\1/p' | head -n1)
		rank=$(tier_rank "${tier:-compat}")
		[ -n "$rank" ] || { echo "run.sh: $t: unknown tier '$tier'" >&2; exit 1; }
		if [ "$rank" -gt "$RUN_RANK" ]; then
			OUT_OF_TIER+=("$name")
			continue
		fi
	else
		keep=0
		for pat in ${CAROUSEL_TESTS//,/ }; do
			# shellcheck disable=SC2053
			if [[ $name == $pat ]] || [[ $name =~ $pat ]]; then
				keep=1
				break
			fi
		done
		[ "$keep" = 1 ] || continue
	fi
	TESTS+=("$t")
done

# --- tc: the distro's plugins and dist tables plus ours --------------------
# TC_LIB_DIR replaces tc's lib dir, so merge them: netem's distribution
# tables and m_xt.so keep working next to our q_carousel.so.
TCLIB=$WORK/tc
mkdir -p "$TCLIB"
for f in /usr/lib/x86_64-linux-gnu/tc/* /usr/lib/tc/* "$REPO"/tc/*.so; do
	[ -e "$f" ] && ln -sf "$f" "$TCLIB/"
done
export TC_LIB_DIR=$TCLIB
export CAROUSEL_REPO=$REPO CAROUSEL_KVER=$KVER CAROUSEL_RESULTS=$RESULTS

out "TAP version 13" "1..$(( ${#TESTS[@]} + 3 ))"
out "# sch_carousel selftests on $KVER, $(nproc) CPUs, $(date -u +%FT%TZ), uptime ${UPTIME0}s"
out "# $(tc -V 2>&1 | head -n1); TC_LIB_DIR=$TC_LIB_DIR"
if [ -n "${CAROUSEL_TESTS:-}" ]; then
	out "# tests chosen by CAROUSEL_TESTS=$CAROUSEL_TESTS; in_tier parts by tier $CAROUSEL_TIER"
else
	out "# tier $CAROUSEL_TIER: ${#TESTS[@]} tests"
	[ "${#OUT_OF_TIER[@]}" = 0 ] || out "# not in tier $CAROUSEL_TIER: ${OUT_OF_TIER[*]}"
fi
[ -e "$REPO/tc/q_carousel.so" ] || out "# note: $REPO/tc/q_carousel.so missing: tc will not know carousel"

# --- 1: load ------------------------------------------------------------------
echo "insmod" >"$RESULTS/$KVER.current"
if [ "$LOAD" = 0 ]; then
	result skip "insmod sch_carousel" "--no-module"
elif [ ! -e "$KO" ]; then
	result fail "insmod sch_carousel" "$KO not found"
elif msg=$(insmod "$KO" 2>&1); then
	out "# loaded $KO ($(stat -c '%s bytes, built %y' "$KO"))"
	result ok "insmod sch_carousel"
else
	out "# insmod $KO: $msg"
	result fail "insmod sch_carousel"
fi
DMESG_SEEN=$(dmesg_lines)

# --- the tests ----------------------------------------------------------------
for t in "${TESTS[@]}"; do
	name=${t%.sh}
	path=$TESTS_DIR/$t
	echo "$name" >"$RESULTS/$KVER.current"
	tmo=$(head -n 30 "$path" | sed -n 's/^#[[:space:]]*timeout:[[:space:]]*\([0-9][0-9]*\).*/\1/p' | head -n1)
	tmo=${tmo:-$DEF_TIMEOUT}
	skipf=$WORK/skip.$name
	log=$WORK/log.$name
	: >"$log"
	ns_before=$(ip netns list 2>/dev/null | awk '{print $1}' | sort)
	out "# ---- $name (timeout ${tmo}s)"
	s0=${EPOCHREALTIME/./}
	# timeout makes its own process group: whatever the test leaves running
	# is killed below, and cannot hold our output pipe open.
	CAROUSEL_TEST_NAME=$name CAROUSEL_SKIP_FILE=$skipf \
		timeout -k 10 "$tmo" bash "$path" </dev/null >"$log" 2>&1 &
	tpid=$!
	tail -n +1 -s 0.2 -f --pid="$tpid" "$log" | sed -u 's/^/# /' | tee -a "$TAP"
	wait "$tpid"
	rc=$?
	kill -KILL -- "-$tpid" 2>/dev/null
	secs=$(awk -v a="$s0" -v b="${EPOCHREALTIME/./}" 'BEGIN { printf "%.1f", (b - a) / 1e6 }')

	why=
	ns_after=$(ip netns list 2>/dev/null | awk '{print $1}' | sort)
	leaked=$(comm -13 <(echo "$ns_before") <(echo "$ns_after") | grep . | tr '\n' ' ')
	if [ -n "$leaked" ]; then
		out "# $name: leaked netns: $leaked"
		for ns in $leaked; do ip netns del "$ns" 2>/dev/null; done
	fi
	bad=$(dmesg_bad_since "$DMESG_SEEN")
	DMESG_SEEN=$(dmesg_lines)
	if [ -n "$bad" ]; then
		printf '%s\n' "$bad" | sed 's/^/# kernel: /' | tee -a "$TAP"
	fi
	out "# $name: exit $rc after ${secs}s"

	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		result fail "$name" "timed out after ${tmo}s"
	elif [ "$rc" = 4 ]; then
		reason=$(head -n1 "$skipf" 2>/dev/null)
		if [ -n "$bad" ]; then
			result fail "$name" "kernel log"
		else
			result skip "$name" "${reason:-no reason given}"
		fi
	elif [ "$rc" != 0 ]; then
		result fail "$name" "exit $rc"
	elif [ -n "$bad" ]; then
		result fail "$name" "kernel log"
	elif [ -n "$leaked" ]; then
		result fail "$name" "leaked netns"
	else
		result ok "$name"
	fi
done

# --- N+2: unload --------------------------------------------------------------
echo "rmmod" >"$RESULTS/$KVER.current"
if [ "$LOAD" = 0 ]; then
	result skip "rmmod sch_carousel" "--no-module"
elif [ ! -d /sys/module/sch_carousel ]; then
	result fail "rmmod sch_carousel" "not loaded"
else
	ref=$(cat /sys/module/sch_carousel/refcnt 2>/dev/null)
	out "# sch_carousel refcnt before rmmod: $ref"
	if msg=$(rmmod sch_carousel 2>&1); then
		result ok "rmmod sch_carousel"
	else
		out "# rmmod: $msg" "# $(lsmod | grep -E '^(Module|sch_carousel) ')"
		result fail "rmmod sch_carousel" "refcnt $ref"
	fi
fi

# --- N+3: the whole kernel log ------------------------------------------------
echo "dmesg" >"$RESULTS/$KVER.current"
if [ -w /sys/kernel/debug/kmemleak ]; then
	echo scan >/sys/kernel/debug/kmemleak
	sleep 1
	echo scan >/sys/kernel/debug/kmemleak
	leaks=$(cat /sys/kernel/debug/kmemleak)
	[ -z "$leaks" ] || printf '%s\n' "$leaks" | head -n 40 | sed 's/^/# kmemleak: /' | tee -a "$TAP"
	[ -z "$leaks" ] || echo "kmemleak: unreferenced objects found" >/dev/kmsg
fi
dmesg >"$RESULTS/$KVER.dmesg" 2>&1
bad=$(dmesg_bad_since 0)
if [ -n "$bad" ]; then
	printf '%s\n' "$bad" | head -n 40 | sed 's/^/# kernel: /' | tee -a "$TAP"
	result fail "kernel log clean" "$(printf '%s\n' "$bad" | wc -l) bad line(s)"
else
	result ok "kernel log clean"
fi

# --- verdict --------------------------------------------------------------------
secs=$(awk -v a="$T0" -v b="${EPOCHREALTIME/./}" 'BEGIN { printf "%.1f", (b - a) / 1e6 }')
out "# $PASS passed, $FAIL failed, $SKIP skipped in ${secs}s"
out "# Totals: pass:$PASS fail:$FAIL xfail:0 xpass:0 skip:$SKIP error:0"
echo "pass=$PASS fail=$FAIL skip=$SKIP total=$NUM planned=$(( ${#TESTS[@]} + 3 )) seconds=$secs uptime=$UPTIME0" \
	>"$RESULTS/$KVER.counts"
rm -f "$RESULTS/$KVER.current"
verdict=PASS
[ "$FAIL" = 0 ] || verdict=FAIL
echo "$verdict" >"$RESULTS/$KVER.verdict.tmp" && mv "$RESULTS/$KVER.verdict.tmp" "$RESULTS/$KVER.verdict"
sync
rm -rf "$WORK"
[ "$verdict" = PASS ]

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Self-check of the test bed itself (not part of `make check`): runs
# scripts/check/check.sh twice on one kernel against generated throwaway tests
# (outside selftests/, via CAROUSEL_TESTS_DIR, without sch_carousel) and
# checks what it reports.
#
#   1. pass / fail (inside $(...)) / skip / timeout / leaked netns /
#      a non-fatal "BUG:" line in dmesg  ->  TAP lines, summary line, exit 1
#   2. a WARN() from a helper module (warn_mod/)  ->  panic_on_warn ends the
#      VM, no verdict file, check.sh reports "VM DIED" and exits 1
#
#   bash selftests/tools/harness_selftest.sh [KVER]     (default 6.1; ~2 VM boots)
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO" || exit 1
KVER=$(bash scripts/lib/vm.sh --resolve "${1:-6.1}") || exit 1
RES=$REPO/build/results/harness-selftest-$$
T=$RES/tests
mkdir -p "$T"
ln -s "$REPO/selftests/lib.sh" "$T/lib.sh"
errors=0
check() {	# check DESCRIPTION COMMAND...
	if "${@:2}"; then
		echo "harness-selftest: ok: $1"
	else
		echo "harness-selftest: FAILED: $1"
		errors=$((errors + 1))
	fi
}

# --- the helper module that WARNs on demand --------------------------------------
W=$REPO/build/$KVER/carousel_warn
mkdir -p "$W"
ln -sfn "$REPO/selftests/tools/warn_mod/warn_mod.c" "$W/warn_mod.c"
ln -sfn "$REPO/selftests/tools/warn_mod/Kbuild" "$W/Kbuild"
make -s -C "/lib/modules/$KVER/build" M="$W" modules >"$RES/warn_mod.build.log" 2>&1 ||
	{ cat "$RES/warn_mod.build.log"; exit 1; }

# --- run 1: results of every kind ------------------------------------------------
cat >"$T/10-pass.sh" <<'EOF'
#!/bin/bash
source "$(dirname "$0")/lib.sh"
setup_pair
ping_ok 2 || fail "ping"
check_within "within" 101 100 2
EOF
cat >"$T/20-fail.sh" <<'EOF'
#!/bin/bash
source "$(dirname "$0")/lib.sh"
v=$(assert_within "deliberate" 150 100 10)
echo "NOT REACHED $v"
EOF
cat >"$T/30-skip.sh" <<'EOF'
#!/bin/bash
source "$(dirname "$0")/lib.sh"
require_cmd no-such-tool-xyz
EOF
cat >"$T/40-timeout.sh" <<'EOF'
#!/bin/bash
# timeout: 3
source "$(dirname "$0")/lib.sh"
sleep 100 &
sleep 60
EOF
cat >"$T/50-leak.sh" <<'EOF'
#!/bin/bash
source "$(dirname "$0")/lib.sh"
ip netns add "carousel-leak-$$"
EOF
cat >"$T/60-bugline.sh" <<EOF
#!/bin/bash
source "\$(dirname "\$0")/lib.sh"
insmod $W/carousel_warn.ko bugline=1 || fail insmod
rmmod carousel_warn
EOF
out1=$RES/run1.out
CAROUSEL_RESULTS=$RES/run1 CAROUSEL_TESTS_DIR=$T CAROUSEL_TESTS='[1-6]0-*' CAROUSEL_MODULE=none \
	CAROUSEL_SKIP_UNIT=1 CAROUSEL_FUZZ_SECONDS=0 CAROUSEL_KERNELS=$KVER bash scripts/check/check.sh >"$out1" 2>&1
rc1=$?
tap=$RES/run1/$KVER.tap
check "run 1 exits 1" [ "$rc1" = 1 ]
# The counts hold three more passes than the TAP above: check.sh's man
# page, style and compat coverage checks, which run on the host whatever
# else is skipped.
check "run 1 last line" [ "$(tail -n1 "$out1")" = "4 passed, 5 failed, 3 skipped" ]
check "verdict FAIL" grep -qx FAIL "$RES/run1/$KVER.verdict"
check "pass"         grep -qx 'ok 2 10-pass' "$tap"
check "fail"         grep -qx 'not ok 3 20-fail # exit 1' "$tap"
check "assert text"  grep -q '^# deliberate: actual 150 expected 100 (err 50.00%' "$tap"
check "skip"         grep -qx 'ok 4 30-skip # SKIP no-such-tool-xyz not installed' "$tap"
check "timeout"      grep -qx 'not ok 5 40-timeout # timed out after 3s' "$tap"
check "netns leak"   grep -qx 'not ok 6 50-leak # leaked netns' "$tap"
check "dmesg/test"   grep -qx 'not ok 7 60-bugline # kernel log' "$tap"
check "dmesg/final"  grep -q '^not ok 9 kernel log clean' "$tap"

# --- run 2: a WARN must kill the VM -----------------------------------------------
rm -f "$T"/[1-6]0-*.sh
cat >"$T/70-warn.sh" <<EOF
#!/bin/bash
source "\$(dirname "\$0")/lib.sh"
insmod $W/carousel_warn.ko warn=1
echo "STILL ALIVE after WARN"
EOF
cat >"$T/80-after.sh" <<'EOF'
#!/bin/bash
echo "NOT REACHED"
EOF
out2=$RES/run2.out
CAROUSEL_RESULTS=$RES/run2 CAROUSEL_TESTS_DIR=$T CAROUSEL_MODULE=none \
	CAROUSEL_SKIP_UNIT=1 CAROUSEL_FUZZ_SECONDS=0 CAROUSEL_KERNELS=$KVER bash scripts/check/check.sh >"$out2" 2>&1
rc2=$?
check "run 2 exits 1" [ "$rc2" = 1 ]
check "no verdict"    [ ! -e "$RES/run2/$KVER.verdict" ]
check "died in test"  grep -qx 70-warn "$RES/run2/$KVER.current"
check "VM DIED"       grep -q 'VM DIED .*during 70-warn' "$out2"
check "panic logged"  grep -q 'Kernel panic - not syncing: .*panic_on_warn' "$RES/run2/$KVER.console.log"
check "WARN logged"   grep -q 'carousel_warn: deliberate warning' "$RES/run2/$KVER.console.log"
check "never resumed" bash -c "! grep -q 'STILL ALIVE\|NOT REACHED' '$out2'"
check "run 2 last line" [ "$(tail -n1 "$out2")" = "3 passed, 1 failed, 1 skipped" ]

echo "harness-selftest: $errors problem(s); logs in $RES"
[ "$errors" = 0 ]

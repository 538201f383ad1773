#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# tier: rest
#
# Hostile tc input, as tdc cases (selftests/tdc/*.json, the format of the
# kernel's tools/testing/selftests/tc-testing): zero, negative and
# overflowing rates, bursts and times, impossible wheels, limits out of
# range, duplicate and foreign classids, missing classes, options on the
# wrong object, child qdiscs and filters on classes.  For every case,
# selftests/tdc/run.py proves the command exits as expected (non-zero for
# every bad one) with a message naming the problem, that the qdisc, class
# and filter state is the same JSON after it as before, and that the
# kernel logged no warning.  A default naming a missing class is accepted
# (the code keeps it; such packets go unclassified): that case checks the
# new default instead.  First the runner must itself catch two wrong
# cases, so that a pass means something.
source "$(dirname "$0")/lib.sh"
require_carousel
[ -n "$TC_NEW" ] || fail "no newer tc for class JSON (TC_NEW; scripts/build/deps.sh unpacks one)"
RUN=("$PYTHON" "$LIB_DIR/tdc/run.py" --tc "$(command -v tc)" --tc-json "$TC_NEW")

# The runner fails a case whose error it does not see, whose message it
# does not find, or whose command changed the state.
cat >"$TMPD/wrong.json" <<'EOJ'
[
 {"id": "ff01", "name": "a good command claimed to fail", "category": ["selfcheck"],
  "plugins": {"requires": "nsPlugin"}, "setup": [],
  "cmdUnderTest": "$TC qdisc add dev $DEV1 root handle 1: carousel limit 5",
  "expExitCode": "2", "errorPattern": "limit must be",
  "verifyCmd": "$TC qdisc show dev $DEV1", "matchPattern": "carousel", "matchCount": "0",
  "teardown": [["$TC qdisc del dev $DEV1 root", 0, 2]]},
 {"id": "ff02", "name": "a refusal with another message", "category": ["selfcheck"],
  "plugins": {"requires": "nsPlugin"}, "setup": ["$TC qdisc add dev $DEV1 root handle 1: carousel"],
  "cmdUnderTest": "$TC qdisc change dev $DEV1 root carousel limit 0",
  "expExitCode": "2", "errorPattern": "granularity must be",
  "verifyCmd": "$TC qdisc show dev $DEV1", "matchPattern": "carousel", "matchCount": "1",
  "teardown": [["$TC qdisc del dev $DEV1 root", 0, 2]]}
]
EOJ
out=$("${RUN[@]}" "$TMPD/wrong.json" 2>&1)
rc=$?
echo "$out" | sed 's/^/# selfcheck: /'
[ "$rc" = 1 ] || fail "run.py passed wrong cases (exit $rc)"
grep -q "^0 passed, 2 failed" <<<"$out" || fail "run.py did not fail both wrong cases"
grep -q "state changed" <<<"$out" || fail "run.py missed a state change"
grep -q "lacks /granularity must be/" <<<"$out" || fail "run.py missed a wrong message"

t0=$(now_ms)
"${RUN[@]}" --results "$ART/tdc.json" "$LIB_DIR"/tdc/*.json
rc=$?
t1=$(now_ms)
n=$(jq '.cases | length' "$ART/tdc.json") || fail "no results from run.py"
bad=$(jq '[.cases[] | select(.result != "pass")] | length' "$ART/tdc.json")
refused=$(jq '[.cases[] | select(.exit != 0)] | length' "$ART/tdc.json")
echo "# $n cases ($refused refused by tc or the kernel) in $(( (t1 - t0) / 1000 ))s"
assert_ge "cases" "$n" 50
assert_eq "cases not passed" "$bad" 0
[ "$rc" = 0 ] || fail "run.py exited $rc"

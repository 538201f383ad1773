# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# scripts/summary.sh: sourced, near their top, by the scripts that end in a
# summary (check.sh, check-install.sh, check-debug.sh).  Starts the clock
# and the tally:
#   PASS FAIL SKIP   the counts
#   REPORT           the summary's lines, in order
#   say LINE...      one line to stdout;  hr TITLE: a "==== TITLE ====" rule
#   say_duration     "total duration: XmYs" since the source
#   summary RES      the rule, REPORT, the duration and the closing line
#                    "N passed, N failed, N skipped"; true iff nothing failed

T0=$(date +%s)
PASS=0 FAIL=0 SKIP=0
REPORT=()

say() { printf '%s\n' "$*"; }
hr() { say "==== $* ===="; }

say_duration() {
	local d=$(( $(date +%s) - T0 ))

	say "total duration: $((d / 60))m$((d % 60))s"
}

summary() {
	local l

	hr "summary (results in $1)"
	for l in "${REPORT[@]}"; do say "$l"; done
	say_duration
	say "$PASS passed, $FAIL failed, $SKIP skipped"
	[ "$FAIL" = 0 ]
}

# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# scripts/lib/summary.sh: sourced, near their top, by the scripts that end in a
# summary (check.sh, check-install.sh, check-debug.sh).  Starts the clock
# and the tally:
#   PASS FAIL SKIP   the counts
#   REPORT           the summary's lines, in order
#   say LINE...      one line to stdout
#   hr TITLE         a "==== TITLE ====" rule, which also starts a stage
#   say_duration     "total duration: XmYs" since the source
#   summary RES      the rule, REPORT, what failed again (CI may keep only
#                    the end of the output), the time of each stage, the
#                    duration and the closing line "N passed, N failed,
#                    N skipped"; true iff nothing failed

T0=$(date +%s)
PASS=0 FAIL=0 SKIP=0
REPORT=()
STAGE_NAME=()
STAGE_T0=()

say() { printf '%s\n' "$*"; }
hr() {
	say "==== $* ===="
	STAGE_NAME+=("$*")
	STAGE_T0+=("$(date +%s)")
}

# say_stages: one line, each stage (from its hr to the next) and its time.
say_stages() {
	local i n=${#STAGE_NAME[@]} end line= s e

	[ "$n" -gt 0 ] || return 0
	end=$(date +%s)
	for ((i = 0; i < n; i++)); do
		s=${STAGE_T0[i]}
		e=${STAGE_T0[i + 1]:-$end}
		line+="${line:+; }${STAGE_NAME[i]}: $(( (e - s) / 60 ))m$(( (e - s) % 60 ))s"
	done
	say "stage times: $line"
}

say_duration() {
	local d=$(( $(date +%s) - T0 ))

	say "total duration: $((d / 60))m$((d % 60))s"
}

summary() {
	local l stage=

	say "==== summary (results in $1) ===="
	for l in "${REPORT[@]}"; do say "$l"; done
	if [ "$FAIL" != 0 ]; then
		# (each stage's FAIL line, each failed case and why: the
		# report's lines that say so, with the stage they belong to)
		say "==== what failed ===="
		for l in "${REPORT[@]}"; do
			case $l in
			"== "*FAIL*) say "$l"; stage= ;;
			"== "*) stage=$l ;;
			*FAIL*|*"not ok"*|*"!! "*|*"   | "*)
				[ -z "$stage" ] || say "$stage"
				stage=
				say "$l" ;;
			esac
		done | head -n 40
	fi
	say_stages
	say_duration
	say "$PASS passed, $FAIL failed, $SKIP skipped"
	[ "$FAIL" = 0 ]
}

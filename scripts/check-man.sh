#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Check that the man page renders without a single warning, on the host (no
# VM): groff with every warning on, and man-db's own pipeline (preconv, tbl,
# groff) with --warnings, at a fixed width so the result does not depend on
# the terminal.  Prints what either said and exits 1 if anything was said.
#
#   scripts/check-man.sh [PAGE...]      default: docs/tc-carousel.8
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"

[ $# -gt 0 ] || set -- docs/tc-carousel.8
for t in groff man; do
	command -v "$t" >/dev/null || { echo "check-man: $t not found (bash scripts/deps.sh)" >&2; exit 1; }
done
export LC_ALL=C.UTF-8 MANWIDTH=80 MANPAGER=cat PAGER=cat

rc=0
for page in "$@"; do
	if [ ! -s "$page" ]; then
		echo "check-man: $page: missing or empty"
		rc=1
		continue
	fi
	g=$(groff -man -ww -z "$page" 2>&1) || g+="${g:+$'\n'}groff exited $?"
	m=$(man --warnings -l "$page" 2>&1 >/dev/null) || m+="${m:+$'\n'}man exited $?"
	if [ -n "$g$m" ]; then
		echo "check-man: $page: $(printf '%s\n%s' "$g" "$m" | grep -c .) warning line(s):"
		printf '%s\n' "$g" "$m" | grep . | sed 's/^/  /'
		rc=1
	else
		echo "check-man: $page: no warnings (groff -man -ww, man --warnings)"
	fi
done
exit "$rc"

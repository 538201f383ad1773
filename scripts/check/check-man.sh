#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Check that the man page renders without a single warning, on the host (no
# VM): groff with every warning on, and man-db's own pipeline (preconv, tbl,
# groff) with --warnings, at a fixed width so the result does not depend on
# the terminal.  Prints what either said and exits 1 if anything was said.
#
#   scripts/check/check-man.sh [PAGE...]      default: docs/tc-carousel.8
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"

[ $# -gt 0 ] || set -- docs/tc-carousel.8
for t in groff man; do
	command -v "$t" >/dev/null || { echo "check-man: $t not found (bash scripts/build/deps.sh)" >&2; exit 1; }
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
# The ERRORS section quotes the kernel's messages: each one it lists under
# "From the qdisc" and "From classes and filters" must be a message the
# module can send, word for word, and each message the module can send
# must be listed.  NL_SET_ERR_MSG_MOD() prefixes "sch_carousel: "; the
# attribute messages carry "carousel: " in their own text.
if ! python3 - docs/tc-carousel.8 sch_carousel.c <<'PY'
import re, sys
man, src = open(sys.argv[1]).read(), open(sys.argv[2]).read()
lit = r'"(?:[^"\\]|\\.)*"(?:\s*"(?:[^"\\]|\\.)*")*'
def text(m):
    return "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m))
kernel = set()
for m in re.finditer(r'NL_SET_ERR_MSG_MOD\(\s*extack,\s*(' + lit + ')', src):
    kernel.add("sch_carousel: " + text(m.group(1)))
for m in re.finditer(lit, src):
    if text(m.group(0)).startswith("carousel: "):
        kernel.add(text(m.group(0)))
sec = re.search(r'^\.SS From the qdisc$(.*?)^\.SS From the kernel and tc$', man, re.S | re.M)
if not sec:
    sys.exit("check-man: no ERRORS subsections to check")
listed = set()
for line in sec.group(1).splitlines():
    if re.match(r'^\.B (sch_)?carousel: ', line):
        listed.add(line[3:].replace("\\(dq", '"').replace("\\-", "-"))
bad = 0
for m in sorted(listed - kernel):
    print(f"check-man: the man page lists a message the module never sends: {m}")
    bad = 1
for m in sorted(kernel - listed):
    print(f"check-man: the module sends a message the man page does not list: {m}")
    bad = 1
if not bad:
    print(f"check-man: the {len(kernel)} kernel error messages match the man page word for word")
sys.exit(bad)
PY
then
	rc=1
fi
exit "$rc"

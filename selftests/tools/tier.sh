# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The selftest tiers, sourced by selftests/run.sh and lib.sh.  A test's
# "# tier:" line says which it belongs to; a run (CAROUSEL_TIER) takes a
# tier and every one before it:
#   compat  what the kernel's version can change; the test says how on a
#           "# compat:" line.  make check runs it on every kernel.
#   main    the rest of make check (on 6.12).
#   rest    CI (on 6.12) and make check-full; a run asks for it as "full".
#
# tier_rank TIER: 0 (compat), 1 (main) or 2 (rest, full); nothing if unknown.
tier_rank() {
	case $1 in
	compat) echo 0 ;;
	main) echo 1 ;;
	full|rest) echo 2 ;;
	esac
}

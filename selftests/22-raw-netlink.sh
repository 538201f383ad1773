#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# tier: compat
# compat: CAROUSEL_HAVE_CONST_RANGE, the netlink core's validation
#
# Hostile netlink, bypassing tc: RTM_NEWQDISC and RTM_NEWTCLASS built by
# hand (selftests/tools/rawnl.py) with a TCA_OPTIONS that is truncated,
# oversized (up to 60 KB), not nested, holds garbage, unknown, unsupported
# or wrongly flagged attributes, or values tc never sends (horizon_drop 2,
# 2^32-1 and 2^64-1 everywhere), on a qdisc change, a qdisc add (whose
# init must then attach nothing), a class add and a class change.  Each
# gets an error with an extended ack message (NLMSGERR_ATTR_MSG) naming
# the problem, leaves the qdisc and class JSON as it was, and makes the
# kernel log no warning (the netlink core's own notices about malformed
# attributes aside: counted and shown).  Well-formed messages from the
# same encoder are accepted first, so an error is never the encoder's.
source "$(dirname "$0")/lib.sh"
require_carousel
[ -n "$TC_NEW" ] || fail "no newer tc for class JSON (TC_NEW; scripts/build/deps.sh unpacks one)"
setup_pair

t0=$(now_ms)
ns_s "$PYTHON" "$TOOLS/rawnl.py" --dev "$DEV" --tc "$(command -v tc)" --tc-json "$TC_NEW" \
	--results "$ART/rawnl.json"
rc=$?
t1=$(now_ms)
n=$(jq '.cases | length' "$ART/rawnl.json") || fail "no results from rawnl.py"
bad=$(jq '[.cases[] | select(.why | length > 0)] | length' "$ART/rawnl.json")
echo "# $n raw cases in $(( (t1 - t0) / 1000 ))s; $(jq .netlink_notices "$ART/rawnl.json") netlink core notices"
assert_ge "raw cases" "$n" 40
assert_eq "raw cases failed" "$bad" 0
[ "$rc" = 0 ] || fail "rawnl.py exited $rc"

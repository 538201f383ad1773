#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
#
# No head-of-line blocking.  Class A (1:10, 1 Mbit) is kept backlogged by
# a UDP sender that writes as fast as its socket allows; class B (1:20,
# the default, 100 Mbit) carries sparse pings.  A's packets wait in the
# wheel at their own departure times, and B's ping, due at once, is
# released at once: it is never queued behind A's future departures.
#   - B's p99 RTT with A backlogged <= 1.5x B's p99 with A idle;
#   - A really was backlogged all along (its class queue, sampled, never
#     emptied) and held to its rate.
# Idle and backlogged runs alternate twice, to spread slow drift of the
# emulated machine over both; each p99 is over both rounds' replies.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
quiet_link
NPING=200 IVAL=0.02 SIZE=1400

ns_s tc qdisc add dev "$DEV" root handle 1: carousel default 20 || fail "qdisc add"
ns_s tc class add dev "$DEV" parent 1: classid 1:10 carousel rate 1mbit || fail "class A"
ns_s tc class add dev "$DEV" parent 1: classid 1:20 carousel rate 100mbit || fail "class B"
ping_ok 3 || fail "no ping through class B"

a_qlen() { class_json "$DEV" | jq -r '.[] | select(.handle == "1:10") | .stats.qlen'; }
a_backlogged() { [ "$(a_qlen)" -ge 20 ]; }
a_empty() { [ "$(a_qlen)" = 0 ]; }

for round in 1 2; do
	read -r n p50 p99 max < <(ping_rtt $NPING $IVAL "idle-$round")
	echo "# round $round, A idle: $n replies, p50 ${p50}ms p99 ${p99}ms max ${max}ms"
	assert_ge "replies" "$n" $((NPING * 99 / 100))

	bg ns_s "$PYTHON" "$TOOLS/udpsend.py" --dst "$IP_R" --port 7000 --size $SIZE \
		--seconds 9 --priority 0x10010
	sender=$BG_PID
	busywait 5000 a_backlogged >/dev/null || fail "class A is not backlogged"
	q0=$(a_qlen)
	read -r n p50 p99 max < <(ping_rtt $NPING $IVAL "busy-$round")
	q1=$(a_qlen)
	echo "# round $round, A backlogged (A's queue $q0 then $q1 packets): $n replies, p50 ${p50}ms p99 ${p99}ms max ${max}ms"
	assert_ge "replies" "$n" $((NPING * 99 / 100))
	assert_ge "A's queue after the pings" "$q1" 1
	kill "$sender" 2>/dev/null
	wait "$sender" 2>/dev/null
	busywait 10000 a_empty >/dev/null || fail "class A did not drain"
done

st=$(class_json "$DEV" | jq -c '.[] | select(.handle == "1:10") | .stats | {bytes, packets, drops}')
echo "# class A: $st"
assert_eq "class A drops" "$(jq .drops <<<"$st")" 0
read -r ni _ pi _ < <(rtt_stats "$ART"/ping-idle-*.txt)
read -r nb _ pb _ < <(rtt_stats "$ART"/ping-busy-*.txt)
awk -v i="$pi" -v b="$pb" -v ni="$ni" -v nb="$nb" 'BEGIN {
	printf "B p99 with A backlogged %sms (%d replies) vs A idle %sms (%d replies): ratio %.2f (want <= 1.5)\n",
		b, nb, i, ni, b / i
	exit !(b <= 1.5 * i) }' >&2 || check_fail "B delayed by A's backlog"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# tier: rest
#
# Class rate estimators work as htb's do.  A class added with "estimator
# 250ms 1sec" shows the rate it sends at (tc -s -j: stats.rate, bytes/s,
# and stats.pps) while a UDP socket floods it: the estimate is compared
# with the rate at which the class's own byte counter moved over the same
# last 2 s (within 10%: an EWMA with a 1 s time constant), and that with
# the class rate.  A class without one shows none.  A change to another
# estimator (500ms 2sec) keeps an estimate going; a bad one is refused with
# nothing changed (selftests/22-raw-netlink).  Deleting a class that has
# one while its packets are queued, then the qdisc while another class's
# runs, leaves the kernel log clean (checked for the run).
# (Before, the kernel ignored TCA_RATE on classes: no estimate at all.)
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
quiet_link

RATE=1250000	# bytes/s: 10mbit
ns_s tc qdisc add dev "$DEV" root handle 1: carousel default 10 || fail "qdisc add"
ns_s tc class add dev "$DEV" parent 1: classid 1:10 estimator 250ms 1sec \
	carousel rate 10mbit || fail "class add with an estimator"
ns_s tc class add dev "$DEV" parent 1: classid 1:20 carousel rate 5mbit || fail "class add"
ns_s tc class add dev "$DEV" parent 1: classid 1:30 estimator 1sec 4sec \
	carousel rate 5mbit || fail "class add with an estimator, never used"

cls() { class_json "$DEV" | jq -c ".[] | select(.handle == \"$1\") | .stats"; }

# flood SECONDS: UDP into 1:10 (the default class) from one socket whose
# send buffer (about 60 datagrams) stays under flow_limit: it blocks, and
# nothing is dropped.
flood() {
	bg ns_s "$PYTHON" "$TOOLS/udpsend.py" --dst "$IP_R" --port 7310 --size 1000 \
		--seconds "$1" --sndbuf 100000
}

# measure NAME: over 4 s of the flood, the estimate against the counter.
measure() {
	local s0 s1 t0 t1 est moved
	s0=$(cls 1:10); t0=$(now_ms)
	sleep 4
	s1=$(cls 1:10); t1=$(now_ms)
	est=$(jq '.rate // 0' <<<"$s1")
	moved=$(jq -n --argjson a "$s0" --argjson b "$s1" --argjson ms $((t1 - t0)) \
		'(($b.bytes - $a.bytes) * 1000 / $ms) | floor')
	echo "# $1: estimate $est B/s, $(jq '.pps // 0' <<<"$s1") pps; counter moved $moved B/s; class rate $RATE B/s"
	assert_ge "$1: estimate" "$est" 1
	assert_within "$1: estimate against the class's counter" "$est" "$moved" 10
	assert_within "$1: counter against the class rate" "$moved" "$RATE" 10
}

# Each estimate is read once the flood has run five time constants.
flood 30
f=$BG_PID
sleep 5
measure "estimator 250ms 1sec"
assert_eq "class without an estimator: rate key" "$(cls 1:20 | jq 'has("rate")')" false

ns_s tc class change dev "$DEV" parent 1: classid 1:10 estimator 500ms 2sec \
	carousel rate 10mbit || fail "class change to another estimator"
sleep 10
measure "after a change to 500ms 2sec"
assert_eq "drops" "$(qjq "$DEV" '.[0].drops')" 0

# Delete the class under the flood (its packets still queued: it is freed
# by the last to leave, its estimator killed first), then the qdisc with
# 1:30's estimator running.
echo "# 1:10 queued at delete: $(cls 1:10 | jq -c '{qlen, backlog}')"
ns_s tc class del dev "$DEV" classid 1:10 || fail "class del under traffic"
sleep 1
kill "$f" 2>/dev/null
ns_s tc qdisc del dev "$DEV" root || fail "qdisc del"
exit 0

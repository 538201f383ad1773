#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# tier: rest
#
# One class: iperf3 TCP goodput within 1% of what the class rate allows
# (the rate counts L2 bytes, so goodput = rate * payload / frame), and the
# class's own counters say the same with no drops.  At the default flow
# budget a flow alone in its class is never told to slow down (the CN
# printed come from moments when iperf3's control connection has a packet
# queued beside it).
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
RATE=10000000
T=8

ns_s tc qdisc add dev "$DEV" root handle 1: carousel default 10 || fail "qdisc add"
ns_s tc class add dev "$DEV" parent 1: classid 1:10 carousel rate 10mbit || fail "class add"
IPERF_OMIT=2
bps=$(iperf_tcp 5201 "$T")
assert_within "goodput 1:10" "$bps" "$(tcp_goodput_expected $RATE 1500)" 1
assert_eq "drops" "$(qjq "$DEV" '.[0].drops')" 0
assert_eq "class drops" "$(tc_json -n "$NS_S" -s class show dev "$DEV" | jq '.[0].stats.drops')" 0
echo "# CN returned: $(qjq "$DEV" '.[0].cn_returns')"
echo "# timer: $(qjq "$DEV" '.[0] | "arms \(.timer_arms) fires \(.timer_fires) latency avg \(.timer_latency_ns / ([.timer_fires,1]|max) | floor)ns max \(.timer_latency_max_ns)ns"')"

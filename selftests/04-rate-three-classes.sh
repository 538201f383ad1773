#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 150
# tier: rest
#
# Three classes at 5, 10 and 20 Mbit, picked by u32 filters on the
# destination port, with iperf3 TCP running through all three at once:
# each goodput within 1% of what its rate allows.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
T=8

ns_s tc qdisc add dev "$DEV" root handle 1: carousel || fail "qdisc add"
for c in 5:5 10:10 20:20; do
	minor=${c%%:*} mbit=${c##*:}
	ns_s tc class add dev "$DEV" parent 1: classid 1:$minor carousel rate ${mbit}mbit ||
		fail "class 1:$minor"
	ns_s tc filter add dev "$DEV" parent 1: protocol ip prio 1 u32 \
		match ip dport $((5200 + minor)) 0xffff flowid 1:$minor || fail "filter 1:$minor"
done
IPERF_OMIT=2
for minor in 5 10 20; do
	iperf_start $((5200 + minor)) "$T"
done
iperf_wait
for minor in 5 10 20; do
	check_within "goodput 1:$minor" "$(iperf_bps $((5200 + minor)))" \
		"$(tcp_goodput_expected $((minor * 1000000)) 1500)" 1
done
assert_eq "drops" "$(qjq "$DEV" '.[0].drops')" 0
assert_eq "unclassified (only ARP and the like)" \
	"$(( $(qjq "$DEV" '.[0].unclassified') < 20 ))" 1

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
#
# Ceiling (SENIC's service model).  Qdisc rate 20 Mbit; classes of 10 and
# 30 Mbit, both backlogged by TCP: together they ask for 40, so each gets
# a share proportional to its rate, 5 and 15 Mbit.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
T=8

ns_s tc qdisc add dev "$DEV" root handle 1: carousel rate 20mbit || fail "qdisc add"
for c in 10:10 30:30; do
	minor=${c%%:*} mbit=${c##*:}
	ns_s tc class add dev "$DEV" parent 1: classid 1:$minor carousel rate ${mbit}mbit || fail "class"
	ns_s tc filter add dev "$DEV" parent 1: protocol ip prio 1 u32 \
		match ip dport $((5400 + minor)) 0xffff flowid 1:$minor || fail "filter"
done
IPERF_OMIT=2
iperf_start 5410 "$T"
iperf_start 5430 "$T"
sleep 4
echo "# effective rates: $(tc_json -n "$NS_S" -s class show dev "$DEV" | jq -c '[.[] | {handle, effective_rate: .stats.effective_rate}]')"
iperf_wait
b10=$(iperf_bps 5410) b30=$(iperf_bps 5430)
check_within "goodput 1:10 (share 5 of 20)" "$b10" "$(tcp_goodput_expected 5000000 1500)" 2
check_within "goodput 1:30 (share 15 of 20)" "$b30" "$(tcp_goodput_expected 15000000 1500)" 2
check_within "total under the ceiling" "$((b10 + b30))" "$(tcp_goodput_expected 20000000 1500)" 2

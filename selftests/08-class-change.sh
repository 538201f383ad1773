#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
#
# `tc class change' of a rate while TCP runs through the class: the new
# rate holds at once (wire rate from the class's byte counter before and
# after), with no drop and no retransmission (no loss, no reorder).  Then
# `tc qdisc change' of granularity and horizon, which rebuild the wheel
# under the traffic: the rate holds, still with no drop or retransmission.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair

ns_s tc qdisc add dev "$DEV" root handle 1: carousel default 10 || fail "qdisc add"
ns_s tc class add dev "$DEV" parent 1: classid 1:10 carousel rate 5mbit || fail "class add"

cbytes() { tc_json -n "$NS_S" -s class show dev "$DEV" | jq '.[0].stats.bytes'; }
# wire_bps SECONDS: the class's wire rate over SECONDS, from its counter.
wire_bps() {
	local b0 b1 t0 t1
	t0=${EPOCHREALTIME/./}; b0=$(cbytes)
	sleep "$1"
	t1=${EPOCHREALTIME/./}; b1=$(cbytes)
	echo $(( (b1 - b0) * 8 * 1000000 / (t1 - t0) ))
}

IPERF_OMIT=0
iperf_start 5300 22
sleep 2
check_within "wire rate at 5mbit" "$(wire_bps 5)" 5000000 2
ns_s tc class change dev "$DEV" classid 1:10 carousel rate 15mbit || fail "class change"
sleep 1
check_within "wire rate at 15mbit" "$(wire_bps 5)" 15000000 2
b0=$(cbytes) t0=${EPOCHREALTIME/./}
for g in "granularity 4us horizon 3s" "granularity 250ns horizon 20s" "granularity 1us horizon 10s"; do
	# shellcheck disable=SC2086
	ns_s tc qdisc change dev "$DEV" root carousel $g || fail "qdisc change $g"
	echo "# $g: $(qjq "$DEV" '.[0] | "levels \(.wheel_levels) wheel_packets \(.wheel_packets)"')"
	sleep 1.5
done
check_within "wire rate across wheel rebuilds" \
	"$(( ($(cbytes) - b0) * 8 * 1000000 / (${EPOCHREALTIME/./} - t0) ))" 15000000 3
iperf_wait 5300
assert_eq "drops" "$(qjq "$DEV" '.[0].drops')" 0
assert_eq "retransmits" "$(jq '.end.sum_sent.retransmits' "$(iperf_json 5300)")" 0

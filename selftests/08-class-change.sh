#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
#
# `tc class change' of a rate while TCP runs through the class: the new
# rate holds at once (wire rate from the class's byte counter before and
# after), with no drop and no retransmission (no loss, no reorder).
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair

ns_s tc qdisc add dev "$DEV" root handle 1: carousel default 10 || fail "qdisc add"
ns_s tc class add dev "$DEV" parent 1: classid 1:10 carousel rate 5mbit || fail "class add"

# sample: "<us> <class bytes>", the time taken at the middle of the tc
# call (which takes a good part of a second in the VM).
sample() {
	local a b
	a=${EPOCHREALTIME/./}
	b=$(tc_json -n "$NS_S" -s class show dev "$DEV" | jq '.[0].stats.bytes')
	echo "$(( (a + ${EPOCHREALTIME/./}) / 2 )) $b"
}
# bps S0 S1: the class's wire rate between two samples.
bps() {
	local t0 b0 t1 b1
	read -r t0 b0 <<<"$1"
	read -r t1 b1 <<<"$2"
	echo $(( (b1 - b0) * 8 * 1000000 / (t1 - t0) ))
}
# wire_bps SECONDS: the class's wire rate over SECONDS.
wire_bps() {
	local s0
	s0=$(sample)
	sleep "$1"
	bps "$s0" "$(sample)"
}

IPERF_OMIT=0
iperf_start 5300 30
sleep 2
check_within "wire rate at 5mbit" "$(wire_bps 8)" 5000000 2
ns_s tc class change dev "$DEV" classid 1:10 carousel rate 15mbit || fail "class change"
# The qdisc spaces the very next packet at 15 Mbit; TCP, whose own EDT
# pacing the qdisc honours, needs a moment to raise its pacing rate.
sleep 2
check_within "wire rate at 15mbit" "$(wire_bps 8)" 15000000 2
iperf_wait 5300
assert_eq "drops" "$(qjq "$DEV" '.[0].drops')" 0
assert_eq "retransmits" "$(jq '.end.sum_sent.retransmits' "$(iperf_json 5300)")" 0

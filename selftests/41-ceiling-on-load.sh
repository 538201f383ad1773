#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# tier: main
#
# A ceiling set, then changed, on a qdisc whose classes are already busy.
# Without a ceiling the qdisc keeps no sum of its active classes' rates
# (only a ceiling reads it); a change of the ceiling sums it afresh over
# the classes (sch_carousel.c, carousel_change()).  Classes 1:10 (10 Mbit)
# and 1:30 (30 Mbit) are backlogged by UDP at twice their rates, then the
# qdisc gets a ceiling: each class's effective rate must be its share
# at once (a sum left at 0 would report the class rates).  First a 10
# Mbit ceiling (shares 2.5 and 7.5), then 20 Mbit (5 and 15), and under
# it each class's wire rate, from its class counters over 4 s, must be
# its share within 2%.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
T=30

ns_s tc qdisc add dev "$DEV" root handle 1: carousel || fail "qdisc add"
for c in 10:10 30:30; do
	minor=${c%%:*} mbit=${c##*:}
	ns_s tc class add dev "$DEV" parent 1: classid 1:$minor carousel rate ${mbit}mbit || fail "class"
	ns_s tc filter add dev "$DEV" parent 1: protocol ip prio 1 u32 \
		match ip dport $((5400 + minor)) 0xffff flowid 1:$minor || fail "filter"
done

# eff_rate MINOR: the class's effective rate, bytes/s
eff_rate() { cjq "$DEV" ".[] | select(.handle == \"1:$1\") | .stats.effective_rate"; }
# both_busy: both classes hold packets
both_busy() {
	[ "$(cjq "$DEV" '[.[] | select(.handle == "1:10" or .handle == "1:30") | select(.stats.qlen > 0)] | length')" = 2 ]
}

IPERF_OMIT=0
iperf_start 5410 "$T" -u -b 20M -l 1400
iperf_start 5430 "$T" -u -b 60M -l 1400
busywait 20000 both_busy || fail "the classes did not fill"
assert_eq "1:10's effective rate, no ceiling" "$(eff_rate 10)" 1250000
assert_eq "1:30's effective rate, no ceiling" "$(eff_rate 30)" 3750000

# set_ceiling RATE SHARE10 SHARE30: the ceiling changed with both classes
# busy, and their effective rates (bytes/s) at once
set_ceiling() {
	ns_s tc qdisc change dev "$DEV" root carousel rate "$1" || fail "qdisc change rate $1"
	both_busy || fail "a class went idle across the change to $1"
	check_within "1:10's effective rate under $1" "$(eff_rate 10)" "$2" 1
	check_within "1:30's effective rate under $1" "$(eff_rate 30)" "$3" 1
}
set_ceiling 10mbit 312500 937500
set_ceiling 20mbit 625000 1875000

# The 4 s window opens 3 s after the change (python3 starts inside it);
# T leaves the traffic 20 s to spare.
rates_start 3 4 --classes
rates_wait
rates=$RATES
for p in 5410 5430; do
	running "${_IPERF_CLIENT[$p]}" || fail "the rate window ran past the traffic"
done
w=$(jq .seconds <<<"$rates") lost=$(jq '.catchup_lost_ns // 0' <<<"$rates")
echo "# class rates over $w s: $(jq -c .bps <<<"$rates")"
check_rate "1:10's wire rate (share 5 of 20)" "$(jq '.bps["1:10"]' <<<"$rates")" 5000000 2 "$lost" "$w"
check_rate "1:30's wire rate (share 15 of 20)" "$(jq '.bps["1:30"]' <<<"$rates")" 15000000 2 "$lost" "$w"
iperf_wait
exit 0

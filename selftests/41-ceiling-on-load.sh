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
# its share within 2%, over a window that opens and closes with both
# classes busy.
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

SHARES=
# shares A B: in one class dump, both classes hold packets and their
# effective rates (bytes/s) are A and B within 1%.  SHARES: that dump's
# "qlen effective_rate" of each class, for the message.
shares() {
	local j

	j=$(class_json "$DEV" | jq -c '[.[] | select(.handle == "1:10" or .handle == "1:30")] |
		sort_by(.handle) | map({handle, qlen: .stats.qlen, eff: .stats.effective_rate})')
	SHARES=$(jq -r 'map("\(.handle) qlen \(.qlen) effective \(.eff)") | join(", ")' <<<"$j")
	jq -e --argjson a "$1" --argjson b "$2" '
		def near($x; $y): ($x - $y | fabs) <= $y / 100;
		length == 2 and .[0].qlen > 0 and .[1].qlen > 0 and
		near(.[0].eff; $a) and near(.[1].eff; $b)' <<<"$j" >/dev/null
}
# set_ceiling RATE SHARE10 SHARE30: the ceiling changed with both classes
# busy; one dump with both busy must show their new shares at once (a
# class that empties for a moment takes its rate out of the sum, and the
# other's share grows: so the dump is retried for up to 5 s, but every
# dump with both busy must show the shares)
set_ceiling() {
	ns_s tc qdisc change dev "$DEV" root carousel rate "$1" || fail "qdisc change rate $1"
	busywait 5000 shares "$2" "$3" || {
		shares "$2" "$3" || true	# (busywait's run is a subshell's)
		check_fail "under $1, want 1:10 $2 and 1:30 $3 B/s with both busy; last dump: $SHARES"
	}
	shares "$2" "$3" || true
	echo "# under $1: $SHARES"
}

IPERF_OMIT=0
iperf_start 5410 "$T" -u -b 20M -l 1400
iperf_start 5430 "$T" -u -b 60M -l 1400
busywait 20000 shares 1250000 3750000 || {
	shares 1250000 3750000 || true
	fail "the classes did not fill, or their rates are not their own with no ceiling: $SHARES"
}
set_ceiling 10mbit 312500 937500
set_ceiling 20mbit 625000 1875000

# The 4 s window opens once both classes hold packets; it must close with
# both still busy (idle_at_end), or a class idle for part of it (iperf3
# not run for a while under TCG) would give the other more than its share.
rates_start_busy 4 1:10,1:30
rates_wait
rates=$RATES
jq -e '.idle_at_end == []' <<<"$rates" >/dev/null ||
	fail "a class went idle in the window: $(jq -c . <<<"$rates")"
w=$(jq .seconds <<<"$rates") lost=$(jq '.catchup_lost_ns // 0' <<<"$rates")
echo "# class rates over $w s: $(jq -c .bps <<<"$rates")"
check_rate "1:10's wire rate (share 5 of 20)" "$(jq '.bps["1:10"]' <<<"$rates")" 5000000 2 "$lost" "$w"
check_rate "1:30's wire rate (share 15 of 20)" "$(jq '.bps["1:30"]' <<<"$rates")" 15000000 2 "$lost" "$w"
# (iperf3's own results are not used: its clients are stopped)
kill "${_IPERF_CLIENT[@]}" 2>/dev/null
exit 0

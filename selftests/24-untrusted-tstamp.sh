#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# tier: main
#
# Untrusted SO_TXTIME stamps.  A sender stamps its datagrams an hour ahead,
# an hour behind, and at the clock's origin; in horizon_drop and in
# horizon_cap mode:
#   - memory stays bounded: wheel_bytes never changes, the wheel holds at
#     most what was accepted (and never more than flow_limit of one
#     socket, even when a flood is capped rather than dropped), and it is
#     empty again once the horizon has passed;
#   - every far-future datagram is dropped and counted in horizon_drops
#     (drop mode), or capped, counted in horizon_caps, and delivered one
#     horizon after it was sent, never before, and late by no more than
#     the qdisc's timer lateness, the path's and a margin (cap mode);
#   - a past stamp leaves at once: no datagram waits for the watchdog
#     (timer_arms and overlimits do not move) and each arrives within
#     100 ms of its sendmsg().
# "An hour behind" does not exist on CLOCK_MONOTONIC in a VM booted
# seconds ago: now - 1h is negative.  Sent as its 64-bit two's complement
# (a sender with signed arithmetic), the qdisc, which reads skb->tstamp
# unsigned, sees it ~584 years ahead: dropped or capped like the hour
# ahead.  The oldest stamp the clock has, 1 ns, is the past case.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
quiet_link

N=300			# datagrams per case
H_MS=1000		# horizon
HOUR_MS=3600000
PORT=6600

x() { qjq "$DEV" ".[0].$1"; }
snap() { qdisc_json "$DEV" | jq -c '.[0] | {packets, drops, qlen, wheel_packets, wheel_bytes,
	horizon_drops, horizon_caps, flow_limit_drops, timer_arms, overlimits, flows,
	timer_latency_max_ns}'; }
d() { jq -n --argjson a "$1" --argjson b "$2" "\$b.$3 - \$a.$3"; }

# send NAME LEAD_MS BELOW_ZERO [COUNT] [RECV_TIMEOUT_S]: N datagrams stamped
# now + LEAD_MS (+ i us) to port PORT; prints the receiver's JSON.  The
# receiver returns as soon as it has them all; its timeout must cover the
# sender's start (a Python start takes seconds in a busy TCG guest).
send() {
	local name=$1 lead=$2 bz=$3 n=${4:-$N} tmo=${5:-20} r
	txtime_recv "$PORT" "$n" "$tmo" --latency
	txtime_send "$PORT" --gap-us 1 --count "$n" --size 100 --lead-ms="$lead" \
		--below-zero "$bz" --stamp-send --sndbuf 4000000 >"$ART/send-$name.json"
	r=$(txtime_wait "$PORT")
	echo "$r" >"$ART/recv-$name.json"
	echo "$r"
}

# empty_wheel: the horizon has passed, nothing is left, nothing leaks.
qlen0() { [ "$(x qlen)" = 0 ]; }
empty_wheel() {
	busywait $((H_MS * 3)) qlen0 >/dev/null || fail "qlen $(x qlen) after the horizon"
	assert_eq "wheel_packets" "$(x wheel_packets)" 0
	assert_eq "flows" "$(x flows)" 0
	assert_eq "wheel_bytes" "$(x wheel_bytes)" "$WB"
}

ns_s tc qdisc add dev "$DEV" root handle 1: carousel horizon ${H_MS}ms horizon_drop \
	limit 10000 flow_limit 10000 || fail "qdisc add"
WB=$(x wheel_bytes)
echo "# wheel_bytes $WB; CLOCK_MONOTONIC origin $(cut -d' ' -f1 /proc/uptime)s ago"

# Baseline: stamped now, due at once; the path's own latency.
s0=$(snap)
PORT=$((PORT + 1))
r=$(send base 0 error)
assert_eq "baseline received" "$(jq .received <<<"$r")" $N
BASE_MAX=$(jq .max_latency_ns <<<"$r")
echo "# baseline latency: mean $(jq .mean_latency_ns <<<"$r") ns, max $BASE_MAX ns"

for mode in drop cap; do
	if [ $mode = cap ]; then
		ns_s tc qdisc change dev "$DEV" root carousel horizon_cap || fail "horizon_cap"
	fi
	for c in ahead:$HOUR_MS:error wrapped:-$HOUR_MS:wrap; do
		IFS=: read -r what lead bz <<<"$c"
		s0=$(snap)
		PORT=$((PORT + 1))
		# Nothing arrives in drop mode: the receiver waits it all out.
		tmo=20
		[ $mode = cap ] || tmo=$((H_MS / 1000 * 2 + 8))
		r=$(send "$mode-$what" "$lead" "$bz" $N $tmo)
		s1=$(snap)
		echo "# $mode, $what: $(jq -c '{received, min_latency_ns, max_latency_ns}' <<<"$r")"
		echo "#   qdisc delta: $(jq -nc --argjson a "$s0" --argjson b "$s1" \
			'$b | with_entries(.value -= ($a[.key] // 0))')"
		assert_eq "$mode/$what: wheel_bytes" "$(jq .wheel_bytes <<<"$s1")" "$WB"
		# Nothing beyond what was offered and accepted may sit in the wheel.
		[ "$(jq .wheel_packets <<<"$s1")" -le $N ] ||
			fail "$mode/$what: wheel_packets $(jq .wheel_packets <<<"$s1") > $N sent"
		if [ $mode = drop ]; then
			assert_eq "$mode/$what: received" "$(jq .received <<<"$r")" 0
			assert_eq "$mode/$what: horizon_drops" "$(d "$s0" "$s1" horizon_drops)" $N
			assert_eq "$mode/$what: drops" "$(d "$s0" "$s1" drops)" $N
			assert_eq "$mode/$what: horizon_caps" "$(d "$s0" "$s1" horizon_caps)" 0
		else
			assert_eq "$mode/$what: received" "$(jq .received <<<"$r")" $N
			assert_eq "$mode/$what: horizon_caps" "$(d "$s0" "$s1" horizon_caps)" $N
			assert_eq "$mode/$what: drops" "$(d "$s0" "$s1" drops)" 0
			# Capped to enqueue time + horizon, enqueue after the sender's
			# stamp: never before, minus 1 ms for the receiver's clock
			# conversion.  Late by no more than the watchdog's own worst
			# lateness (measured by the qdisc) plus twice the path's
			# worst latency for a burst like this one, plus 50 ms of the
			# TCG guest's scheduling noise (the same path, with nothing
			# to wait for, has shown 28 ms).  Held an hour, or even a
			# second, it would be far outside.
			lo=$((H_MS * 1000000 - 1000000))
			hi=$((H_MS * 1000000 + $(jq .timer_latency_max_ns <<<"$s1") + 2 * BASE_MAX + 50000000))
			min=$(jq .min_latency_ns <<<"$r")
			max=$(jq .max_latency_ns <<<"$r")
			echo "# $mode/$what: latency $min..$max ns, allowed $lo..$hi"
			[ "$min" -ge "$lo" ] || fail "$mode/$what: a capped datagram left early: $min ns"
			[ "$max" -le "$hi" ] || fail "$mode/$what: a capped datagram left late: $max ns"
		fi
		empty_wheel
	done

	# The oldest stamp there is: leaves at once, without the watchdog.
	s0=$(snap)
	PORT=$((PORT + 1))
	r=$(send "$mode-past" "-$HOUR_MS" clamp)
	s1=$(snap)
	echo "# $mode, past (1 ns): $(jq -c '{received, min_latency_ns, max_latency_ns}' <<<"$r")"
	echo "#   qdisc delta: $(jq -nc --argjson a "$s0" --argjson b "$s1" \
		'$b | with_entries(.value -= ($a[.key] // 0))')"
	assert_eq "$mode/past: received" "$(jq .received <<<"$r")" $N
	assert_eq "$mode/past: timer_arms" "$(d "$s0" "$s1" timer_arms)" 0
	assert_eq "$mode/past: overlimits" "$(d "$s0" "$s1" overlimits)" 0
	assert_eq "$mode/past: horizon drops + caps" \
		"$(( $(d "$s0" "$s1" horizon_drops) + $(d "$s0" "$s1" horizon_caps) ))" 0
	[ "$(jq .max_latency_ns <<<"$r")" -le 100000000 ] ||
		fail "$mode/past: a past-stamped datagram took $(jq .max_latency_ns <<<"$r") ns"
	empty_wheel
done

# A flood an hour ahead, capped: one socket still holds at most flow_limit
# packets in the wheel; the rest are counted drops.
FL=100
F=3000
ns_s tc qdisc change dev "$DEV" root carousel flow_limit $FL horizon 5s || fail "flow_limit $FL"
s0=$(snap)
PORT=$((PORT + 1))
txtime_send "$PORT" --gap-us 1 --count $F --size 100 --lead-ms=$HOUR_MS \
	--sndbuf 8000000 >"$ART/send-flood.json"
s1=$(snap)
echo "# capped flood of $F: $(jq -nc --argjson a "$s0" --argjson b "$s1" \
	'$b | with_entries(.value -= ($a[.key] // 0))')"
[ "$(jq .wheel_packets <<<"$s1")" -le $FL ] ||
	fail "flood: wheel_packets $(jq .wheel_packets <<<"$s1") > flow_limit $FL"
assert_eq "flood: horizon_caps" "$(d "$s0" "$s1" horizon_caps)" $F
assert_eq "flood: sent + dropped + backlog" \
	"$(( $(d "$s0" "$s1" packets) + $(d "$s0" "$s1" drops) + $(d "$s0" "$s1" qlen) ))" $F
assert_eq "flood: flow_limit_drops" "$(d "$s0" "$s1" flow_limit_drops)" "$(d "$s0" "$s1" drops)"
assert_eq "flood: wheel_bytes" "$(jq .wheel_bytes <<<"$s1")" "$WB"
ns_s tc qdisc del dev "$DEV" root || fail "qdisc del"

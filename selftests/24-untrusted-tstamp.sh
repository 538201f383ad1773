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
# snap: these counters, from one dump, as one flat JSON object.
snap() { qdisc_json "$DEV" | jq -c '.[0] | {packets, drops, qlen, wheel_packets, wheel_bytes,
	horizon_drops, horizon_caps, flow_limit_drops, timer_arms, overlimits, flows,
	timer_latency_max_ns}'; }
# delta A B: snap B minus snap A, key by key.
delta() { jq -nc --argjson a "$1" --argjson b "$2" '$b | with_entries(.value -= ($a[.key] // 0))'; }
# get JSON KEY...: the values of KEYs in a flat JSON object, on one line
# (null if absent): one jq for all of them.
get() { jq -r '[.[$ARGS.positional[]] | tostring] | join(" ")' --args "${@:2}" <<<"$1"; }

# send_start NAME LEAD_MS BELOW_ZERO [COUNT] [RECV_TIMEOUT_S]: a receiver on
# port PORT, then N datagrams stamped now + LEAD_MS (+ i us) to it.  The
# receiver returns as soon as it has them all; its timeout must cover the
# sender's start (a Python start takes seconds in a busy TCG guest).  In
# the main shell, not in $(...): recv_end NAME PORT waits for the
# receiver, any time later, and sets R to its JSON.
send_start() {
	local name=$1 lead=$2 bz=$3 n=${4:-$N} tmo=${5:-20}
	txtime_recv "$PORT" "$n" "$tmo" --latency
	txtime_send "$PORT" --gap-us 1 --count "$n" --size 100 --lead-ms="$lead" \
		--below-zero "$bz" --stamp-send --sndbuf 4000000 >"$ART/send-$name.json"
}
recv_end() {
	txtime_wait "$2" >"$ART/recv-$1.json"
	R=$(<"$ART/recv-$1.json")
}

# empty_wheel S1: the horizon has passed, nothing is left, nothing leaks.
# S1 is the case's snap after its send: if it shows qlen 0 already, there
# is nothing to wait for.  The rest is read from a dump taken after qlen
# was 0; that dump, E, is the next case's baseline (nothing is sent
# between the two).
qlen0() { [ "$(x qlen)" = 0 ]; }
empty_wheel() {
	local wp fl wb
	if [ "$(get "$1" qlen)" != 0 ]; then
		busywait $((H_MS * 3)) qlen0 >/dev/null || fail "qlen $(x qlen) after the horizon"
	fi
	E=$(snap)
	read -r wp fl wb <<<"$(get "$E" wheel_packets flows wheel_bytes)"
	assert_eq "wheel_packets" "$wp" 0
	assert_eq "flows" "$fl" 0
	assert_eq "wheel_bytes" "$wb" "$WB"
}

ns_s tc qdisc add dev "$DEV" root handle 1: carousel horizon ${H_MS}ms horizon_drop \
	limit 10000 flow_limit 10000 || fail "qdisc add"
WB=$(x wheel_bytes)
echo "# wheel_bytes $WB; CLOCK_MONOTONIC origin $(cut -d' ' -f1 /proc/uptime)s ago"

# Baseline: stamped now, due at once; the path's own latency.
PORT=$((PORT + 1))
send_start base 0 error
recv_end base "$PORT"
read -r rcv mean BASE_MAX <<<"$(get "$R" received mean_latency_ns max_latency_ns)"
assert_eq "baseline received" "$rcv" $N
echo "# baseline latency: mean $mean ns, max $BASE_MAX ns"

for mode in drop cap; do
	if [ $mode = cap ]; then
		ns_s tc qdisc change dev "$DEV" root carousel horizon_cap || fail "horizon_cap"
	fi
	s0=$(snap)
	drop_rx=()
	for c in ahead:$HOUR_MS:error wrapped:-$HOUR_MS:wrap; do
		IFS=: read -r what lead bz <<<"$c"
		PORT=$((PORT + 1))
		if [ $mode = drop ]; then
			# Nothing arrives in drop mode: the receiver waits its
			# whole timeout out.  It waits in the background, through
			# this mode's next cases; its verdict is read after them.
			send_start "$mode-$what" "$lead" "$bz" $N $((H_MS / 1000 * 2 + 8))
			drop_rx+=("$PORT:$what")
		else
			send_start "$mode-$what" "$lead" "$bz"
			recv_end "$mode-$what" "$PORT"
		fi
		s1=$(snap)
		dl=$(delta "$s0" "$s1")
		read -r wb wp tlm <<<"$(get "$s1" wheel_bytes wheel_packets timer_latency_max_ns)"
		read -r hd dr hc <<<"$(get "$dl" horizon_drops drops horizon_caps)"
		if [ $mode = cap ]; then
			read -r rcv min max <<<"$(get "$R" received min_latency_ns max_latency_ns)"
			echo "# $mode, $what: received $rcv, latency $min..$max ns"
		fi
		echo "#   qdisc delta ($mode, $what): $dl"
		assert_eq "$mode/$what: wheel_bytes" "$wb" "$WB"
		# Nothing beyond what was offered and accepted may sit in the wheel.
		[ "$wp" -le $N ] || fail "$mode/$what: wheel_packets $wp > $N sent"
		if [ $mode = drop ]; then
			assert_eq "$mode/$what: horizon_drops" "$hd" $N
			assert_eq "$mode/$what: drops" "$dr" $N
			assert_eq "$mode/$what: horizon_caps" "$hc" 0
		else
			assert_eq "$mode/$what: received" "$rcv" $N
			assert_eq "$mode/$what: horizon_caps" "$hc" $N
			assert_eq "$mode/$what: drops" "$dr" 0
			# Capped to enqueue time + horizon, enqueue after the sender's
			# stamp: never before, minus 1 ms for the receiver's clock
			# conversion.  Late by no more than the watchdog's own worst
			# lateness (measured by the qdisc) plus twice the path's
			# worst latency for a burst like this one, plus 50 ms of the
			# TCG guest's scheduling noise (the same path, with nothing
			# to wait for, has shown 28 ms).  Held an hour, or even a
			# second, it would be far outside.
			lo=$((H_MS * 1000000 - 1000000))
			hi=$((H_MS * 1000000 + tlm + 2 * BASE_MAX + 50000000))
			echo "# $mode/$what: latency $min..$max ns, allowed $lo..$hi"
			[ "$min" -ge "$lo" ] || fail "$mode/$what: a capped datagram left early: $min ns"
			[ "$max" -le "$hi" ] || fail "$mode/$what: a capped datagram left late: $max ns"
		fi
		empty_wheel "$s1"
		s0=$E
	done

	# The oldest stamp there is: leaves at once, without the watchdog.
	PORT=$((PORT + 1))
	send_start "$mode-past" "-$HOUR_MS" clamp
	recv_end "$mode-past" "$PORT"
	s1=$(snap)
	dl=$(delta "$s0" "$s1")
	read -r rcv min max <<<"$(get "$R" received min_latency_ns max_latency_ns)"
	read -r ta ol hd hc <<<"$(get "$dl" timer_arms overlimits horizon_drops horizon_caps)"
	echo "# $mode, past (1 ns): received $rcv, latency $min..$max ns"
	echo "#   qdisc delta: $dl"
	assert_eq "$mode/past: received" "$rcv" $N
	assert_eq "$mode/past: timer_arms" "$ta" 0
	assert_eq "$mode/past: overlimits" "$ol" 0
	assert_eq "$mode/past: horizon drops + caps" "$((hd + hc))" 0
	[ "$max" -le 100000000 ] ||
		fail "$mode/past: a past-stamped datagram took $max ns"
	empty_wheel "$s1"

	# Drop mode's receivers, whose timeouts have run out by now or soon:
	# not one datagram of theirs arrived.
	for p in "${drop_rx[@]}"; do
		what=${p#*:}
		recv_end "$mode-$what" "${p%%:*}"
		read -r rcv min max <<<"$(get "$R" received min_latency_ns max_latency_ns)"
		echo "# $mode, $what: received $rcv, latency $min..$max ns"
		assert_eq "$mode/$what: received" "$rcv" 0
	done
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
dl=$(delta "$s0" "$s1")
echo "# capped flood of $F: $dl"
read -r wp wb <<<"$(get "$s1" wheel_packets wheel_bytes)"
read -r hc pk dr ql fld <<<"$(get "$dl" horizon_caps packets drops qlen flow_limit_drops)"
[ "$wp" -le $FL ] || fail "flood: wheel_packets $wp > flow_limit $FL"
assert_eq "flood: horizon_caps" "$hc" $F
assert_eq "flood: sent + dropped + backlog" "$((pk + dr + ql))" $F
assert_eq "flood: flow_limit_drops" "$fld" "$dr"
assert_eq "flood: wheel_bytes" "$wb" "$WB"
ns_s tc qdisc del dev "$DEV" root || fail "qdisc del"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# tier: compat
# compat: CAROUSEL_HAVE_TSTAMP_TYPE: part 4, forwarded EDT stamps (6.1 clears
#         them); parts 1-3 run from tier main
#
# The burst bound holds whatever the senders stamp.  A class with rate R
# and burst B sends at most B + R * W + one packet in any window W, with
# W stretched by its granularity and timer_slack, and by how late packets
# left (what became due while the watchdog was late leaves at once, up to
# 16 ms of the class's rate per stall: the catch-up cap).
#   1. Stamped burst: 20 sockets each send 60 datagrams of 1400 B, every
#      one stamped (SO_TXTIME) for the same instant 0.5 s ahead, into one
#      10 Mbit class with burst 0, qdisc options at their defaults.  The
#      receiver's timestamps never run ahead of the class's schedule from
#      the stamp, in every 20 ms window stay within the bound (18
#      datagrams, widened by the lateness measured), and all 1200
#      arrive, none before its stamp.
#      A control run through fq, which only honours the stamps, must fail
#      the same check: so the check can fail.  (fq lets them all go at
#      once, and the receiver's socket buffer keeps only some.)  (Before the class was
#      charged when a stamp comes due, 112 arrived within 20 ms.)
#   2. No head-of-line blocking: in the same class, one socket's datagrams
#      stamped 8 s ahead, queued meanwhile, hold up none of another
#      socket's unstamped ones (their worst latency stays under 10% of the
#      lead), and still leave no earlier than their stamps.
#   3. A packet waiting for its own stamp takes no share of the ceiling:
#      qdisc rate 100mbit, class A 1gbit holding one datagram stamped 30 s
#      ahead, class B 10mbit flooded.  B gets its 10 Mbit (its share if A
#      counted as active: 10 * 100 / 1010, about 1 Mbit).  (horizon 60s
#      keeps the stamp accepted and the datagram queued however long a
#      busy host takes to start the flood; it is dropped at the end.)
#   4. The same burst forwarded: sent from a third netns and routed by the
#      carousel's netns onto its device, so no packet has its socket (the
#      flows are keyed by hash; flow_limit 300, as two senders' flows can
#      share a hash).  fq must again fail the check; carousel must keep
#      the bound with all 1200 received.  Where the stamps
#      survive the crossing (6.12; fq then sends none early), none may
#      arrive early either; where the kernel clears them (6.1), only the
#      windows are checked, widened by the qdisc's own worst lateness.  A
#      run that misses is made again, up to 3 (forwarded_run, below).
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
quiet_link

SIZE=1400 WIRE=1442 SOCKS=20 PER=60 W_MS=20
RATE=1250000		# bytes/s: 10mbit
MTU=1514
N=$((SOCKS * PER))

# bound_check NAME JSON SLACK_NS: the receiver's worst window against
# burst (0) + rate * (W + slack) + one MTU; exit 0 if within.
bound_check() {
	local name=$1 r=$2 slack=$3 pk
	pk=$(jq .window_packets <<<"$r")
	awk -v n="$name" -v p="$pk" -v wire=$WIRE -v r=$RATE \
		-v w=$W_MS -v s="$slack" -v m=$MTU 'BEGIN {
		got = p * wire; max = r * (w / 1000 + s / 1e9) + m
		printf "# %s: worst %d ms window %d datagrams, %d B on the wire; bound %d B (%.1f datagrams: rate * (%d ms + %.3f ms) + MTU)\n",
			n, w, p, got, max, max / wire, w, s / 1e6
		exit !(got <= max) }'
}

# stamped PORT TIMEOUT: the stamped burst of part 1 into NS_S's $DEV,
# sent from TXTIME_NS (unset: NS_S; part 4: NS_F through NS_S as a
# router); prints the receiver's JSON.
stamped() {
	local port=$1
	txtime_recv "$port" $N "$2" --window-ms $W_MS --schedule-rate $RATE
	echo "# sender: $(txtime_send "$port" --gap-us 0 --count $PER --sockets $SOCKS \
		--size $SIZE --lead-ms 500 --sndbuf 4000000)" >&2
	txtime_wait "$port"
}

# check_run NAME JSON SLACK_NS: print and check one run of part 1; exit 0
# if it kept the bound.
#   - ahead: no datagram arrived before its place in the schedule of a
#     10 Mbit class starting at the stamp (to within TOL_NS, the receive
#     timestamps' conversion to the sender's clock): the class never ran
#     ahead of its rate;
#   - every 20 ms window within rate * (W + slack + late) + MTU, where
#     late is how much later than the least late datagram the latest one
#     came, behind that schedule (from the stamp, or later by the least
#     lateness if every datagram had some: that schedule is as valid):
#     what piled up meanwhile leaves at once (the catch-up).  The catch-up
#     cap (CATCHUP_NS, sch_carousel.c) bounds that per stall, but stalls
#     that overlap (a second one while packets held by the first wait:
#     design.md) can add more, and this host has stalls of 100 ms and
#     more: so the bound is widened by the lateness measured, and the
#     bound the cap alone would give is printed beside it.  fq is held to
#     the same.  Lateness is printed beside the qdisc's own count of its
#     watchdog's worst lateness.
TOL_NS=100000 CATCHUP_NS=16000000
check_run() {
	local name=$1 r=$2 slack=$3 ahead behind late ok=0
	ahead=$(jq .schedule_max_ahead_ns <<<"$r")
	behind=$(jq .schedule_max_behind_ns <<<"$r")
	late=$((behind + (ahead < 0 ? ahead : 0)))
	echo "# $name: most ahead of the 10 Mbit schedule $((ahead / 1000)) us (tolerance $((TOL_NS / 1000)) us), most behind it $((behind / 1000)) us: late $((late / 1000)) us"
	[ "$ahead" -le $((TOL_NS + slack)) ] || ok=1
	bound_check "$name" "$r" $((slack + late)) || ok=1
	if ((late > CATCHUP_NS)); then
		echo "# $name, for the record: with the cap alone, per stall:"
		bound_check "$name" "$r" $((slack + CATCHUP_NS)) || true
	fi
	return $ok
}

# Every window is widened by granularity + timer_slack: the defaults.
ns_s tc qdisc add dev "$DEV" root carousel || fail "qdisc add (defaults)"
slack=$(qdisc_json "$DEV" | jq '.[0].options | .granularity + .timer_slack')
ns_s tc qdisc del dev "$DEV" root || fail "qdisc del (defaults)"

# Parts 1-3 are the module's own logic, the same on every kernel.
if in_tier main "parts 1-3, the same on every kernel"; then
	echo "# -- 1. stamped burst through carousel"
	ns_s tc qdisc add dev "$DEV" root handle 1: carousel default 10 || fail "qdisc add"
	ns_s tc class add dev "$DEV" parent 1: classid 1:10 carousel rate 10mbit burst 0 ||
		fail "class add"
	r=$(stamped 7101 60)
	echo "# carousel receiver: $r"
	q=$(qdisc_json "$DEV" | jq -c '.[0] | {packets, drops, granularity: .options.granularity, timer_slack: .options.timer_slack, timer_fires, timer_latency_max_ns, overlimits}')
	echo "# qdisc: $q"
	# (soft, so that the bound is checked and printed whatever happened)
	check_ge "received" "$(jq .received <<<"$r")" $N
	check_ge "no drops" 0 "$(jq .drops <<<"$q")"
	check_ge "none early" 0 "$(jq .early <<<"$r")"
	check_run "carousel" "$r" "$slack" || check_fail "burst bound"
	ns_s tc qdisc del dev "$DEV" root

	echo "# -- 1. the same through fq (the control), held to the same checks"
	ns_s tc qdisc add dev "$DEV" root fq || fail "fq"
	r=$(stamped 7100 10)
	echo "# fq receiver: $r"
	# (fq releases them all at once: the receiver's socket buffer overflows,
	# and what it kept already shows the burst)
	assert_ge "fq: received" "$(jq .received <<<"$r")" 100
	assert_eq "fq: early" "$(jq .early <<<"$r")" 0
	if check_run "fq (control)" "$r" "$slack"; then
		fail "the control (fq) kept the bound: the check cannot tell a burst"
	fi
	echo "# fq breaks the bound, as it must"
	ns_s tc qdisc del dev "$DEV" root || fail "fq del"
	ns_s tc qdisc add dev "$DEV" root handle 1: carousel default 10 || fail "qdisc add (2)"
	ns_s tc class add dev "$DEV" parent 1: classid 1:10 carousel rate 10mbit burst 0 ||
		fail "class add (2)"

	echo "# -- 2. a stamp far ahead blocks no other flow of its class"
	txtime_recv 7102 5 40
	txtime_recv 7103 50 30 --latency
	st=$(txtime_send 7102 --gap-us 1000 --count 5 --size $SIZE --lead-ms 8000)
	echo "# stamped 8 s ahead: $st"
	echo "# unstamped: $(txtime_send 7103 --gap-us 0 --count 50 --size 200 --lead-ms 0 --stamp-send)"
	r=$(txtime_wait 7103)
	echo "# unstamped receiver: $r"
	assert_eq "unstamped received" "$(jq .received <<<"$r")" 50
	# (the stamped ones were queued from before the unstamped were sent until
	# their stamp, as their arrivals, below, show)
	assert_ge "the stamped datagrams' time - the last unstamped arrival (ns)" \
		$(( $(jq .first_txtime_ns <<<"$st") - $(jq .last_rx_ns <<<"$r") )) 0
	lat=$(jq .max_latency_ns <<<"$r")
	assert_ge "8 s lead / 10 - worst unstamped latency (ns)" $((800000000 - lat)) 0
	r=$(txtime_wait 7102)
	echo "# stamped receiver: $r"
	assert_eq "stamped received" "$(jq .received <<<"$r")" 5
	assert_ge "earliest stamped arrival - its stamp + 1 ms (ns)" \
		"$(( $(jq .min_slack_ns <<<"$r") + 1000000 ))" 0
	ns_s tc qdisc del dev "$DEV" root

	echo "# -- 3. a packet waiting for its stamp takes no share of the ceiling"
	ns_s tc qdisc add dev "$DEV" root handle 1: carousel rate 100mbit horizon 60s ||
		fail "qdisc add"
	ns_s tc class add dev "$DEV" parent 1: classid 1:a carousel rate 1gbit || fail "class A"
	ns_s tc class add dev "$DEV" parent 1: classid 1:b carousel rate 10mbit || fail "class B"
	txtime_send 7104 --gap-us 0 --count 1 --size $SIZE --lead-ms 30000 \
		--priority $((0x1000a)) >/dev/null
	assert_eq "class A's queue" "$(cjq "$DEV" '.[] | select(.handle == "1:a") | .stats.qlen')" 1
	bg ns_s "$PYTHON" "$TOOLS/udpsend.py" --dst "$IP_R" --port 7105 --size $SIZE \
		--seconds 30 --priority $((0x1000b))
	sender=$BG_PID
	b_bytes() { cjq "$DEV" '.[] | select(.handle == "1:b") | .stats.bytes'; }
	b_busy() { [ "$(cjq "$DEV" '.[] | select(.handle == "1:b") | .stats.qlen')" -ge 10 ]; }
	busywait 30000 b_busy >/dev/null || fail "class B is not backlogged"
	t0=$(now_ms) b0=$(b_bytes)
	sleep 5
	t1=$(now_ms) b1=$(b_bytes)
	a_q=$(cjq "$DEV" '.[] | select(.handle == "1:a") | .stats.qlen')
	kill "$sender" 2>/dev/null
	wait "$sender" 2>/dev/null
	bps=$(( (b1 - b0) * 8 * 1000 / (t1 - t0) ))
	echo "# class B: $((b1 - b0)) B in $((t1 - t0)) ms = $bps bit/s; class A's queue then $a_q"
	assert_eq "class A still holding its stamped datagram" "$a_q" 1
	assert_within "class B's rate (bit/s)" "$bps" 10000000 10
	ns_s tc qdisc del dev "$DEV" root
fi

echo "# -- 4. forwarded: part 1's burst from NS_F, routed by NS_S onto DEV"
NS_F=carousel-f-$$-$RANDOM
ip netns add "$NS_F" || fail "netns $NS_F"
defer ip netns del "$NS_F"
ip -n "$NS_F" link set lo up
ip -n "$NS_F" link add fwd0 type veth peer name fwd1 netns "$NS_S" || fail "veth fwd"
ip -n "$NS_F" addr add 10.77.0.1/24 dev fwd0 || fail "addr fwd0"
ip -n "$NS_S" addr add 10.77.0.2/24 dev fwd1 || fail "addr fwd1"
ip -n "$NS_F" link set fwd0 up && ip -n "$NS_S" link set fwd1 up || fail "fwd up"
ip -n "$NS_F" route add default via 10.77.0.2 || fail "route in $NS_F"
ip -n "$NS_R" route add 10.77.0.0/24 via "$IP_S" || fail "route back in $NS_R"
ip netns exec "$NS_S" sysctl -qw net.ipv4.ip_forward=1 || fail "ip_forward"
busywait 10000 ip netns exec "$NS_F" "${PING[@]}" -c1 -W1 10.77.0.2 >/dev/null ||
	fail "no path from $NS_F to the router"
TXTIME_NS=$NS_F
ns_s tc qdisc add dev "$DEV" root fq || fail "fq"
r=$(stamped 7106 10)
echo "# fq, forwarded: $(jq -c '{received, early, window_packets}' <<<"$r")"
if check_run "fq, forwarded (control)" "$r" "$slack"; then
	fail "the forwarded control (fq) kept the bound: the check cannot tell a burst"
fi
# fq only honours stamps: if it sent any datagram before its stamp, this
# kernel cleared the stamps on the way (6.1 does, from another netns;
# 6.12 keeps them), and the datagrams are only shaped from their arrival.
kept=$([ "$(jq .early <<<"$r")" = 0 ] && echo 1 || echo 0)
ns_s tc qdisc del dev "$DEV" root
# Forwarded datagrams are keyed by their flow hash, masked to 1024 flows a
# class (as fq's orphan mask): two of the 20 senders share a flow about 17%
# of the time, 120 datagrams against the default flow_limit of 100 (one
# 6.12 run lost 40 so).  flow_limit 300 keeps what is checked the bound.
# And where the kernel clears the stamps (6.1), the 1200 datagrams are
# due at once: 20 flows of 60, 1.19 s each at its share of the class,
# which only loss can slow down (no socket), so flow_limit_time (1 s by
# default) would drop the last of each; 34 tests that bound, this part
# the burst bound, with every datagram queued: flow_limit_time 0.
#
# forwarded_run TRY: one carousel run of part 4; exit 0 if it kept the
# bound.  Where the stamps are cleared, the windows are widened by the
# qdisc's own worst watchdog lateness only, which leaves out a stall of
# the receiving side: one 6.1 CI run's worst window held 27 datagrams
# against a bound of 26.1.  So a run that misses is made again, up to 3
# runs, each printed; all 1200 must arrive, none early, in every run.  A
# burst that escapes the class (112 datagrams in 20 ms before the class
# was charged when a stamp comes due) misses in every run.
forwarded_run() {
	local r q late

	ns_s tc qdisc add dev "$DEV" root handle 1: carousel default 10 flow_limit 300 \
		flow_limit_time 0 || fail "qdisc add (4)"
	ns_s tc class add dev "$DEV" parent 1: classid 1:10 carousel rate 10mbit burst 0 ||
		fail "class add (4)"
	r=$(stamped $((7106 + $1)) 60)
	q=$(qdisc_json "$DEV" | jq -c '.[0] | {packets, drops, flows, timer_latency_max_ns}')
	ns_s tc qdisc del dev "$DEV" root || fail "qdisc del (4)"
	echo "# carousel, forwarded (run $1): receiver $(jq -c '{received, early, window_packets}' <<<"$r"); qdisc $q"
	assert_eq "forwarded: received" "$(jq .received <<<"$r")" $N
	if [ "$kept" = 1 ]; then
		assert_eq "forwarded: early" "$(jq .early <<<"$r")" 0
		check_run "carousel, forwarded" "$r" "$slack"
	else
		echo "# this kernel clears EDT stamps when it forwards: no schedule from the stamp to hold; the windows still must"
		late=$(jq .timer_latency_max_ns <<<"$q")
		bound_check "carousel, forwarded" "$r" $((slack + late))
	fi
}
try=1
until forwarded_run $try; do
	[ "$try" -lt 3 ] || fail "burst bound, forwarded, in $try runs"
	try=$((try + 1))
	echo "# the bound missed: part 4's carousel run made again (run $try of 3)"
done
exit 0

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 240
#
# The burst bound holds whatever the senders stamp.  A class with rate R
# and burst B sends at most B + R * W + one packet in any window W, with
# W stretched by its granularity and timer_slack, and by how late packets
# left, up to the catch-up cap (what became due while the watchdog was
# late leaves at once, but no more than 16 ms of the class's rate).
#   1. Stamped burst: 20 sockets each send 60 datagrams of 1400 B, every
#      one stamped (SO_TXTIME) for the same instant 0.5 s ahead, into one
#      10 Mbit class with burst 0, qdisc options at their defaults.  The
#      receiver's timestamps never run ahead of the class's schedule from
#      the stamp, in every 20 ms window stay within the bound (18
#      datagrams, widened by the lateness measured, at most by the cap),
#      and all 1200
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

# stamped PORT TIMEOUT: the stamped burst of part 1 into NS_S's $DEV;
# prints the receiver's JSON.
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
#     what piled up meanwhile leaves at once (the catch-up), but never
#     more than the catch-up cap, CATCHUP_NS (sch_carousel.c), of the
#     class's rate: the bound is widened by min(late, CATCHUP_NS).  fq,
#     which has no cap, is held to the same.  Lateness is printed beside
#     the qdisc's own count of its watchdog's worst lateness.
TOL_NS=100000 CATCHUP_NS=16000000
check_run() {
	local name=$1 r=$2 slack=$3 ahead behind late ok=0
	ahead=$(jq .schedule_max_ahead_ns <<<"$r")
	behind=$(jq .schedule_max_behind_ns <<<"$r")
	late=$((behind + (ahead < 0 ? ahead : 0)))
	echo "# $name: most ahead of the 10 Mbit schedule $((ahead / 1000)) us (tolerance $((TOL_NS / 1000)) us), most behind it $((behind / 1000)) us: late $((late / 1000)) us"
	[ "$ahead" -le $((TOL_NS + slack)) ] || ok=1
	bound_check "$name" "$r" $((slack + (late < CATCHUP_NS ? late : CATCHUP_NS))) || ok=1
	return $ok
}

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
slack=$(jq '.granularity + .timer_slack' <<<"$q")
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
exit 0

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 240
# tier: compat
# compat: class xstats (the nest, read with TC_NEW on 6.1), CLOCK_MONOTONIC intervals
#
# `tc -s class show` gives each class the delay the shaper added to its
# packets, mean and max over the last complete interval (2^30 ns, on
# CLOCK_MONOTONIC, the same for every class).  Qdisc defaults, class
# 1:10 at 1 Mbit, no burst.  tools/delaybursts.py sends, by SO_PRIORITY,
# a burst of N1 (50) datagrams whose wire time is 10 ms each in interval E,
# a burst of N2 (10) in E+1, and reads the class back in E+1 (before and
# after burst 2), E+2 and E+4.  The expected delays come from the send
# times alone: each packet starts when the one before has had its wire
# time (tools/delaybursts.py).  Asserted:
#   - each read happened in its interval (else the schedule slipped: the
#     run is made again, up to 5 times in all), and the model's burst 1
#     queued (its max >= 200 ms: a sender too slow to queue anything would
#     make zeros pass);
#   - E+1, both reads: N1 packets, mean and max within 2% + 1 ms of the
#     model for burst 1, plus the time the qdisc says the catch-up cap
#     took (catchup_lost_ns: when the qdisc runs over 16 ms late the class
#     loses the rest, by design, and its schedule shifts by that); the
#     two reads agree (the second after the roll-over that burst 2
#     caused).  The 1 ms is the send's own latency: the model reads the
#     clock before each send(), the qdisc at its enqueue, and a first send
#     after a pause took up to 0.8 ms longer than the next ones in CI
#     (which shifts every departure of its burst), so the wire time is
#     10 ms, not 1, to keep that small beside the delays;
#   - E+2: N2 packets, mean and max as the model for burst 2;
#   - E+4: no packet, mean and max 0 (an idle interval);
#   - the interval is 2^30 ns, and every datagram arrived.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
quiet_link
RATE=1000000 SIZE=1208 N1=50 N2=10 PORT=7500

# The schedule is the sender's.  On a host so slow that a step ran in the
# wrong interval the run shows nothing, so it is made again with a fresh
# qdisc, up to TRIES times in all, each slip printed; the assertions below
# see the last run.
ON_TIME="[0,1,1,1,1,1,2,2,4,4]" TRIES=5
for try in $(seq $TRIES); do
	ns_s tc qdisc add dev "$DEV" root handle 1: carousel || fail "qdisc add"
	ns_s tc class add dev "$DEV" parent 1: classid 1:10 carousel rate $RATE || fail "class add"
	ping_ok 3 || fail "no ping through the qdisc"

	txtime_recv $((PORT + try)) $((N1 + N2)) 30
	r=$(ns_s "$PYTHON" "$TOOLS/delaybursts.py" --dst "$IP_R" --port $((PORT + try)) \
		--priority 0x10010 --rate $RATE --size $SIZE --bursts $N1,$N2 \
		--dump "${TC_NEW:-tc} -n $NS_S -j -s class show dev $DEV") || fail "delaybursts.py failed"
	echo "$r" >"$ART/delaybursts.$try.json"
	recv=$(txtime_wait $((PORT + try)))
	echo "# receiver: $recv"
	[ "$(jq -c .epochs <<<"$r")" != "$ON_TIME" ] || break
	echo "# run $try of $TRIES: the schedule slipped, steps in intervals $(jq -c .epochs <<<"$r")," \
		"reads took $(jq -c .read_ms <<<"$r") ms"
	[ "$try" = $TRIES ] || ns_s tc qdisc del dev "$DEV" root || fail "qdisc del"
done
lost=$(qjq "$DEV" '.[0].catchup_lost_ns')
echo "# model: $(jq -c '.bursts' <<<"$r") (wire time $(jq .wire_ns <<<"$r") ns); catch-up lost $lost ns," \
	"worst watchdog lateness $(qjq "$DEV" '.[0].timer_latency_max_ns') ns"

assert_eq "intervals of the steps, from E" "$(jq -c .epochs <<<"$r")" "$ON_TIME"
assert_ge "the model's burst 1 max delay (ns)" "$(jq '.bursts[0].max_ns' <<<"$r")" 200000000
assert_eq "datagrams received" "$(jq .received <<<"$recv")" $((N1 + N2))

# dump K: class 1:10's delay statistics in read K (0-based)
dump() {
	jq -c ".dumps[$1][] | select(.handle == \"1:10\") | .stats |
		{delay_mean_ns, delay_max_ns, delay_packets, delay_interval_ns}" <<<"$r"
}
# near NAME ACTUAL MODEL: within 2% + 1 ms + the time the catch-up cap took
near() {
	awk -v n="$1" -v a="$2" -v m="$3" -v l="$lost" 'BEGIN {
		tol = 0.02 * m + 1e6 + l
		d = a - m; if (d < 0) d = -d
		printf "%s: %d ns, model %d ns (tolerance %d ns)\n", n, a, m, tol
		exit !(a ~ /^[0-9]+$/ && d <= tol) }' >&2 || check_fail "$1 off the model"
}
# check K BURST N: read K shows burst BURST (0-based) of N packets
check() {
	local d
	d=$(dump "$1")
	echo "# read $1: $d"
	assert_eq "read $1: interval (ns)" "$(jq .delay_interval_ns <<<"$d")" $((1 << 30))
	assert_eq "read $1: packets" "$(jq .delay_packets <<<"$d")" "$3"
	near "read $1: mean delay" "$(jq .delay_mean_ns <<<"$d")" "$(jq ".bursts[$2].mean_ns" <<<"$r")"
	near "read $1: max delay" "$(jq .delay_max_ns <<<"$d")" "$(jq ".bursts[$2].max_ns" <<<"$r")"
}
check 0 0 $N1
check 1 0 $N1
assert_eq "reads 0 and 1 agree" "$(dump 1)" "$(dump 0)"
check 2 1 $N2
d=$(dump 3)
echo "# read 3: $d"
assert_eq "read 3 (an idle interval)" "$(jq -c '[.delay_packets, .delay_mean_ns, .delay_max_ns]' <<<"$d")" "[0,0,0]"
assert_eq "class packets" "$(cjq "$DEV" '.[] | select(.handle == "1:10") | .stats.packets')" $((N1 + N2))
exit 0

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 330
# tier: compat
# compat: the qdisc watchdog, UDP send-buffer accounting
#
# A sparse flow never waits behind its class's bulk: pings share one
# 10 Mbit class with a UDP flood from FLOWS (200) source ports offered at
# 3x the class rate (tools/udpflood.py: non-blocking sockets, a full one
# is skipped, so the flood never slows down).  Qdisc defaults, no option.
# In one boot, ping RTTs (NPING, IVAL apart) are measured:
#   - unloaded, through carousel;
#   - the floor: the same flood paced by its sender to the class rate,
#     through fq, so no shaper queue exists (the machine's own cost of the
#     load);
#   - through carousel, the flood at 3x;
#   - through HTB at the class rate (its default pfifo_fast child), the
#     same flood.
# Asserted, for carousel (lib/sparse.sh, sparse_check):
#   - p99 <= max(2 x unloaded p99, 1.25 x floor p99) plus two packet times
#     of the class and the run's worst watchdog lateness (the issue's bound
#     itself is printed, with its verdict), p50 likewise without the
#     lateness, and p99 <= 0.1 x HTB's plus that lateness;
#   - every ping answered; the flood loses instead: flow_time_drops > 0,
#     and no limit or horizon drop (which would fall on any flow);
#   - the class's wire rate at the receiver within 1% of its rate (below
#     it, also by the time the qdisc says the catch-up cap took), and
#     Jain's index over the flood's ports >= 0.95.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib/sparse.sh"
require_carousel
setup_pair
quiet_link
RATE=10000000 FLOWS=200 T=10 NPING=200 IVAL=0.02 SIZE=1200
PORT=7400

# flood NAME RATE: the flood at RATE for T s, pings from its third second;
# prints "replies p50 p99 max" and leaves the receiver's JSON in
# $TMPD/NAME.recv and the sender's in $TMPD/NAME.send (both also in the
# artifacts, with the flood's delay series NAME-delay.csv and the pings'
# ping-NAME.seq: scripts/bench/plot-sparse.py plots them).
flood() {
	local name=$1 rate=$2 recv send r
	rm -f "$TMPD/ready"
	bg ns_r "$PYTHON" "$TOOLS/udpflood.py" recv --port $PORT --seconds $((T - 1)) \
		--skip 3 --ready "$TMPD/ready" --series "$ART/$name-delay.csv" \
		>"$TMPD/$name.recv" 2>"$ART/$name.recv.err"
	recv=$BG_PID
	busywait 30000 test -e "$TMPD/ready" || fail "$name: receiver did not start"
	bg ns_s "$PYTHON" "$TOOLS/udpflood.py" send --dst "$IP_R" --port $PORT \
		--flows $FLOWS --rate "$rate" --seconds $T --size $SIZE \
		>"$TMPD/$name.send" 2>"$ART/$name.send.err"
	send=$BG_PID
	sleep 3
	r=$(ping_rtt $NPING $IVAL "$name")
	_wait_pid "$send" || fail "$name: sender failed: $(cat "$ART/$name.send.err")"
	_wait_pid "$recv" || fail "$name: receiver failed: $(cat "$ART/$name.recv.err")"
	cp "$TMPD/$name.recv" "$TMPD/$name.send" "$ART/"
	echo "$r"
}

# carousel_flood: the flood at 3x through carousel; sets the pings'
# n/p50/p99/max_carousel, st_carousel (= st: the qdisc's counters), cls
# (the class's), r1 and s1 (the flood's receiver and sender), and
# jain_carousel, bps_carousel; the qdisc is deleted after.  sparse_check
# runs it again (sparse_rerun) when p99 alone misses, as a stall of this
# emulated machine outside the qdisc can make it: in one 6.12 run the
# pings and the flood alike were held some 300 ms at once, with the
# watchdog never more than 9 ms late.
carousel_flood() {
	read -r n_carousel p50_carousel p99_carousel max_carousel < <(flood carousel $((RATE * 3)))
	st_carousel=$(qdisc_json "$DEV" | jq -c '.[0] | {drops, limit_drops, horizon_drops,
		flow_limit_drops, flow_time_drops, timer_latency_max_ns, catchup_lost_ns}')
	st=$st_carousel
	cls=$(cjq "$DEV" '.[] | select(.handle == "1:1") | {packets: .stats.packets, drops: .stats.drops}' | jq -c .)
	r1=$(cat "$TMPD/carousel.recv") s1=$(cat "$TMPD/carousel.send")
	jain_carousel=$(jq .jain <<<"$r1") bps_carousel=$(jq .bps <<<"$r1")
	echo "# carousel: $n_carousel replies, p50 ${p50_carousel}ms p99 ${p99_carousel}ms max ${max_carousel}ms"
	echo "#   flood sent $s1; received $r1"
	echo "#   qdisc $st; class $cls"
	ns_s tc qdisc del dev "$DEV" root || fail "qdisc del"
}
# (the qdisc and class as 33 and 35 add them: lib/sparse.sh)
SP_RATE=$RATE SP_CARGS=
sparse_rerun() {
	_sparse_carousel_add
	carousel_flood
}
# A run set aside: the flood may lose, by its flows' own bounds only.
sparse_aside_check() {
	local f

	assert_eq "limit and horizon drops (run $1, set aside)" \
		"$(jq '.limit_drops + .horizon_drops' <<<"$st_carousel")" 0
	for f in carousel.recv carousel.send carousel-delay.csv; do
		cp "$ART/$f" "$ART/run$1-$f"
	done
}

_sparse_carousel_add
read -r n_unloaded p50_unloaded p99_unloaded max_unloaded < <(ping_rtt $NPING $IVAL unloaded)
echo "# unloaded: $n_unloaded replies, p50 ${p50_unloaded}ms p99 ${p99_unloaded}ms max ${max_unloaded}ms"
carousel_flood

ns_s tc qdisc add dev "$DEV" root fq || fail "fq"
read -r n_floor p50_floor p99_floor max_floor < <(flood floor $RATE)
echo "# floor (flood paced to the class rate by its sender, fq): $n_floor replies, p50 ${p50_floor}ms p99 ${p99_floor}ms max ${max_floor}ms; received $(cat "$TMPD/floor.recv")"
ns_s tc qdisc del dev "$DEV" root || fail "qdisc del"

ns_s tc qdisc add dev "$DEV" root handle 1: htb default 1 || fail "htb"
ns_s tc class add dev "$DEV" parent 1: classid 1:1 htb rate $RATE ceil $RATE || fail "htb class"
read -r n_htb p50_htb p99_htb max_htb < <(flood htb $((RATE * 3)))
echo "# htb: $n_htb replies, p50 ${p50_htb}ms p99 ${p99_htb}ms max ${max_htb}ms; received $(cat "$TMPD/htb.recv")"
ns_s tc qdisc del dev "$DEV" root || fail "qdisc del"

sparse_check 2 1.25 $RATE
offered=$(jq .offered <<<"$s1") secs=$(jq .seconds <<<"$s1")
obps=$(awk -v n="$offered" -v s="$secs" -v z=$SIZE 'BEGIN { printf "%d", n * (z + 42) * 8 / s }')
echo "# flood offered $obps bit/s to the $RATE bit/s class"
assert_ge "flood offered >= 2x the class rate" "$obps" $((RATE * 2))
assert_ge "flow_time_drops (the flood pays)" "$(jq .flow_time_drops <<<"$st")" 1
assert_eq "limit_drops" "$(jq .limit_drops <<<"$st")" 0
assert_eq "horizon_drops" "$(jq .horizon_drops <<<"$st")" 0
assert_eq "qdisc drops = flow_time_drops + flow_limit_drops" "$(jq .drops <<<"$st")" \
	"$(jq '.flow_time_drops + .flow_limit_drops' <<<"$st")"
assert_eq "class drops = qdisc drops" "$(jq .drops <<<"$cls")" "$(jq .drops <<<"$st")"
assert_ge "flood ports heard" "$(jq .flows <<<"$r1")" $FLOWS
# When the qdisc runs later than the catch-up cap (16 ms) after a packet
# fell due, as when the guest's softirqs wait for CPU (TCG), the time
# past the cap is lost to the class by design, not sent as a burst: the
# qdisc counts it (catchup_lost_ns).  So the rate may fall short by that
# time over the receiver's window, at most 5% more (a module that lost
# time by mistake must not excuse itself; a slow host's CI once stalled
# 234 ms, and lost 3.6% of a 6 s window so), and never exceed it by more
# than 1%.
bps=$(jq .bps <<<"$r1")
tol=$(rate_tol 1 "$(jq .catchup_lost_ns <<<"$st")" "$(jq .window_s <<<"$r1")")
echo "# rate allowance below: 1% + the time lost to the catch-up cap = ${tol}%"
assert_within "class wire rate at the receiver (bit/s)" "$bps" $RATE "$tol"
assert_within "class wire rate at the receiver, upper side (bit/s)" \
	"$(awk -v b="$bps" -v r=$RATE 'BEGIN { print (b > r ? b : r) }')" $RATE 1
exit 0

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# tier: main
#
# limit and flow_limit.  One UDP socket with a large send buffer offers
# 1000 datagrams to a 1 Mbit class at once: the qdisc never holds more
# than `limit' packets, the excess is counted in limit_drops, and
# sent + dropped + backlog equals what was offered.  Lowering the limit
# live drops the excess; the class's clock stays one packet ahead.  Then
# flow_limit caps one socket while a second socket still gets its own
# share.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
quiet_link

offered() { qjq "$DEV" ".[0] | $OFFERED"; }
send() { ns_s "$PYTHON" "$TOOLS/udpsend.py" --dst "$IP_R" --size 1000 --sndbuf 8000000 "$@"; }
# q_read 'JQ' VAR...: one dump of the qdisc; VARs get the words JQ (on .[0])
# prints, so that several counters come from the same instant.
q_read() {
	local f=$1
	shift
	read -r "$@" <<<"$(qjq "$DEV" ".[0] | $f")"
}

tc_batch "qdisc add, class add" <<EOF
qdisc add dev $DEV root handle 1: carousel default 10 limit 100
class add dev $DEV parent 1: classid 1:10 carousel rate 1mbit
EOF
base=$(offered)
out=$(send --port 7000 --count 1000) || fail "udpsend"
echo "# sender: $out"
# (one dump for all the counters below, taken when qlen alone was: the
# class sends on meanwhile, and they are then all of the same instant)
q_read '"\(.qlen) \(.packets) \(.drops) \(.limit_drops) \(.wheel_packets + .waiting_packets) \(.requeues)"' \
	qlen packets qdrops drops own requeues
echo "# qlen $qlen ($own in the qdisc, requeues $requeues) after the burst; sent $packets drops $qdrops limit_drops $drops"
backlog_ok "$qlen" "$own" "$requeues"
[ "$qlen" -le 100 ] || fail "qlen $qlen > limit 100"
# Everything accepted was sent or is still queued: at least the limit.
assert_ge "accepted (sent + backlog)" "$((packets + qlen))" 100
assert_ge "limit_drops" "$drops" $((1000 - 100 - packets))
assert_eq "drops = limit_drops" "$qdrops" "$drops"
assert_eq "offered" "$((packets + qdrops + own - base))" 1000

# Lowering the limit live drops the excess at once, counted.
ns_s tc qdisc change dev "$DEV" root carousel limit 10 || fail "limit 10"
q_read "\"\\(.qlen) \\($OFFERED)\"" qlen off
[ "$qlen" -le 10 ] || fail "qlen $qlen after lowering limit to 10"
assert_eq "offered after trim" "$((off - base))" 1000

# ...and the class's schedule never holds its backlog: a saturated class
# keeps one packet charged ahead of now, the rest wait their turn
# uncharged, so its clock (its lag) stays within about one packet of now
# whatever it queues, and a trim has no time to give back.  A 100 kbit
# class given 100 datagrams (8.3 s of its rate, 83 ms each), then limit
# 10: the lag is at most 2 packets + 100 ms before and after the trim
# (before just-in-time charging: the whole queue's time, about 8 s).
tc_batch "qdisc del, qdisc add, class add" <<EOF
qdisc del dev $DEV root
qdisc add dev $DEV root handle 1: carousel default 10
class add dev $DEV parent 1: classid 1:10 carousel rate 100kbit
EOF
send --port 7001 --count 100 >/dev/null || fail "udpsend"
lag_ok() {
	local kept lag
	read -r kept lag < <(cjq "$DEV" '.[0].stats | "\(.qlen) \(.lag_ns)"')
	[[ "$lag" =~ ^[0-9]+$ && "$kept" =~ ^[0-9]+$ ]] || fail "no qlen/lag_ns in tc -s class: $kept $lag"
	awk -v l="$lag" -v k="$kept" -v w="$1" 'BEGIN {
		t = 1042 * 8 / 1e5; hi = (2 * t + 0.1) * 1e9
		printf "class lag %s: %.1f ms with %d queued (want <= %.1f ms: 2 packets of %.1f ms + 100 ms)\n",
			w, l / 1e6, k, hi / 1e6, t * 1e3
		exit !(l <= hi && k >= 1) }' >&2 ||
		check_fail "the class's lag $1 is more than one packet ahead"
}
lag_ok "before the trim"
ns_s tc qdisc change dev "$DEV" root carousel limit 10 || fail "limit 10"
lag_ok "after the trim"

tc_batch "qdisc del, qdisc add 2, class add" <<EOF
qdisc del dev $DEV root
qdisc add dev $DEV root handle 1: carousel default 10 flow_limit 20
class add dev $DEV parent 1: classid 1:10 carousel rate 1mbit
EOF
accepted() { qjq "$DEV" '.[0] | .packets + .wheel_packets + .waiting_packets'; }
q_read "\"\\($OFFERED) \\(.packets + .wheel_packets + .waiting_packets)\"" base a0
send --port 7001 --count 500 >/dev/null || fail "udpsend 1"
a1=$(accepted)
send --port 7002 --count 500 >/dev/null || fail "udpsend 2"
q_read "\"\\(.packets + .wheel_packets + .waiting_packets) \\(.qlen) \\(.flow_limit_drops) \\($OFFERED)\"" \
	a2 qlen fldrops off
echo "# two sockets: accepted $a1 then $((a2 - a1)), qlen $qlen, flow_limit_drops $fldrops"
[ "$qlen" -le 40 ] || fail "qlen $qlen > 2 x flow_limit"
# Socket 2 has a budget of its own: sharing socket 1's full one, it would
# only get the few slots socket 1's departures freed meanwhile.
assert_ge "accepted from socket 2" $((a2 - a1)) 20
assert_eq "flow_limit_drops = offered - accepted" "$fldrops" $((1000 - (a2 - a0)))
assert_eq "offered" "$((off - base))" 1000

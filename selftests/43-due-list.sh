#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# tier: main
#
# The due list (sch_carousel.c, carousel_enqueue_due()): a packet of an
# idle class that may leave as it comes skips the wheel and the flow
# table.  The wheel can then stay empty for any time while traffic flows,
# and its cursor with it; what goes into it next must still find room.
#
# 1. A wheel unused for longer than its ring spans (2 levels, 1.05 s at
#    granularity 1us and horizon 200ms).  One process sends a 1442-byte
#    datagram to class 1:20, which leaves at once and puts the 8 kbit/s
#    ceiling's clock 1.44 s ahead, then three 52-byte ones to 1:10: the
#    first goes on the due list and waits there for the ceiling, the
#    other two wait their turn in the busy class (156 bytes at the
#    ceiling, 156 ms, within the horizon).  When the first leaves, its
#    class's next turn goes into the wheel: with the cursor left where
#    it was 1.5 s before, the wheel refused it and both waiting datagrams
#    were horizon drops (a review of the due list found it); all four
#    must leave.
# 2. A rebuild with a packet on the due list: under a 4 kbit/s ceiling
#    the first of two small datagrams of class 1:10 waits about 2.9 s on
#    the due list, behind a big one of 1:20, and limit 1 is set
#    meanwhile.  The due packet is the earlier, so it is kept and the
#    later one is the limit drop; the counters add up, and the qdisc
#    drains.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
quiet_link

# send_burst FIRST_PRIO FIRST_SIZE PRIO N SIZE: one process sends a
# datagram of FIRST_SIZE bytes with priority FIRST_PRIO, then N of SIZE
# bytes with PRIO, back to back.
send_burst() {
	ns_s "$PYTHON" - "$IP_R" "$@" <<'EOF' || fail "send_burst"
import socket, sys
dst = sys.argv[1]
first, first_size, prio, n, size = (int(a, 0) for a in sys.argv[2:7])
socks = []
for p in (first, prio):
	s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	s.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, p)
	s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
	socks.append(s)
socks[0].sendto(b"x" * first_size, (dst, 9))
for i in range(n):
	socks[1].sendto(b"x" * size, (dst, 9))
EOF
}

drained() { [ "$(qjq "$DEV" '.[0].qlen')" = 0 ]; }

# --- 1: an old cursor
ns_s tc qdisc add dev "$DEV" root handle 1: carousel rate 8kbit horizon 200ms ||
	fail "qdisc add"
for m in 10 20; do
	ns_s tc class add dev "$DEV" parent 1: classid 1:$m carousel rate 1mbit ||
		fail "class 1:$m"
done
assert_eq "wheel levels at horizon 200ms" "$(qjq "$DEV" '.[0].wheel_levels')" 2
p0=$(qjq "$DEV" '.[0].packets')
sleep 1.5
send_burst 0x10020 1400 0x10010 3 10
st=$(qdisc_json "$DEV")
echo "# after the burst: $(jq -c '.[0] | {qlen, wheel_packets, waiting_packets, flows}' <<<"$st")"
# (it shows that the case was made: the ceiling holds 1:10's first
# datagram while its other two wait)
assert_eq "waiting behind the held datagram" "$(jq '.[0].waiting_packets' <<<"$st")" 2
busywait 10000 drained || fail "qdisc did not drain"
st=$(qdisc_json "$DEV")
echo "# drained: $(jq -c '.[0] | {packets, drops, horizon_drops, limit_drops}' <<<"$st")"
assert_eq "horizon drops" "$(jq '.[0].horizon_drops' <<<"$st")" 0
assert_eq "drops" "$(jq '.[0].drops' <<<"$st")" 0
assert_eq "sent" "$(( $(jq '.[0].packets' <<<"$st") - p0 ))" 4
assert_eq "class 1:10 sent" "$(cjq "$DEV" '.[] | select(.handle == "1:10") | .stats.packets')" 3

# --- 2: a rebuild with a packet on the due list
ns_s tc qdisc del dev "$DEV" root || fail "qdisc del"
ns_s tc qdisc add dev "$DEV" root handle 1: carousel rate 4kbit horizon 2s ||
	fail "qdisc add (2)"
for m in 10 20; do
	ns_s tc class add dev "$DEV" parent 1: classid 1:$m carousel rate 1mbit ||
		fail "class 1:$m (2)"
done
p0=$(qjq "$DEV" '.[0].packets')
send_burst 0x10020 1400 0x10010 2 10
ns_s tc qdisc change dev "$DEV" root handle 1: carousel rate 4kbit horizon 2s limit 1 ||
	fail "limit 1"
st=$(qdisc_json "$DEV")
echo "# after limit 1: $(jq -c '.[0] | {qlen, wheel_packets, waiting_packets, limit_drops}' <<<"$st")"
assert_eq "limit drops (the later datagram)" "$(jq '.[0].limit_drops' <<<"$st")" 1
busywait 10000 drained || fail "qdisc did not drain (2)"
st=$(qdisc_json "$DEV")
echo "# drained: $(jq -c '.[0] | {packets, drops, limit_drops, wheel_packets}' <<<"$st")"
assert_eq "sent (2)" "$(( $(jq '.[0].packets' <<<"$st") - p0 ))" 2
assert_eq "drops (2)" "$(jq '.[0].drops' <<<"$st")" 1
assert_eq "offered = sent + dropped + backlog" \
	"$(( $(jq ".[0] | $OFFERED" <<<"$st") - p0 ))" 3
assert_eq "class 1:10 sent (2)" \
	"$(cjq "$DEV" '.[] | select(.handle == "1:10") | .stats.packets')" 1

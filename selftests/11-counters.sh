#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# tier: rest
#
# The counters add up.  Three UDP sockets offer known numbers of datagrams
# to two classes and to no class, against a small limit and flow_limit;
# at every read while the wheel drains, the qdisc's sent + dropped +
# backlog equals what was offered, and so does each class's.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
quiet_link

ns_s tc qdisc add dev "$DEV" root handle 1: carousel limit 300 flow_limit 150 || fail "qdisc add"
ns_s tc class add dev "$DEV" parent 1: classid 1:10 carousel rate 2mbit || fail "class add"
ns_s tc class add dev "$DEV" parent 1: classid 1:20 carousel rate 1mbit || fail "class add"
send() { ns_s "$PYTHON" "$TOOLS/udpsend.py" --dst "$IP_R" --size 800 --sndbuf 4000000 "$@" | jq .sent; }

q0=$(qjq "$DEV" ".[0] | $OFFERED")
a=$(send --port 7200 --count 400 --priority 0x10010)
b=$(send --port 7201 --count 400 --priority 0x10020)
c=$(send --port 7202 --count 100)
echo "# offered: 1:10 $a, 1:20 $b, unclassified $c"
[ $((a + b + c)) = 900 ] || fail "sender did not offer 900"
for i in 1 2 3 4 5; do
	qj=$(qdisc_json "$DEV")
	cj=$(tc_json -n "$NS_S" -s class show dev "$DEV")
	echo "# read $i: $(jq -c '.[0] | {packets, drops, qlen, wheel_packets, waiting_packets, requeues, limit_drops,
		flow_limit_drops}' <<<"$qj")"
	assert_eq "qdisc sent+dropped+backlog" "$(jq ".[0] | $OFFERED" <<<"$qj")" $((q0 + 900))
	backlog_ok $(jq -r '.[0] | "\(.qlen) \(.wheel_packets + .waiting_packets) \(.requeues)"' <<<"$qj")
	assert_eq "1:10 sent+dropped+backlog" \
		"$(jq '.[] | select(.handle == "1:10") | .stats | .packets + .drops + .qlen' <<<"$cj")" "$a"
	assert_eq "1:20 sent+dropped+backlog" \
		"$(jq '.[] | select(.handle == "1:20") | .stats | .packets + .drops + .qlen' <<<"$cj")" "$b"
	sleep 0.5
done
assert_ge "some drops to account for" "$(jq '.[0].drops' <<<"$qj")" 1

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# tier: main
#
# `tc class del' of a class with packets in the wheel, while its sender
# runs (the class is chosen by SO_PRIORITY, skb->priority = 1:10): the
# delete succeeds, the queued packets still leave, later packets go
# unclassified, and sent + dropped + backlog equals what was offered.
# Then the same with the qdisc deleted right after the class.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
quiet_link

offered() { qjq "$DEV" ".[0] | $OFFERED"; }
class_qlen() { tc_json -n "$NS_S" -s class show dev "$DEV" | jq '[.[] | select(.handle == "1:10") | .stats.qlen] | add // 0'; }
sender() { bg ns_s "$PYTHON" "$TOOLS/udpsend.py" --dst "$IP_R" --port 7100 --size 1000 \
		--sndbuf 2000000 --priority 0x10010 --rate 4000000 --seconds "$1"; }

# One socket builds the backlog: give it room (flow_limit defaults to 100).
ns_s tc qdisc add dev "$DEV" root handle 1: carousel flow_limit 5000 || fail "qdisc add"
ns_s tc class add dev "$DEV" parent 1: classid 1:10 carousel rate 2mbit || fail "class add"
base=$(offered)
# The sender must still run when the class is deleted, after the polls
# below, which are slower by WAIT_SCALE under check-debug and take about
# 0.4 s a tc run on a slow TCG host (there a delete came after a 4 s
# sender had stopped): it sends for 8 s (3 s the second time, which
# needs only a backlog) times that.
sender $((8 * WAIT_SCALE)) > "$TMPD/send1"
pid=$BG_PID
backlogged() { [ "$(class_qlen)" -ge 20 ]; }
drained() { [ "$(qjq "$DEV" '.[0].qlen')" = 0 ]; }
# The sender's clock starts at its first send, and python takes seconds to
# get there on a loaded TCG host: wait for its first packet, then for the
# backlog (20 packets take 80 ms at the 2 Mbit it is over the class).
class_seen() { [ "$(tc_json -n "$NS_S" -s class show dev "$DEV" | jq '[.[] | select(.handle == "1:10") | .stats.packets + .stats.qlen] | add // 0')" -gt 0 ]; }
busywait 30000 class_seen >/dev/null || fail "the sender never reached class 1:10"
busywait 5000 backlogged >/dev/null || fail "class 1:10 never built a backlog"
q=$(class_qlen)
echo "# deleting 1:10 with $q packets queued"
unc0=$(qjq "$DEV" '.[0].unclassified')
ns_s tc class del dev "$DEV" classid 1:10 || fail "class del with backlog"
assert_eq "classes after del" "$(qjq "$DEV" '.[0].classes')" 0
_wait_pid "$pid"
echo "# sender: $(cat "$TMPD/send1")"
off=$(jq .sent "$TMPD/send1")
assert_ge "unclassified after del" "$(qjq "$DEV" '.[0].unclassified')" $((unc0 + 1))
busywait 10000 drained >/dev/null ||
	fail "queued packets of the deleted class never left: qlen $(qjq "$DEV" '.[0].qlen')"
assert_eq "offered" "$(( $(offered) - base ))" "$off"
assert_eq "drops" "$(qjq "$DEV" '.[0].drops')" 0

# Again, and delete the qdisc while the dead class still holds packets.
ns_s tc class add dev "$DEV" parent 1: classid 1:10 carousel rate 1mbit || fail "class re-add"
sender $((3 * WAIT_SCALE)) >/dev/null
busywait 30000 class_seen >/dev/null || fail "the sender never reached class 1:10 the second time"
busywait 5000 backlogged >/dev/null || fail "no backlog the second time"
ns_s tc class del dev "$DEV" classid 1:10 || fail "class del 2"
[ "$(qjq "$DEV" '.[0].qlen')" -gt 0 ] || fail "nothing left queued to test qdisc delete with"
ns_s tc qdisc del dev "$DEV" root || fail "qdisc del with a dead class queued"

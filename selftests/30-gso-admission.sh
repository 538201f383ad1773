#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# tier: compat
# compat: CAROUSEL_HAVE_NET_GSO_H: skb_gso_segment(), UDP_SEGMENT, fragments
#
# A GSO packet is admitted or refused whole (issue 14, item 8).  The qdisc
# splits a GSO packet that would hold its class for more than 1 ms, so
# that each segment gets its own departure; its sender handed over one
# packet.  flow_limit counts what the sender handed over (as fq does), and
# the split never drops part of an admitted packet.
#
# A UDP_SEGMENT sender (one connected socket, N sends of SEGS x 1000 B,
# blocking, default send buffer) into a 10 Mbit class at the qdisc's
# defaults: its send buffer holds about three such packets, i.e. more
# segments than flow_limit (100), but fewer packets.  Every datagram must
# arrive, none may be dropped, the socket must have waited for its buffer
# (the backpressure that replaces the drops), and the class must hold its
# rate.  Before, each split counted SEGS packets against flow_limit: the
# segments of the second packet past 100 were dropped.
#
# Then IP fragments, whose sender also handed over one datagram: IP output
# takes any non-zero return of the qdisc for an error and frees the
# datagram's remaining fragments, so NET_XMIT_CN, which the default flow
# budget returns to a flow over it, must reach TCP only.  Two sockets
# (the budget is for flows that share a class) send NF datagrams of 6000 B
# (5 fragments each) in turns into a 2 Mbit class, where their flows are
# soon over budget: every datagram must arrive.  Before, the first
# fragment past the budget got CN and the rest of its datagram was freed.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
quiet_link
N=30 SEGS=64 PAYLOAD=1000 RATE=10000000
PORT=7300

ns_s tc qdisc add dev "$DEV" root handle 1: carousel default 10 || fail "qdisc add"
ns_s tc class add dev "$DEV" parent 1: classid 1:10 carousel rate $RATE || fail "class add"

# (a background command's stdin is /dev/null: the script is a file)
cat >"$TMPD/recv.py" <<'EOF'
import json, socket, sys, time
port, ready = int(sys.argv[1]), sys.argv[2]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE
s.bind(("0.0.0.0", port))
open(ready, "w").close()
s.settimeout(30)
# The rate is timed from the SKIPth datagram on: the start (the first
# segments leave at once, the reader wakes late) is no rate.
SKIP = 100
n, first, last = 0, None, None
try:
    while True:
        s.recv(65536)
        last = time.monotonic()
        n += 1
        if n == SKIP:
            first = last
        s.settimeout(2)
except socket.timeout:
    pass
print(json.dumps({"received": n, "timed": n - SKIP,
                  "seconds": (last - first) if n > SKIP else 0}))
EOF
# recv_start PORT: a receiver counting datagrams on PORT until 2 s
# without one, into $TMPD/recv-PORT.json; its pid in $receiver.
recv_start() {
	bg ns_r "$PYTHON" "$TMPD/recv.py" "$1" "$TMPD/listening-$1" \
		>"$TMPD/recv-$1.json" 2>"$ART/recv-$1.err"
	receiver=$BG_PID
	busywait 30000 test -e "$TMPD/listening-$1" || fail "receiver did not start"
}
recv_start $PORT

ns_s "$PYTHON" - "$IP_R" "$PORT" "$N" "$SEGS" "$PAYLOAD" >"$TMPD/send.json" <<'EOF' ||
import json, socket, sys, time
dst, port, n, segs, size = sys.argv[1], int(sys.argv[2]), *map(int, sys.argv[3:6])
UDP_SEGMENT = 103
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_UDP, UDP_SEGMENT, size)
s.connect((dst, port))
buf = b"g" * (segs * size)
blocked = 0.0
for _ in range(n):
    t = time.monotonic()
    s.send(buf)
    blocked += time.monotonic() - t
print(json.dumps({"sent": n * segs, "blocked_s": blocked,
                  "sndbuf": s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)}))
EOF
	fail "UDP_SEGMENT sender failed (no UDP GSO here?)"
_wait_pid "$receiver" || fail "receiver failed: $(cat "$ART/recv-$PORT.err")"
snd=$(cat "$TMPD/send.json") rcv=$(cat "$TMPD/recv-$PORT.json")
echo "# sender: $snd"
echo "# receiver: $rcv"
st=$(qjq "$DEV" '.[0] | {packets, drops, flow_limit_drops, limit_drops, horizon_drops}')
echo "# tc -s: $(jq -c . <<<"$st")"

assert_eq "datagrams received" "$(jq .received <<<"$rcv")" $((N * SEGS))
assert_eq "qdisc drops" "$(jq .drops <<<"$st")" 0
# The whole run takes N x SEGS x 1042 B at the rate (53 ms a send at 10
# Mbit); a sender held only by the qdisc's drops would not wait at all.
awk -v b="$(jq .blocked_s <<<"$snd")" -v n=$N -v s=$SEGS -v p=$PAYLOAD -v r=$RATE 'BEGIN {
	t = n * s * (p + 42) * 8 / r
	printf "sender blocked for send buffer: %.2f s of %.2f s at the rate (want >= half)\n", b, t
	exit !(b >= t / 2) }' >&2 || check_fail "the sender did not wait for its send buffer"
check_within "receive rate (bit/s, wire)" \
	"$(jq -r --argjson p $PAYLOAD '.timed * ($p + 42) * 8 / .seconds | floor' <<<"$rcv")" \
	$RATE 2

# Part 2: fragments.
NF=40 FPORT=$((PORT + 1)) FRATE=2000000
# (flow_limit raised: IP output may allocate a datagram's fragments up to
# twice the send buffer, and each fragment counts against flow_limit; this
# part is about CN, at the default budget.)
ns_s tc qdisc del dev "$DEV" root || fail "qdisc del"
ns_s tc qdisc add dev "$DEV" root handle 1: carousel default 10 flow_limit 1000 ||
	fail "qdisc add"
ns_s tc class add dev "$DEV" parent 1: classid 1:10 carousel rate $FRATE || fail "class add"
recv_start $FPORT
ns_s "$PYTHON" - "$IP_R" "$FPORT" "$NF" <<'EOF' || fail "fragmenting sender failed"
import socket, sys
dst, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
for s in socks:
    s.connect((dst, port))
for i in range(n):
    socks[i % 2].send(b"f" * 6000)
EOF
_wait_pid "$receiver" || fail "receiver failed: $(cat "$ART/recv-$FPORT.err")"
rcv=$(cat "$TMPD/recv-$FPORT.json")
st=$(qjq "$DEV" '.[0] | {packets, drops, cn_returns, flow_limit_drops, limit_drops}')
echo "# fragments: receiver $rcv; tc -s $(jq -c . <<<"$st")"
assert_eq "datagrams of 5 fragments received" "$(jq .received <<<"$rcv")" $NF
assert_eq "qdisc drops" "$(jq .drops <<<"$st")" 0
assert_eq "fragments sent by the qdisc" "$(jq .packets <<<"$st")" $((NF * 5))
exit 0

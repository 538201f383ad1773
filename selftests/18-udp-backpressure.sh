#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# tier: main
#
# A UDP sender blocks instead of losing.  It writes N datagrams as fast as
# its socket lets it into a 10 Mbit class (SO_PRIORITY 1:10).  Its
# datagrams stay charged to the socket (sk_wmem_alloc) until the wheel
# releases them, so once the send buffer is full each send waits for a
# departure:
#   - the qdisc drops nothing, and the receiver gets all N;
#   - the sender was seen blocking: it spent most of its time waiting in
#     poll() for send-buffer space after EAGAIN;
#   - the receiver's mean spacing (SO_TIMESTAMPNS) gives the class rate
#     within 1%, counted on the wire as the qdisc counts it (L2 length).
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
quiet_link
N=6000 SIZE=1400 RATE=10000000

ns_s tc qdisc add dev "$DEV" root handle 1: carousel || fail "qdisc add"
ns_s tc class add dev "$DEV" parent 1: classid 1:10 carousel rate $RATE || fail "class add"

txtime_recv 6000 $N 60
snd=$(ns_s "$PYTHON" "$TOOLS/udpsend.py" --dst "$IP_R" --port 6000 --size $SIZE \
	--count $N --priority 0x10010) || fail "udpsend failed"
echo "# sender: $snd"
r=$(txtime_wait 6000)
echo "# receiver: $r"
st=$(qdisc_json "$DEV" | jq -c '.[0] | {packets, drops, flow_limit_drops,
	limit_drops, horizon_drops, cn_returns}')
echo "# tc -s: $st"

assert_eq "sent" "$(jq .sent <<<"$snd")" $N
assert_eq "qdisc drops" "$(jq .drops <<<"$st")" 0
assert_eq "received" "$(jq .received <<<"$r")" $N
awk -v b="$(jq .blocked_seconds <<<"$snd")" -v t="$(jq .seconds <<<"$snd")" \
    -v n="$(jq .blocked <<<"$snd")" 'BEGIN {
	printf "sender blocked %d times, %.2fs of %.2fs (want >= 50%%)\n", n, b, t
	exit !(n > 0 && b >= t / 2) }' >&2 || fail "the sender did not block"
wire_gap=$(awk -v r=$RATE -v s=$SIZE 'BEGIN { printf "%.0f\n", (s + 42) * 8 * 1e9 / r }')
assert_within "mean spacing (ns)" "$(jq .mean_gap_ns <<<"$r")" "$wire_gap" 1

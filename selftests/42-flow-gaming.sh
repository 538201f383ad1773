#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 150
# tier: compat
# compat: the qdisc watchdog, UDP send-buffer accounting
#
# The new flows' priority goes to flows below their share, not to any
# flow that was idle: a sender cannot take a class from its bulk flows by
# spreading its packets over ports that each go idle between them.
# One 10 Mbit class, qdisc defaults, no option; for T s at once:
#   - bulk: a UDP flood from BULK (4) source ports at 3x the class rate;
#   - gamer: GAMER (32) ports; each write, up to the class rate, goes to
#     a port with nothing left in the host (tools/udpflood.py --idle), so
#     every datagram finds its flow idle and, before, new.
# Before the flows' virtual times (carousel_flow_linger()) the gamer's
# ports, new at every write and served first, took the class: 1.000 of
# it in a 6.12 run, the flood not one datagram in 6 s (with 8 ports at
# 3x the rate: 0.999).  Per flow, the 36 flows' equal shares give the
# gamer 32/36 of it and the flood 4/36.  (Each gamer port holds at most
# one packet, so it keeps less than its share: 0.78 in a 6.12 run.)
# Asserted:
#   - the gamer tried to send more than its share (>= 0.6 of the rate,
#     counting the datagrams its full socket buffers refused), and the
#     flood more than the class rate, so that both compete;
#   - the gamer receives <= its share + 0.1 of the class rate, and the
#     flood >= 3/4 of its share;
#   - the class's wire rate at the receivers within 1% of its rate (below
#     it, also by the time the qdisc says the catch-up cap took, as in 34);
#   - no limit or horizon drop: whoever loses, loses by its flows' own
#     bounds.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
quiet_link
RATE=10000000 BULK=4 GAMER=32 T=10 SIZE=1200
PORT_B=7600 PORT_G=7700

ns_s tc qdisc add dev "$DEV" root handle 1: carousel default 1 || fail "qdisc add"
ns_s tc class add dev "$DEV" parent 1: classid 1:1 carousel rate $RATE || fail "class add"
ping_ok 3 || fail "no ping through the qdisc"

# Both receivers, then both senders, for T s.
for p in $PORT_B $PORT_G; do
	rm -f "$TMPD/ready-$p"
	bg ns_r "$PYTHON" "$TOOLS/udpflood.py" recv --port $p --seconds $((T - 1)) \
		--skip 3 --ready "$TMPD/ready-$p" >"$TMPD/recv-$p" 2>"$ART/recv-$p.err"
	eval "recv_$p=\$BG_PID"
	busywait 30000 test -e "$TMPD/ready-$p" || fail "receiver $p did not start"
done
bg ns_s "$PYTHON" "$TOOLS/udpflood.py" send --dst "$IP_R" --port $PORT_B \
	--flows $BULK --rate $((RATE * 3)) --seconds $T --size $SIZE \
	>"$TMPD/send-$PORT_B" 2>"$ART/send-$PORT_B.err"
send_b=$BG_PID
bg ns_s "$PYTHON" "$TOOLS/udpflood.py" send --dst "$IP_R" --port $PORT_G \
	--flows $GAMER --rate $RATE --seconds $T --size $SIZE --idle \
	>"$TMPD/send-$PORT_G" 2>"$ART/send-$PORT_G.err"
send_g=$BG_PID
_wait_pid "$send_b" || fail "bulk sender: $(cat "$ART/send-$PORT_B.err")"
_wait_pid "$send_g" || fail "gamer sender: $(cat "$ART/send-$PORT_G.err")"
for p in $PORT_B $PORT_G; do
	eval "pid=\$recv_$p"
	_wait_pid "$pid" || fail "receiver $p: $(cat "$ART/recv-$p.err")"
	cp "$TMPD/recv-$p" "$TMPD/send-$p" "$ART/"
done
rb=$(cat "$TMPD/recv-$PORT_B") rg=$(cat "$TMPD/recv-$PORT_G")
sb=$(cat "$TMPD/send-$PORT_B") sg=$(cat "$TMPD/send-$PORT_G")
st=$(qdisc_json "$DEV" | jq -c '.[0] | {drops, limit_drops, horizon_drops,
	flow_limit_drops, flow_time_drops, catchup_lost_ns, flows}')
echo "# bulk ($BULK ports): sent $sb; received $rb"
echo "# gamer ($GAMER ports): sent $sg; received $rg"
echo "# qdisc $st"

# tried SEND_JSON: what a sender tried to send, bit/s: the datagrams it
# handed over and those it skipped, its socket's buffer full (its flows
# queued: the qdisc holds what a sender's share does not cover, charged
# to its socket, as designed)
tried() {
	jq -r --argjson z $SIZE '(.offered + .skipped) * ($z + 42) * 8 / .seconds | floor' <<<"$1"
}
assert_ge "gamer tried (bit/s) >= 0.6 x the class rate" "$(tried "$sg")" $((RATE * 6 / 10))
assert_ge "bulk tried (bit/s) >= the class rate" "$(tried "$sb")" $RATE
bps_b=$(jq .bps <<<"$rb") bps_g=$(jq .bps <<<"$rg")
# each side's share of the class by its count of flows, +- 0.1 of the rate
share_g=$((RATE * GAMER / (GAMER + BULK))) share_b=$((RATE * BULK / (GAMER + BULK)))
echo "# shares of the class: bulk $(awk -v b="$bps_b" -v r=$RATE 'BEGIN { printf "%.3f", b / r }')," \
	"gamer $(awk -v b="$bps_g" -v r=$RATE 'BEGIN { printf "%.3f", b / r }')" \
	"(equal per flow: $BULK/$((GAMER + BULK)) and $GAMER/$((GAMER + BULK)))"
assert_ge "gamer's share + 0.1 x rate >= gamer's (bit/s)" $((share_g + RATE / 10)) "$bps_g"
assert_ge "bulk's (bit/s) >= 3/4 of its share" "$bps_b" $((share_b * 3 / 4))
assert_eq "limit_drops + horizon_drops" "$(jq '.limit_drops + .horizon_drops' <<<"$st")" 0
# The two receivers' windows are each T - 1 - 3 s long, started by their
# own first datagram: their sum is the class's rate over about that window.
bps=$((bps_b + bps_g))
win=$(jq -n --argjson a "$(jq .window_s <<<"$rb")" --argjson b "$(jq .window_s <<<"$rg")" '[$a, $b] | min')
tol=$(rate_tol 1 "$(jq .catchup_lost_ns <<<"$st")" "$win")
echo "# class wire rate $bps bit/s; allowance below: 1% + the time lost to the catch-up cap = ${tol}%"
assert_within "class wire rate at the receivers (bit/s)" "$bps" $RATE "$tol"
assert_within "class wire rate at the receivers, upper side (bit/s)" \
	"$(awk -v b="$bps" -v r=$RATE 'BEGIN { print (b > r ? b : r) }')" $RATE 1
exit 0

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 200
# tier: compat
# compat: CAROUSEL_HAVE_TSTAMP_TYPE: the clock of skb->tstamp, both branches
#
# EDT honoured.  A UDP sender stamps each datagram with SO_TXTIME, 2ms
# apart starting 200ms ahead, and writes as fast as its socket allows
# (about 1.2ms a datagram under emulation): it runs ahead until its send
# buffer blocks, so only the qdisc can space them.  The receiver
# (SO_TIMESTAMPNS) sees no datagram before its txtime and a mean spacing
# within 1% of 2ms; the same with stamps on CLOCK_TAI and CLOCK_REALTIME,
# moved to the monotonic clock.  Then the same sender
# through a 5 Mbit class (chosen by SO_PRIORITY = 1:10): the departure is
# the later of txtime and class time, so the class's spacing wins.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
quiet_link

ns_s tc qdisc add dev "$DEV" root handle 1: carousel || fail "qdisc add"
N=3000 SIZE=1400 GAP_US=2000

# Release order, seen on the sender's device as the qdisc hands each
# datagram to the driver (the receiver's socket order also depends on
# which vCPU's veth backlog delivered it).  The sniffer's timeout is idle
# time from its start, before the receiver and the sender (two python3
# starts, each seen to take over 5 s in a busy TCG guest) are up: it only
# bounds the wait when nothing comes, so it is generous.  The sniffer and
# the receiver start at once (both idle until the sender sends).
bg ns_s "$PYTHON" "$TOOLS/sniff_seq.py" --dev "$DEV" --port 6000 --count $N \
	--timeout 60 --ready "$TMPD/sniffing" >"$TMPD/sniff.json"
sniff=$BG_PID
txtime_recv 6000 $N 30
busywait 10000 test -e "$TMPD/sniffing" || fail "sniffer did not start"
echo "# sender: $(txtime_send 6000 --gap-us $GAP_US --count $N --size $SIZE --lead-ms 200)"
r=$(txtime_wait 6000)
echo "# receiver: $r"
_wait_pid "$sniff"
echo "# released: $(cat "$TMPD/sniff.json")"
read -r captured sreorders <<<"$(jq -r '"\(.captured) \(.reorders)"' "$TMPD/sniff.json")"
assert_eq "datagrams seen leaving the qdisc" "$captured" $N
assert_eq "reorders as released by the qdisc" "$sreorders" 0
read -r received early reorders gap <<<"$(jq -r '"\(.received) \(.early) \(.reorders) \(.mean_gap_ns)"' <<<"$r")"
assert_eq "received" "$received" $N
assert_eq "early" "$early" 0
echo "# socket-order reorders at the receiver (after the qdisc): $reorders"
assert_within "mean gap (ns)" "$gap" $((GAP_US * 1000)) 1
# (one dump: unclassified, and horizon_drops before the next runs)
read -r unclassified h0 <<<"$(qjq "$DEV" '.[0] | "\(.unclassified) \(.horizon_drops)"')"
assert_ge "unclassified" "$unclassified" $N

# The same stamps on CLOCK_TAI and CLOCK_REALTIME (SO_TXTIME set to that
# clock): honoured on the monotonic clock.  Read as monotonic, they lay
# decades ahead and every datagram was a horizon drop.  (1000 each: over
# 300, one late last datagram moved the mean gap by over 1%.)  h0: the
# horizon drops before this run, read after the last (nothing is sent in
# between).
N=1000
for clk in tai real; do
	port=$((6002 + ${#clk}))
	txtime_recv $port $N 30 --clock $clk
	echo "# sender ($clk): $(txtime_send $port --gap-us $GAP_US --count $N --size $SIZE --lead-ms 200 --clock $clk)"
	r=$(txtime_wait $port)
	echo "# receiver ($clk): $r"
	h1=$(qjq "$DEV" '.[0].horizon_drops')
	read -r received early gap slack <<<"$(jq -r '"\(.received) \(.early) \(.mean_gap_ns) \(.min_slack_ns)"' <<<"$r")"
	assert_eq "$clk: received" "$received" $N
	assert_eq "$clk: horizon drops" "$((h1 - h0))" 0
	assert_eq "$clk: early" "$early" 0
	assert_within "$clk: mean gap (ns)" "$gap" $((GAP_US * 1000)) 1
	# (the first datagram's stamp is 200 ms ahead: it leaves then, not
	# at once and not much later)
	assert_ge "$clk: 50 ms - the first datagram's wait past its stamp (ns)" \
		$((50000000 - slack)) 0
	h0=$h1
done

# Class slower than the stamps: wire frame = payload + 8 UDP + 20 IP + 14 Eth.
# A stamped datagram is charged to its class when its stamp comes due
# (next = max(next, now) + len/rate from then), so the lead does not
# matter; a short one keeps the run short.  Stamps 1.2ms apart, class
# spacing 2.3ms: the class wins.  (The class is added while the
# receiver starts.)
ns_s tc class add dev "$DEV" parent 1: classid 1:10 carousel rate 5mbit &
cadd=$!
N=2000
txtime_recv 6001 $N 30
wait $cadd || fail "class add"
echo "# sender: $(txtime_send 6001 --gap-us 1200 --count $N --size $SIZE --lead-ms 0.1 --priority $((0x10010)))"
r=$(txtime_wait 6001)
echo "# receiver: $r"
read -r received early gap <<<"$(jq -r '"\(.received) \(.early) \(.mean_gap_ns)"' <<<"$r")"
assert_eq "received via class" "$received" $N
assert_eq "early via class" "$early" 0
assert_within "class-paced gap (ns)" "$gap" \
	"$(( (SIZE + 42) * 8 * 1000000000 / 5000000 ))" 1
assert_eq "class packets" "$(tc_json -n "$NS_S" -s class show dev "$DEV" | jq '.[0].stats.packets')" $N

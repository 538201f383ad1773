#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 240
# tier: rest
#
# `tc class change' of a rate while TCP runs through the class: the new
# rate holds at once (wire rate from the class's byte counter before and
# after, read on the device), with no drop and no retransmission (no loss,
# no reorder).
# Then `tc qdisc change' of granularity and horizon, which rebuilds the
# wheel, twice while an SO_TXTIME flow (2 ms apart, 200 ms ahead) waits in
# it: every datagram leaves, in order (as released, on the device), none
# before its time, and the spacing holds.
# Then a class's burst raised while a UDP flow is queued in it (below).
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair

ns_s tc qdisc add dev "$DEV" root handle 1: carousel default 10 || fail "qdisc add"
ns_s tc class add dev "$DEV" parent 1: classid 1:10 carousel rate 5mbit || fail "class add"

# wire_bps SECONDS: the rate DEV transmitted at over SECONDS, from its
# tx_bytes read twice, each with the clock, in one process.  (Taking the
# class's byte counter through tc instead left the instant of each read
# somewhere in a tc call that takes a good part of a second in the VM:
# up to a few % of error over 8 s, enough to fail a 2% bound on its own.)
# Everything DEV sends goes through class 1:10, the default, and the
# device counts a segment's length as the qdisc does.
wire_bps() {
	ns_s "$PYTHON" -c '
import sys, time
path = "/sys/class/net/%s/statistics/tx_bytes" % sys.argv[1]
def read():
    with open(path) as f:
        return int(f.read()), time.monotonic()
b0, t0 = read()
time.sleep(float(sys.argv[2]))
b1, t1 = read()
print(int((b1 - b0) * 8 / (t1 - t0)))' "$DEV" "$1"
}

IPERF_OMIT=0
iperf_start 5300 30
sleep 2
check_within "wire rate at 5mbit" "$(wire_bps 8)" 5000000 1
ns_s tc class change dev "$DEV" classid 1:10 carousel rate 15mbit || fail "class change"
# The qdisc spaces the very next packet at 15 Mbit; TCP, whose own EDT
# pacing the qdisc honours, needs a moment to raise its pacing rate.
sleep 2
check_within "wire rate at 15mbit" "$(wire_bps 8)" 15000000 1
iperf_wait 5300
assert_eq "drops" "$(qjq "$DEV" '.[0].drops')" 0
assert_eq "retransmits" "$(jq '.end.sum_sent.retransmits' "$(iperf_json 5300)")" 0

# sniff_released PORT COUNT TIMEOUT: what DEV releases to PORT, in order,
# into $TMPD/sniff-PORT.json; sets sniff to its pid once it captures.
sniff_released() {
	bg ns_s "$PYTHON" "$TOOLS/sniff_seq.py" --dev "$DEV" --port "$1" --count "$2" \
		--timeout "$3" --ready "$TMPD/sniffing-$1" >"$TMPD/sniff-$1.json"
	sniff=$BG_PID
	busywait 30000 test -e "$TMPD/sniffing-$1" || fail "sniffer did not start"
}

# check_released WHAT PORT COUNT DROPS0 RECEIVER_JSON: no drop since DROPS0,
# and COUNT datagrams seen leaving, in order, and received.
check_released() {
	echo "# released: $(cat "$TMPD/sniff-$2.json")"
	assert_eq "drops ($1)" "$(qjq "$DEV" '.[0].drops')" "$4"
	assert_eq "datagrams seen leaving ($1)" "$(jq .captured "$TMPD/sniff-$2.json")" "$3"
	assert_eq "reorders as released ($1)" "$(jq .reorders "$TMPD/sniff-$2.json")" 0
	assert_eq "received ($1)" "$(jq .received <<<"$5")" "$3"
}

N=2500 GAP_US=2000
_backlog_at_least() { [ "$(qjq "$DEV" '.[0].qlen')" -ge "$1" ]; }
sniff_released 6000 $N 15
txtime_recv 6000 $N 40
d0=$(qjq "$DEV" '.[0].drops')
bg txtime_send 6000 --gap-us $GAP_US --count $N --size 1000 --lead-ms 200
sender=$BG_PID
sleep 1.5
ns_s tc qdisc change dev "$DEV" root carousel granularity 4us horizon 2s ||
	fail "change granularity and horizon"
echo "# rebuilt: $(qjq "$DEV" '.[0] | {wheel_packets, wheel_levels, options: {granularity: .options.granularity, horizon: .options.horizon}}' | tr -d '\n ')"
sleep 1.5
ns_s tc qdisc change dev "$DEV" root carousel granularity 1us horizon 10s ||
	fail "change back"
echo "# rebuilt: $(qjq "$DEV" '.[0] | {wheel_packets, wheel_levels}' | tr -d '\n ')"
_wait_pid "$sender"
r=$(txtime_wait 6000)
_wait_pid "$sniff"
echo "# receiver: $r"
check_released "across the rebuilds" 6000 $N "$d0" "$r"
assert_eq "early" "$(jq .early <<<"$r")" 0
assert_within "mean gap (ns)" "$(jq .mean_gap_ns <<<"$r")" $((GAP_US * 1000)) 1

# A burst raised mid-backlog reorders nothing.  One UDP socket keeps about
# 70 datagrams (about 600 ms at 1 Mbit) queued in class 1:10 at burst 0;
# then its burst goes to 100 kB, a credit of 0.8 s: new packets may leave
# up to 0.8 s before the class clock, but never before the packets of
# their flow already queued.  (Before each flow's last departure was kept
# as a floor, the new packets overtook the queued ones.)
ns_s tc class change dev "$DEV" classid 1:10 carousel rate 1mbit burst 0 ||
	fail "class change to 1mbit burst 0"
N=300
sniff_released 6100 $N 30
txtime_recv 6100 $N 40
d0=$(qjq "$DEV" '.[0].drops')
bg txtime_send 6100 --gap-us 0 --count $N --size 1000 --lead-ms 0 --sndbuf 90000
sender=$BG_PID
busywait 30000 _backlog_at_least 20 || fail "class 1:10 never built a backlog"
q=$(qjq "$DEV" '.[0].qlen')
ns_s tc class change dev "$DEV" classid 1:10 carousel burst 100kb || fail "burst change"
echo "# burst raised to 100kb with $q packets queued"
assert_ge "burst of 1:10 after the change (bytes)" \
	"$(class_json "$DEV" | jq '.[] | select(.handle == "1:10") | .burst')" 100000
_wait_pid "$sender"
r=$(txtime_wait 6100)
_wait_pid "$sniff"
check_released "burst change" 6100 $N "$d0" "$r"

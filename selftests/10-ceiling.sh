#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 200
#
# Ceiling (SENIC's service model).  Qdisc rate 20 Mbit; classes of 10 and
# 30 Mbit, both backlogged by TCP: together they ask for 40, so each gets
# a share proportional to its rate, 5 and 15 Mbit.
#
# The total is held to the ceiling at dequeue, so it cannot run over even
# while the shares set at enqueue lag behind a class that just became
# active (once, 1:30 got 2.5% over its share and the total 1.9% over):
# the root's wire rate over 4 s of the run, read in one process, must not
# exceed the ceiling by more than 0.5% (a late watchdog's catch-up at a
# window's edge is the only excess the clock allows).  Unclassified
# packets are held to it too: a UDP flood at twice the ceiling through a
# carousel with no class.  And a change of the ceiling takes effect at
# once: a packet held by an 8 bit/s ceiling leaves when it is raised.
#
# Then an extreme: an 8 bit/s ceiling over a backlogged 400 Gbit class,
# and a packet of an 8 bit/s class.  Its stretched transmission time does
# not fit in 64 bits; it must saturate (once, it was a divide error).
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
T=8

ns_s tc qdisc add dev "$DEV" root handle 1: carousel rate 20mbit || fail "qdisc add"
for c in 10:10 30:30; do
	minor=${c%%:*} mbit=${c##*:}
	ns_s tc class add dev "$DEV" parent 1: classid 1:$minor carousel rate ${mbit}mbit || fail "class"
	ns_s tc filter add dev "$DEV" parent 1: protocol ip prio 1 u32 \
		match ip dport $((5400 + minor)) 0xffff flowid 1:$minor || fail "filter"
done
IPERF_OMIT=2
iperf_start 5410 "$T"
iperf_start 5430 "$T"
sleep 3
rates=$(ns_s "$PYTHON" "$TOOLS/qstat.py" --dev "$DEV" --rates 4) || fail "qstat.py --rates"
echo "# wire rates over $(jq .seconds <<<"$rates") s: $(jq -c .bps <<<"$rates")"
echo "# effective rates: $(tc_json -n "$NS_S" -s class show dev "$DEV" | jq -c '[.[] | {handle, effective_rate: .stats.effective_rate}]')"
iperf_wait
b10=$(iperf_bps 5410) b30=$(iperf_bps 5430)
check_within "goodput 1:10 (share 5 of 20)" "$b10" "$(tcp_goodput_expected 5000000 1500)" 2
check_within "goodput 1:30 (share 15 of 20)" "$b30" "$(tcp_goodput_expected 15000000 1500)" 2
check_within "total under the ceiling" "$((b10 + b30))" "$(tcp_goodput_expected 20000000 1500)" 2
# at most +0.5%, and no floor here (the goodput checks above are the floor)
check_within "wire rate, both classes" "$(jq '.bps["1:"]' <<<"$rates")" 20000000 2
awk -v r="$(jq '.bps["1:"]' <<<"$rates")" 'BEGIN { exit !(r <= 20000000 * 1.005) }' ||
	check_fail "wire rate over the 20 Mbit ceiling by more than 0.5%"

# Unclassified traffic: no class at all, a 20 Mbit ceiling, UDP offered at 40.
ns_s tc qdisc del dev "$DEV" root || fail "qdisc del"
ns_s tc qdisc add dev "$DEV" root handle 1: carousel rate 20mbit || fail "qdisc add, no class"
IPERF_OMIT=1
iperf_start 5440 6 -u -b 40M -l 1400
sleep 2
rates=$(ns_s "$PYTHON" "$TOOLS/qstat.py" --dev "$DEV" --rates 3) || fail "qstat.py --rates"
iperf_wait 5440
u=$(jq '.bps["1:"]' <<<"$rates")
echo "# unclassified UDP at 40M: wire $u bit/s over $(jq .seconds <<<"$rates") s;" \
	"sender $(jq '.end.sum.bits_per_second | floor' "$(iperf_json 5440)") bit/s"
assert_ge "unclassified packets" "$(qjq "$DEV" '.[0].unclassified')" 1000
check_within "unclassified wire rate under the ceiling" "$u" 20000000 2
awk -v r="$u" 'BEGIN { exit !(r <= 20000000 * 1.005) }' ||
	check_fail "unclassified wire rate over the 20 Mbit ceiling by more than 0.5%"

quiet_link
ns_s tc qdisc del dev "$DEV" root || fail "qdisc del"
ns_s tc qdisc add dev "$DEV" root handle 1: carousel rate 8bit horizon 60s ||
	fail "qdisc add 8bit"
ns_s tc class add dev "$DEV" parent 1: classid 1:40 carousel rate 400gbit || fail "class 400gbit"
ns_s tc class add dev "$DEV" parent 1: classid 1:8 carousel rate 8bit || fail "class 8bit"
# Hold one 400 Gbit packet in the wheel: the class is active.  It waits
# for its stamp 30 s ahead, far longer than the next two python3 starts
# take even in a slow guest: whichever packet leaves first holds an 8 bit/s
# ceiling for 24 minutes, so the 8 bit/s one must be first.
txtime_send 6500 --gap-us 1000 --count 1 --size 1400 --lead-ms 30000 --priority $((0x10040)) >/dev/null
txtime_recv 6501 1 30
txtime_send 6501 --gap-us 1000 --count 1 --size 1400 --lead-ms 0 --priority $((0x10008)) >/dev/null
r=$(txtime_wait 6501)
assert_eq "8 bit/s class's first packet, under an 8 bit/s ceiling" "$(jq .received <<<"$r")" 1
assert_eq "qdisc still answers" "$(qjq "$DEV" '.[0].kind')" carousel

# A ceiling changed under a held packet.  Two unclassified datagrams under
# 8 bit/s: the first leaves, the second waits 24 minutes for the ceiling's
# clock, until the ceiling is raised: then it leaves at once.
ns_s tc qdisc del dev "$DEV" root || fail "qdisc del"
ns_s tc qdisc add dev "$DEV" root handle 1: carousel rate 8bit || fail "qdisc add 8bit"
txtime_recv 6502 2 30
txtime_send 6502 --gap-us 1000 --count 2 --size 1400 --lead-ms 0 >/dev/null
busywait 10000 test "$(qjq "$DEV" '.[0].packets')" = 1 >/dev/null ||
	fail "the first datagram did not leave under 8 bit/s"
assert_eq "held by the 8 bit/s ceiling" "$(qjq "$DEV" '.[0].wheel_packets')" 1
ns_s tc qdisc change dev "$DEV" root carousel rate 100mbit || fail "qdisc change rate"
r=$(txtime_wait 6502)
assert_eq "datagrams received after the ceiling was raised" "$(jq .received <<<"$r")" 2

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 150
# tier: compat
# compat: sch_mq and sch_prio passing NET_XMIT_CN on, TCP's reaction
#
# Where NET_XMIT_CN may go.  The flow budget answers an over-budget packet
# with NET_XMIT_CN, which reaches the socket only when carousel is the
# qdisc of the transmit queue: the root, or a child of mq.  Under any
# other classful parent the parent would count the CN as a drop, so the
# qdisc returns success there.
#
# 1. mq on a 2-queue veth, a carousel with flow_budget 2 and one 10 Mbit
#    class under each queue, 16 TCP flows: CN is returned (cn_returns > 0,
#    summed over the children), nothing is dropped (children and mq), and
#    each child that carries flows keeps its class busy: its sent bytes
#    over 4 s of the run give its rate within 5%.  The classes are
#    10 Mbit: at 20 Mbit a child, with a busy loop on the host's other
#    core and the window fixed (below), one run of two gave -5.55% with
#    iperf's own goodput 6% short too (the 16 flows could not fill 40
#    Mbit on that machine); at 10 Mbit, 2 of 2 gave +0.02..+0.11%.
# 2. prio (all traffic in band 1:1) with the same carousel below it, 4 TCP
#    flows in a 10 Mbit class: the flows are over budget (the backlog
#    sampled during the run exceeds flow_budget x flows), yet cn_returns
#    stays 0 and prio counts no drop.
source "$(dirname "$0")/lib.sh"
require_carousel
require_cmd iperf3
setup_pair --txqueues 2
quiet_link
RATE=10000000 T=12

# child_stat JSON HANDLE KEY: KEY of the qdisc whose handle is HANDLE, in
# JSON (qdisc_json's; one dump serves every read of a settled state: each
# tc run costs about 0.4 s in a TCG guest).
child_stat() {
	jq -r --arg h "$2" --arg k "$3" '.[] | select(.handle == $h) | .[$k]' <<<"$1"
}

tc_batch "mq, and a carousel with a class under each of its queues" <<EOF
qdisc add dev $DEV root handle 1: mq
qdisc add dev $DEV parent 1:1 handle 10: carousel default 1 flow_budget 2
class add dev $DEV parent 10: classid 10:1 carousel rate $RATE
qdisc add dev $DEV parent 1:2 handle 20: carousel default 1 flow_budget 2
class add dev $DEV parent 20: classid 20:1 carousel rate $RATE
EOF
kinds=$(qdisc_json "$DEV" | jq -r '[.[] | .kind] | sort | join(",")')
assert_eq "qdiscs on $DEV" "$kinds" "carousel,carousel,mq"

iperf_start 5301 $T -P 16
# Each child's rate from its byte counter, read twice 4 s apart and timed
# in one process (tools/qstat.py --rates), the window opening once the
# warm-up is over.  Two tc calls left the read somewhere inside each
# call, a few tenths of a second under emulation: that alone once gave a
# child -9.2%.  qstat.py starts with the traffic, so that python3's start
# (seconds on a busy host) falls before the window: started after a
# sleep, it once pushed the window past the end of the traffic.  The
# client must still be running when the window has closed.
rates_start $((IPERF_OMIT + 2)) 4
rates_wait
rates=$RATES
running "${_IPERF_CLIENT[5301]}" ||
	fail "the rate window ran past the traffic (opened $(jq .late_s <<<"$rates") s late)"
echo "# child rates over $(jq .seconds <<<"$rates") s: $(jq -c .bps <<<"$rates")"
jq -e '.bps | has("10:") and has("20:")' <<<"$rates" >/dev/null ||
	fail "qstat.py --rates did not report both children"
iperf_wait 5301
echo "# mq, 16 flows: goodput $(iperf_bps 5301) bit/s"
J=$(qdisc_json "$DEV") || fail "qdisc show"
jq -c '.[] | {kind, handle, parent, packets, drops, backlog,
	flows, cn_returns}' <<<"$J" | sed 's/^/# /'

cn=0
for q in 1 2; do
	c=$(child_stat "$J" ${q}0: cn_returns)
	assert_eq "drops in carousel ${q}0:" "$(child_stat "$J" ${q}0: drops)" 0
	cn=$((cn + c))
done
assert_eq "drops in mq" "$(child_stat "$J" 1: drops)" 0
assert_ge "cn_returns under mq (both children)" $cn 1
active=0
for q in 1 2; do
	bps=$(jq -r ".bps[\"${q}0:\"]" <<<"$rates")
	[ "$bps" -gt 0 ] || continue
	active=$((active + 1))
	assert_within "carousel child ${q}0: rate (bit/s, L2)" "$bps" $RATE 5
done
assert_ge "children that carried flows" $active 1

# 2: under prio, CN must not escape.  (mq goes, prio comes.)
RATE2=10000000
tc_batch "mq del, prio, carousel under prio, class 10:1" <<EOF
qdisc del dev $DEV root
qdisc add dev $DEV root handle 1: prio bands 2 priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
qdisc add dev $DEV parent 1:1 handle 10: carousel default 1 flow_budget 2
class add dev $DEV parent 10: classid 10:1 carousel rate $RATE2
EOF
iperf_start 5302 6 -P 4
sleep $((IPERF_OMIT + 1))
# The backlog sampled during the run: 20 samples at most, until the client
# is done (a sample takes about 0.5 s under TCG: 20 ran twice as long as
# the traffic, and what came after it was an idle queue).
peak=0
for _ in $(seq 20); do
	n=$(child_stat "$(qdisc_json "$DEV")" 10: qlen)
	[ "${n:-0}" -gt "$peak" ] && peak=$n
	running "${_IPERF_CLIENT[5302]}" || break
	sleep 0.2
done
iperf_wait 5302
echo "# prio, 4 flows: goodput $(iperf_bps 5302) bit/s, peak backlog $peak packets"
J=$(qdisc_json "$DEV") || fail "qdisc show"
jq -c '.[] | {kind, handle, parent, packets, drops, backlog,
	cn_returns}' <<<"$J" | sed 's/^/# /'
assert_ge "peak backlog under prio (over a budget of 2 x 4 flows)" "$peak" 9
assert_eq "cn_returns under prio" "$(child_stat "$J" 10: cn_returns)" 0
assert_eq "drops in prio" "$(child_stat "$J" 1: drops)" 0
assert_eq "drops in carousel 10:" "$(child_stat "$J" 10: drops)" 0
assert_within "goodput under prio (bit/s)" "$(iperf_bps 5302)" \
	"$(tcp_goodput_expected $RATE2 1500)" 5

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

# child_stat HANDLE KEY: KEY of the carousel whose handle is HANDLE.
child_stat() {
	qdisc_json "$DEV" | jq -r --arg h "$1" --arg k "$2" \
		'.[] | select(.handle == $h) | .[$k]'
}

ns_s tc qdisc add dev "$DEV" root handle 1: mq || fail "mq"
for q in 1 2; do
	ns_s tc qdisc add dev "$DEV" parent 1:$q handle ${q}0: carousel default 1 \
		flow_budget 2 || fail "carousel under 1:$q"
	ns_s tc class add dev "$DEV" parent ${q}0: classid ${q}0:1 carousel \
		rate $RATE || fail "class ${q}0:1"
done
kinds=$(qdisc_json "$DEV" | jq -r '[.[] | .kind] | sort | join(",")')
assert_eq "qdiscs on $DEV" "$kinds" "carousel,carousel,mq"

iperf_start 5301 $T -P 16
sleep $((IPERF_OMIT + 2))
# Each child's rate from its byte counter, read twice 4 s apart and timed
# in one process (tools/qstat.py --rates).  The window opens when
# python3 has started, which takes seconds on a busy host: the run lasts
# long enough (T) for the window to end inside the traffic (with T = 8,
# a late start put its end past it: -6.6% where iperf saw full rate),
# and the client must still be running when it has.  Two tc calls left
# the read somewhere inside each call, a few tenths of a second under
# emulation: that alone once gave a child -9.2%.
rates=$(ns_s "$PYTHON" "$TOOLS/qstat.py" --dev "$DEV" --rates 4) || fail "qstat.py --rates"
running "${_IPERF_CLIENT[5301]}" || fail "the rate window ran past the traffic"
echo "# child rates over $(jq .seconds <<<"$rates") s: $(jq -c .bps <<<"$rates")"
jq -e '.bps | has("10:") and has("20:")' <<<"$rates" >/dev/null ||
	fail "qstat.py --rates did not report both children"
iperf_wait 5301
echo "# mq, 16 flows: goodput $(iperf_bps 5301) bit/s"
qdisc_json "$DEV" | jq -c '.[] | {kind, handle, parent, packets, drops, backlog,
	flows, cn_returns}' | sed 's/^/# /'

cn=0
for q in 1 2; do
	c=$(child_stat ${q}0: cn_returns)
	assert_eq "drops in carousel ${q}0:" "$(child_stat ${q}0: drops)" 0
	cn=$((cn + c))
done
assert_eq "drops in mq" "$(child_stat 1: drops)" 0
assert_ge "cn_returns under mq (both children)" $cn 1
active=0
for q in 1 2; do
	bps=$(jq -r ".bps[\"${q}0:\"]" <<<"$rates")
	[ "$bps" -gt 0 ] || continue
	active=$((active + 1))
	assert_within "carousel child ${q}0: rate (bit/s, L2)" "$bps" $RATE 5
done
assert_ge "children that carried flows" $active 1

ns_s tc qdisc del dev "$DEV" root || fail "mq del"

# 2: under prio, CN must not escape.
RATE2=10000000
ns_s tc qdisc add dev "$DEV" root handle 1: prio bands 2 \
	priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 || fail "prio"
ns_s tc qdisc add dev "$DEV" parent 1:1 handle 10: carousel default 1 flow_budget 2 ||
	fail "carousel under prio"
ns_s tc class add dev "$DEV" parent 10: classid 10:1 carousel rate $RATE2 ||
	fail "class 10:1"
iperf_start 5302 6 -P 4
sleep $((IPERF_OMIT + 1))
peak=0
for _ in $(seq 20); do
	n=$(child_stat 10: qlen)
	[ "${n:-0}" -gt "$peak" ] && peak=$n
	sleep 0.2
done
iperf_wait 5302
echo "# prio, 4 flows: goodput $(iperf_bps 5302) bit/s, peak backlog $peak packets"
qdisc_json "$DEV" | jq -c '.[] | {kind, handle, parent, packets, drops, backlog,
	cn_returns}' | sed 's/^/# /'
assert_ge "peak backlog under prio (over a budget of 2 x 4 flows)" "$peak" 9
assert_eq "cn_returns under prio" "$(child_stat 10: cn_returns)" 0
assert_eq "drops in prio" "$(child_stat 1: drops)" 0
assert_eq "drops in carousel 10:" "$(child_stat 10: drops)" 0
assert_within "goodput under prio (bit/s)" "$(iperf_bps 5302)" \
	"$(tcp_goodput_expected $RATE2 1500)" 5

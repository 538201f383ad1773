#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 150
# tier: compat
# compat: the qdisc watchdog's hrtimer
#
# A saturated class keeps its rate when its watchdog fires late.  A due
# packet of a saturated class waits its turn uncharged; when the class's
# charged packet leaves, the next turn is charged from the class clock.  A
# late watchdog leaves that clock behind now, and a packet that arrived in
# the meantime must not move it up to its arrival (the class was busy all
# along): the clock catches up, as after any late watchdog, within the
# catch-up cap.  Packets that find their flow idle take the first turns,
# so a sparse flow's recent arrival is what would have moved the clock.
# The lateness is the host's: under TCG ~150 us on average at the
# defaults, which cost 0.5% of the rate here, and ~1% with 200 TCP flows
# on 6.1 in selftest 17 (which holds the defaults to 1%).  This test adds
# to it: timer_slack 2ms lets the hrtimer fire up to 2 ms late when no
# arrival runs the qdisc first (270-285 us on average in its runs).  One
# class, for T (28) s (the receivers' 24 s window keeps the few ms of
# catch-up or stall at its two edges well under the bound):
#   - a UDP flood from 4 ports at 2x its rate keeps it saturated;
#   - SPARSE (600) ports send at half its rate between them, in small
#     datagrams (SPARSE_SIZE, 200 B), each port one every ~0.25 s, so each
#     finds its flow idle.
# Asserted:
#   - the class's rate where it is shaped, its byte counter (wire bytes)
#     over QWIN (10) s while the flood backlogs it, from two rtnetlink class dumps each
#     timed by the clock read next to it (tools/qstat.py), within 0.5% of
#     its rate (without the rule: -1.3% to -1.9% on both kernels at the
#     receivers; with it, within 0.05%);
#   - the same at the receivers (tools/udpflood.py, wire bytes, one port
#     each, both together) within 1%: what is lost after the qdisc is
#     not its doing (CI read -0.54% there once, with nothing dropped by
#     the qdisc or lost to the catch-up cap), and without the rule the
#     loss is larger;
#   - no limit or horizon drop (the flood's excess stays in its sockets,
#     or goes as flow_time_drops).
# A host whose watchdog is late by less than a sparse datagram's time (194
# us) on average cannot show the loss: the test is skipped there.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
quiet_link
RATE=10000000 T=28 SIZE=1200 SPARSE=600 SPARSE_SIZE=200 QWIN=10

ns_s tc qdisc add dev "$DEV" root handle 1: carousel default 1 timer_slack 2ms ||
	fail "qdisc add"
ns_s tc class add dev "$DEV" parent 1: classid 1:1 carousel rate $RATE || fail "class add"

receivers=()
for p in 7400 7401; do
	bg ns_r "$PYTHON" "$TOOLS/udpflood.py" recv --port $p --seconds $((T - 1)) \
		--skip 3 --ready "$TMPD/ready.$p" >"$TMPD/recv.$p" 2>"$ART/recv.$p.err"
	receivers+=("$BG_PID")
	busywait 30000 test -e "$TMPD/ready.$p" || fail "receiver $p did not start"
done
# The qdisc-side window (qstat.py, started and waited for first: python3
# takes seconds to start here): QWIN s from 2 s after the class first
# holds a packet, which the flood's and the sparse senders' python3
# starts make a few seconds after they are launched; it must close with
# the flood still backlogging the class, T leaves it some 15 s to spare.
rates_start_busy $QWIN 1:1 --settle 2
bg ns_s "$PYTHON" "$TOOLS/udpflood.py" send --dst "$IP_R" --port 7400 \
	--flows 4 --rate $((RATE * 2)) --seconds $T --size $SIZE \
	>"$TMPD/send.7400" 2>"$ART/send.7400.err"
flood=$BG_PID
bg ns_s "$PYTHON" "$TOOLS/udpflood.py" send --dst "$IP_R" --port 7401 \
	--flows $SPARSE --rate $((RATE / 2)) --seconds $T --size $SPARSE_SIZE \
	>"$TMPD/send.7401" 2>"$ART/send.7401.err"
sparse=$BG_PID
rates_wait
w=$RATES
echo "# class counters over $(jq .seconds <<<"$w") s (uncertain by $(jq .uncertain_seconds <<<"$w") s), opened $(jq .busy_s <<<"$w") s after qstat.py began waiting: $(jq -c .bps <<<"$w")"
running "$flood" && jq -e '.idle_at_end == []' <<<"$w" >/dev/null ||
	fail "the qdisc-side window ran past the flood: $(jq -c . <<<"$w")"
_wait_pid "$flood" || fail "flood sender failed: $(cat "$ART/send.7400.err")"
_wait_pid "$sparse" || fail "sparse sender failed: $(cat "$ART/send.7401.err")"
_wait_pid "${receivers[0]}" || fail "receiver 7400 failed: $(cat "$ART/recv.7400.err")"
_wait_pid "${receivers[1]}" || fail "receiver 7401 failed: $(cat "$ART/recv.7401.err")"
for p in 7400 7401; do
	echo "# port $p: sent $(cat "$TMPD/send.$p"); received $(cat "$TMPD/recv.$p")"
	cp "$TMPD/send.$p" "$TMPD/recv.$p" "$ART/"
done
st=$(qdisc_json "$DEV" | jq -c '.[0] | {packets, drops, limit_drops, horizon_drops,
	flow_time_drops, timer_fires, timer_latency_ns, timer_latency_max_ns, catchup_holds,
	catchup_lost_ns}')
echo "# tc -s: $st"

tx=$(awk -v z=$SPARSE_SIZE -v r=$RATE 'BEGIN { printf "%d", (z + 42) * 8e9 / r }')
awk -v n="$(jq .timer_fires <<<"$st")" -v l="$(jq .timer_latency_ns <<<"$st")" \
    -v m="$(jq .timer_latency_max_ns <<<"$st")" -v t="$tx" 'BEGIN {
	a = n ? l / n : 0
	printf "watchdog late %.0f us on average over %d fires, at most %.0f us (the test needs >= %.0f us)\n",
		a / 1000, n, m / 1000, t / 1000
	exit !(a >= t) }' >&2 ||
	skip "the watchdog was late by less than a sparse datagram's time: no condition to test"
# The two receivers' windows are the same T - 4 s give or take their start.
check_within "class rate at the qdisc (bit/s)" "$(jq '.bps["1:1"]' <<<"$w")" $RATE 0.5
bps=$(jq -s '.[0].bps + .[1].bps' "$TMPD/recv.7400" "$TMPD/recv.7401")
check_within "class wire rate at the receivers (bit/s)" "$bps" $RATE 1
assert_ge "sparse ports heard" "$(jq .flows "$TMPD/recv.7401")" $((SPARSE * 9 / 10))
assert_eq "limit_drops" "$(jq .limit_drops <<<"$st")" 0
assert_eq "horizon_drops" "$(jq .horizon_drops <<<"$st")" 0
exit 0

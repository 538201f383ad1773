#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# tier: compat
# compat: the BPF verifier and helpers, socket cgroups, TCP
#
# carousel-cgroup: classes by cgroup v2, through the BPF classifier.
#  1. Three cgroups mapped to classes of 5, 10 and 20 Mbit, an iperf3
#     client in each, all at once: each class's rate within 1% over a
#     window while all three send (class byte counters: their goodput
#     plus headers and any retransmit), iperf3's goodput within 3%.
#  2. A nested cgroup with no mapping of its own is held to its parent's
#     class; an unmapped cgroup lands in the default class.
#  3. A sender moved from one cgroup to another mid-run takes the new
#     class's rate (its new sockets do: a socket keeps the cgroup it was
#     created in), each half within 3% (class byte counters).
#  4. After `del' the cgroup falls back to the default class; after
#     `detach' no program, map or filter of ours is left.
source "$(dirname "$0")/lib.sh"
require_carousel
require_cgroup2
setup_pair
quiet_link
T=14

tc_batch "qdisc add, classes 1:5, 1:10, 1:20, 1:99" <<EOF
qdisc add dev $DEV root handle 1: carousel default 99
class add dev $DEV parent 1: classid 1:5 carousel rate 5mbit
class add dev $DEV parent 1: classid 1:10 carousel rate 10mbit
class add dev $DEV parent 1: classid 1:20 carousel rate 20mbit
class add dev $DEV parent 1: classid 1:99 carousel rate 2mbit
EOF
cg_tool attach "$DEV" || fail "carousel-cgroup attach"
defer cg_detach_quiet
for minor in 5 10 20; do
	cg=$(cg_new "tenant-$minor")
	cg_tool set "$DEV" "$cg" 1:$minor || fail "carousel-cgroup set $cg 1:$minor"
done
list=$(cg_tool list "$DEV")	# (once: the checks below read it)
sed 's/^/# list: /' <<<"$list"
[ "$(grep -c " 1:.* [0-9.]*Mbit$" <<<"$list")" = 3 ] || fail "list: want 3 entries with rates"
grep -q "^$CG_BASE/tenant-10 [0-9]* 1:10 10Mbit$" <<<"$list" || fail "list: tenant-10 line"

# ---- 1. three tenants at once
# Each client starts about 2 s after the one before it (an iperf3 start
# under TCG), and runs IPERF_OMIT + T s.  iperf3's own receiver-side
# figure is timed by a process that three servers and three clients
# share two vCPUs with: in one fresh-clone run two of the three read
# 1% low.  So the 1% check is on the class counters, each read next to
# its clock (qstat.py), over a 5 s window that opens 1 s after all three
# classes first hold a backlog together (qstat.py --busy, started and
# waited for first: its python3 took 15 s to start in one CI run with
# the clients starting beside it) and must close with all three
# still backlogged; below, less the time the catch-up cap took over the
# window, summed over the classes (lib.sh, check_rate).  iperf3's goodput
# gets 3%.
IPERF_OMIT=2
rates_start_busy 5 1:5,1:10,1:20
for minor in 5 10 20; do
	iperf_start_cg "$CG_BASE/tenant-$minor" $((5200 + minor)) "$T"
done
rates_wait
# (a client past its -t but still in iperf3's end-of-test exchange is
# alive and sends nothing: its class is then empty at the window's end)
jq -e '.idle_at_end == []' <<<"$RATES" >/dev/null ||
	fail "the window ran past a client: $(jq -c . <<<"$RATES")"
echo "# window of $(jq .seconds <<<"$RATES") s, opened $(jq .busy_s <<<"$RATES") s after qstat.py began waiting for the three backlogs: $(jq -c .bps <<<"$RATES")"
iperf_wait
lost=$(jq .catchup_lost_ns <<<"$RATES")
for minor in 5 10 20; do
	port=$((5200 + minor))
	echo "# retransmits of tenant-$minor: $(jq .end.sum_sent.retransmits "$(iperf_json $port)")"
	check_rate "rate of class 1:$minor, all three at once" \
		"$(jq --arg c 1:$minor '.bps[$c]' <<<"$RATES")" $((minor * 1000000)) 1 \
		"$lost" "$(jq .seconds <<<"$RATES")"
	check_within "goodput of cgroup tenant-$minor (1:$minor)" "$(iperf_bps $port)" \
		"$(tcp_goodput_expected $((minor * 1000000)) 1500)" 3
done
assert_eq "drops" "$(qjq "$DEV" '.[0].drops')" 0

# ---- 2. inheritance and the default class
udp_from() { cg_udp_from "$@"; }
delta() { cg_delta "$@"; }
N=100
sub=$(cg_new tenant-5/sub/deeper)
d=$(udp_from "$sub" "$N")
while read -r l; do echo "# nested, unmapped: $l"; done <<<"$d"
assert_eq "nested cgroup's packets in its ancestor's class 1:5" "$(delta "$d" 1:5)" "$N"
assert_eq "nested cgroup's packets in 1:99" "$(delta "$d" 1:99)" 0
cg_tool set "$DEV" "$CG_BASE/tenant-5/sub" 1:10 || fail "set sub"
d=$(udp_from "$sub" "$N")
assert_eq "nearest mapped ancestor wins (1:10)" "$(delta "$d" 1:10)" "$N"
cg_tool del "$DEV" "$CG_BASE/tenant-5/sub" || fail "del sub"
other=$(cg_new unmapped)
d=$(udp_from "$other" "$N")
while read -r l; do echo "# unmapped: $l"; done <<<"$d"
assert_ge "unmapped cgroup's packets in the default class 1:99" "$(delta "$d" 1:99)" "$N"
assert_eq "unmapped cgroup's packets in 1:5" "$(delta "$d" 1:5)" 0

# ---- 3. a sender moved mid-run, 1:5 -> 1:20
# It opens a new socket every 0.2 s (SO_SNDBUF small enough to block it
# before flow_limit drops), so after the move its traffic is the new
# cgroup's.  14000-byte datagrams (10 fragments, each owned by the
# socket) keep the syscall rate low enough for python in a TCG guest.  It
# would run 120 s, and is stopped after the second window (each window,
# python's start-up included, took 9-10 s on 6.12 here).
cat >"$TMPD/reconnect.py" <<'PY'
import socket, sys, time
dst, port, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
end = time.monotonic() + secs
buf = b"\0" * 14000
while time.monotonic() < end:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 60000)
    s.connect((dst, port))
    t = time.monotonic() + 0.2
    while time.monotonic() < t:
        s.send(buf)
    s.close()
PY
# rate_over CLASS SECONDS: the class's rate (bit/s) over the next SECONDS,
# from two class dumps over rtnetlink, each timed by the clock read next
# to it (qstat.py).  Two tc calls, timed around, read -7.25% once: each
# call takes about 0.4 s under TCG, and where in it the counter is read
# varies.  Sets R_BPS (CLASS's rate) and W_BPS (every class's, as JSON).
rate_over() {
	local w

	w=$(ns_s "$PYTHON" "$TOOLS/qstat.py" --dev "$DEV" --rates "$2" --classes) ||
		fail "qstat.py --rates --classes"
	jq -e --arg c "$1" '.bps | has($c)' <<<"$w" >/dev/null || fail "no class $1 in $w"
	echo "# window of $(jq .seconds <<<"$w") s: $(jq -c .bps <<<"$w")" >&2
	W_BPS=$(jq -c .bps <<<"$w")
	R_BPS=$(jq --arg c "$1" '.bps[$c]' <<<"$w")
}
cg_run "$CG_BASE/tenant-5" ns_s "$PYTHON" "$TMPD/reconnect.py" "$IP_R" 7001 120
mover=$BG_PID
log "sender started"
sleep 1.5
rate_over 1:5 4
r1=$R_BPS
log "1:5 read: $r1 bit/s"
running "$mover" || fail "the first window ran past the sender"
echo "$mover" >"$CG_BASE/tenant-20/cgroup.procs" || fail "move the sender"
grep -q "^0::.*/tenant-20$" "/proc/$mover/cgroup" || fail "sender not in tenant-20: $(cat "/proc/$mover/cgroup")"
sleep 1.5
rate_over 1:20 4
r2=$R_BPS
log "1:20 read: $r2 bit/s"
running "$mover" || fail "the second window ran past the sender"
check_within "before the move: rate of 1:5" "$r1" 5000000 3
check_within "after the move: rate of 1:20" "$r2" 20000000 3
# The sender left 1:5: at most 1% of its rate there after the move.
old=$(jq '.["1:5"]' <<<"$W_BPS")
echo "# after the move: rate of 1:5: $old bit/s (want <= 50000)"
[ "$old" -le 50000 ] 2>/dev/null || check_fail "after the move: 1:5 still sends $old bit/s"
kill "$mover" 2>/dev/null
_wait_pid "$mover" || true

# ---- 4. del, then detach
cg_tool del "$DEV" "$CG_BASE/tenant-10" || fail "del tenant-10"
cg_tool list "$DEV" | grep -q "/tenant-10 " && fail "tenant-10 still listed after del"
d=$(udp_from "$CG_BASE/tenant-10" "$N")
assert_ge "deleted mapping: packets in the default class" "$(delta "$d" 1:99)" "$N"
assert_eq "deleted mapping: packets in 1:10" "$(delta "$d" 1:10)" 0

cg_tool detach "$DEV" || fail "detach"
assert_eq "tc filters after detach" "$(ns_s tc filter show dev "$DEV" parent 1: | wc -l)" 0
assert_eq "our programs after detach" "$(bpftool prog show | grep -c carousel_cgroup)" 0
# A map's last reference can go a moment after the program's (RCU).
# shellcheck disable=SC2317 # called by busywait
gone() { ! bpftool map show | grep -q cgroup_class; }
busywait 5000 gone >/dev/null || fail "map cgroup_class still there: $(bpftool map show)"
cg_tool list "$DEV" 2>/dev/null && fail "list works after detach"
exit 0

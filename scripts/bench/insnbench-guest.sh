#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# In-guest part of the instruction count (run by insnbench.sh through
# scripts/lib/vm.sh, in a VM of one vCPU under QEMU's -icount and the
# insncount plugin):
#
#   scripts/bench/insnbench-guest.sh OUTDIR KO BPF_OBJ
#
# Two loads, each through a dummy device per qdisc, pktgen sending 100 B
# UDP packets (queue_xmit, source ports 1..N), the clsact program setting
# skb->priority to 1:<port> (and, with "hash", skb->hash too):
#
#   light    for each hash mode and class count N: N classes of
#            10 Gbit/N, pktgen as fast as it can, so every class is idle
#            when its packet comes; one warm-up run per qdisc, then REPS
#            times a run of PKTS and one of 2 x PKTS packets;
#   backlog  hash preset, BACKLOG_N classes, 1500 B packets, one every
#            200 us (so that pktgen sleeps between packets instead of
#            spinning), each class offered 1.2 x its rate; before each run
#            the qdisc is set up afresh and loaded at full speed with 3
#            packets per class (uncounted), so that every class is
#            throttled, its burst spent, when the run starts, and every
#            run starts from the same backlog.  fq gets initial_quantum
#            1514, so that it paces a flow from its first packet, as the
#            shapers do (its default lets a new flow send 10 packets
#            unpaced); fq and carousel get limit 100000, so that the load
#            is not dropped (htb's classes each have a queue of
#            txqueuelen, 10000).  At the end of each run pktgen spins
#            until its last packet has left the qdisc: how long depends on
#            the backlog, so the host leaves pktgen's own function out of
#            this load's counts (insnreport.py).
#
#   tcp      real sockets: TCP_N TCP flows from this host to a listener
#            in a network namespace through a veth pair (gso_max_segs 1:
#            TCP builds GSO packets whatever the device offloads, of a
#            size that depends on the qdisc's pacing shift, and carousel
#            splits what fq would queue whole; with one segment per
#            packet every qdisc gets the same packets), flow i (from 1)
#            with SO_PRIORITY 1:i (class 1:i) and SO_MAX_PACING_RATE TCP_PACE + (i - 1) x TCP_STEP
#            (rates apart, so that the flows do not keep in step): paced
#            by TCP itself through noqueue, pfifo, fq_codel and htb, and
#            by the qdisc through fq and carousel, which take over pacing
#            (SK_PACING_FQ).  TCP_N classes of TCP_RATE (htb, carousel;
#            fq's maxrate), about the fastest flows' rate.  A
#            window (insnmark -tcp) holds the writes of TCP_BYTES (then
#            2 x TCP_BYTES) per flow and everything until the last byte
#            is acknowledged: the receiver's path and the ACKs too, the
#            same through every qdisc, which noqueue's figure takes out.
#            "Packets" are the data segments the flows sent (TCP_INFO).
#
#   crowd    carousel alone: for each size C (a multiple of 64), C
#            packets from 64 ports (one class of 10 Gbit, limit C + 1000,
#            flow_limit 65535, horizon 40s), those of 63 ports stamped by
#            the clsact program (classifier_crowd) for one instant, so
#            that they all wait in one slot of the wheel's top level and
#            then come due at once: the worst case for one dequeue.  (The
#            other port's packets leave at once, pktgen's last among them:
#            pktgen waits for it; see CROWD_FREE in prio.bpf.c.)
#            function_graph times every carousel_dequeue() call longer
#            than CROWD_THRESH_US of guest time, which under -icount
#            shift=0 is instructions: one ns per instruction while the
#            guest runs (a window spinning in userspace, insnmark -spin,
#            before the crowds, checks that).
#
# Each run is one counting window (insnmark around pktgen's `start`); the
# qdiscs take turns, in an order rotated per repetition.  Writes to OUTDIR:
#
#   plan.txt      one line per window, in order:
#                 LOAD HASH N QDISC PACKETS REP SENT
#                 (REP -1: warm-up or crowd; SENT: what left the device
#                 meanwhile)
#   crowd.txt     one line per crowd size:
#                 crowd PACKETS SENT WINDOW WINDOW_NS DEQUEUES MAX_NS
#                 THRESH_NS OVERRUN (WINDOW: the spinning window, from
#                 0, and WINDOW_NS its guest time; DEQUEUES: the calls
#                 over THRESH_NS; MAX_NS: the longest; OVERRUN: trace
#                 events lost)
#   kallsyms.txt  /proc/kallsyms, for the per-function breakdown
#   done          written last
#
# Set-ups as the wall-clock run (cpubench.sh, pglib.sh): N classes of the
# total rate / N (htb, carousel), fq with that maxrate per flow, pfifo,
# fq_codel, and noqueue, the path without a qdisc, which the host
# subtracts.
#
# Environment (CAROUSEL_* reaches the guest through vm.sh):
# CAROUSEL_INSN_CLASSES ("1 100 1000 10000"), CAROUSEL_INSN_PKTS (20000),
# CAROUSEL_INSN_REPS (3), CAROUSEL_INSN_HASH ("nohash hash": the backlog
# load, after them, keeps the programs of the last),
# CAROUSEL_INSN_BACKLOG_N (10000; 0: no backlog load),
# CAROUSEL_INSN_BACKLOG_PKTS (20000), CAROUSEL_INSN_TCP_N (100; 0: no
# TCP load), CAROUSEL_INSN_TCP_BYTES (65536), CAROUSEL_INSN_TCP_RATE
# (2000000, bit/s per class), CAROUSEL_INSN_CROWD (crowd sizes,
# multiples of 64, "262144 1048576"; "": none; the guest needs about
# 1 KiB per packet).
# Exit 1 if something could not be set up; never for a figure.
set -u

OUTDIR=$1
KO=$2
BPF_OBJ=$3
REPO=$(cd "$(dirname "$0")/../.." && pwd)
MARK=$REPO/build/bench/insnmark

QDISCS=(noqueue pfifo fq_codel fq htb carousel)
PKT_SIZE=100
TOTAL_KBIT=10000000
PG=/proc/net/pktgen
PROG=insnbench
# shellcheck source=scripts/bench/pglib.sh
source "$(dirname "$0")/pglib.sh"

CLASSES=${CAROUSEL_INSN_CLASSES:-1 100 1000 10000}
PKTS=${CAROUSEL_INSN_PKTS:-20000}
REPS=${CAROUSEL_INSN_REPS:-3}
HASHES=${CAROUSEL_INSN_HASH:-nohash hash}
BACKLOG_N=${CAROUSEL_INSN_BACKLOG_N:-10000}
BACKLOG_PKTS=${CAROUSEL_INSN_BACKLOG_PKTS:-20000}
BACKLOG_DELAY=200000		# ns between packets
TCP_N=${CAROUSEL_INSN_TCP_N:-100}
TCP_BYTES=${CAROUSEL_INSN_TCP_BYTES:-65536}
TCP_RATE=${CAROUSEL_INSN_TCP_RATE:-2000000}	# bit/s per class
TCP_PACE=1000000		# bit/s of the first flow's pacing ...
TCP_STEP=10000			# ... and more for each next flow
TCP_PORT=5001
CROWD=${CAROUSEL_INSN_CROWD-262144 1048576}
CROWD_THRESH_US=5
CROWD_PERIOD=$((1 << 34))	# ns: CROWD_SHIFT of prio.bpf.c
TRACING=/sys/kernel/tracing

TMPD=$(mktemp -d /tmp/insnbench.XXXXXX)
trap 'rm -rf "$TMPD"' EXIT
mkfifo "$TMPD/nap" && exec 9<>"$TMPD/nap" || die "fifo"

rm -rf "$OUTDIR"
mkdir -p "$OUTDIR" || die "$OUTDIR"
: >"$OUTDIR/plan.txt"
[ -x "$MARK" ] || die "$MARK missing (insnbench.sh builds it)"
[ -r "$BPF_OBJ" ] || die "$BPF_OBJ missing"
[ "$(nproc)" = 1 ] || die "one vCPU only: the plugin's counters are not atomic"
if [ ! -d /sys/module/sch_carousel ]; then
	insmod "$KO" || die "insmod $KO"
fi
export TC_LIB_DIR=$REPO/tc
for m in sch_htb sch_fq sch_fq_codel sch_ingress cls_bpf dummy pktgen; do
	modprobe -q "$m" || die "modprobe $m"
done
# IPv6 off: a device's router solicitations and MLD reports would land
# in random windows.
sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip link set lo up
for q in "${QDISCS[@]}"; do
	ip link add "b_$q" type dummy || die "dummy b_$q"
	ip link set "b_$q" txqueuelen 10000 up || die "b_$q up"
	tc qdisc add dev "b_$q" clsact || die "clsact on b_$q"
done

# window LOAD HASH N Q PACKETS REP [DELAY]: one counted pktgen run.
window() {
	local dev=b_$4 tx0 tx1 i

	pg_device "$dev" "$5" "$3" "${7:-0}"
	read -r tx0 <"/sys/class/net/$dev/statistics/tx_packets"
	"$MARK" "$PG/pgctrl" start || die "insnmark: pktgen start on $dev"
	pg_wait "$dev" done
	# Light load: what a shaper still holds leaves within ms.
	for ((i = 0; i < 100; i++)); do
		read -r tx1 <"/sys/class/net/$dev/statistics/tx_packets"
		[ "$1" = light ] && [ $((tx1 - tx0)) -lt "$5" ] || break
		nap
	done
	echo "$1 $2 $3 $4 $5 $6 $((tx1 - tx0))" >>"$OUTDIR/plan.txt"
}

# egress HASH: the clsact program of that hash mode on every device.
egress() {
	local sec=classifier q

	[ "$1" = hash ] && sec=classifier_hash
	for q in "${QDISCS[@]}"; do
		tc filter del dev "b_$q" egress 2>/dev/null
		tc filter add dev "b_$q" egress bpf direct-action obj "$BPF_OBJ" sec "$sec" ||
			die "egress program $sec on b_$q"
	done
}

# backlogged Q PACKETS REP: Q set up afresh, loaded (uncounted), counted.
backlogged() {
	local PKT_SIZE=1500 FQ_OPTS="initial_quantum 1514 limit 100000"
	local CAROUSEL_OPTS="limit 100000"
	local offered=$((PKT_SIZE * 8 * 1000000000 / BACKLOG_DELAY))

	setup_qdisc "$1" "$BACKLOG_N" $((offered * 10 / 12)) ||
		die "$1 with $BACKLOG_N classes"
	pg_device "b_$1" $((3 * BACKLOG_N)) "$BACKLOG_N" 0
	pg pgctrl start
	pg_wait "b_$1" done
	window backlog hash "$BACKLOG_N" "$1" "$2" "$3" "$BACKLOG_DELAY"
}

# crowd C: C packets due at one instant through b_carousel; the longest
# dequeues.
crowd() {
	local dev=b_carousel T=$TRACING up phase period tx0 tx1 i l
	local max=0 calls=0 overrun=0 d f

	[ $(($1 % 64)) = 0 ] || die "crowd $1: not a multiple of 64"
	tc qdisc del dev "$dev" root 2>/dev/null
	tc qdisc add dev "$dev" root handle 1: carousel default 1 \
		limit $(($1 + 1000)) flow_limit 65535 horizon 40s &&
		tc class add dev "$dev" parent 1: classid 1:1 carousel rate 10gbit ||
		die "carousel for the crowd"
	tc filter del dev "$dev" egress 2>/dev/null
	tc filter add dev "$dev" egress bpf direct-action obj "$BPF_OBJ" \
		sec classifier_crowd || die "egress program classifier_crowd"
	pg_device "$dev" "$1" 64 0
	echo 0 >"$T/tracing_on" &&
		echo nop >"$T/current_tracer" &&
		echo carousel_dequeue >"$T/set_ftrace_filter" &&
		echo carousel_dequeue >"$T/set_graph_function" &&
		echo 1 >"$T/max_graph_depth" &&
		echo "$CROWD_THRESH_US" >"$T/tracing_thresh" &&
		echo mono >"$T/trace_clock" &&
		echo 8192 >"$T/buffer_size_kb" &&
		echo function_graph >"$T/current_tracer" &&
		echo >"$T/trace" || die "function_graph on carousel_dequeue"
	# Start early in a period (/proc/uptime: boot time, in 10 ms, which
	# is monotonic time in a guest that never suspends), and end in it,
	# so that the whole crowd is stamped for the same instant.
	for ((i = 0; i < 1000; i++)); do
		read -r up _ </proc/uptime
		up=${up/./}
		phase=$(((10#$up * 10000000) % CROWD_PERIOD))
		[ "$phase" -gt 100000000 ] && [ "$phase" -lt 1000000000 ] && break
		nap
	done
	[ "$i" -lt 1000 ] || die "crowd $1: no period started"
	period=$(((10#$up * 10000000) / CROWD_PERIOD))
	echo 1 >"$T/tracing_on"
	read -r tx0 <"/sys/class/net/$dev/statistics/tx_packets"
	"$MARK" "$PG/pgctrl" start || die "insnmark: pktgen start on $dev"
	pg_wait "$dev" done
	read -r up _ </proc/uptime
	up=${up/./}
	[ $(((10#$up * 10000000 + 10000000) / CROWD_PERIOD)) = "$period" ] ||
		die "crowd $1: sent over two periods, so for two instants"
	# The crowd leaves two periods on, within seconds of each other.
	for ((i = 0; i < 12000; i++)); do
		read -r tx1 <"/sys/class/net/$dev/statistics/tx_packets"
		[ $((tx1 - tx0)) -lt "$1" ] || break
		nap
	done
	echo 0 >"$T/tracing_on"
	# Parsed from a copy: bash's reads of the trace file itself can split
	# a line ("8.023 us" read as "023 us", 23 us), cp's cannot.
	cp "$T/trace" "$OUTDIR/crowd-$1.trace" || die "copy of the trace"
	echo "crowd hash 64 carousel $1 -1 $((tx1 - tx0))" >>"$OUTDIR/plan.txt"
	# function_graph's return lines: "... 12.345 us | } /* carousel_dequeue
	# ...": in us, with 7 digits in all, so fewer decimals from 10 ms up
	# ("47510.25 us"), none from 1 s.
	while IFS= read -r l; do
		case $l in *carousel_dequeue*) ;; *) continue ;; esac
		d=${l%% us*}
		d=${d##* }
		case $d in
		*.*) f=${d#*.}000 ;;
		*[0-9]) f=000 ;;
		*) continue ;;
		esac
		d=$((10#${d%.*} * 1000 + 10#${f:0:3}))
		calls=$((calls + 1))
		[ "$d" -gt "$max" ] && max=$d
	done <"$OUTDIR/crowd-$1.trace"
	while IFS= read -r l; do
		case $l in overrun:*) overrun=$((overrun + ${l#overrun: })) ;; esac
	done < <(cat "$T"/per_cpu/cpu*/stats)
	echo nop >"$T/current_tracer"
	echo local >"$T/trace_clock"
	echo 0 >"$T/tracing_thresh"
	echo >"$T/set_ftrace_filter"
	echo >"$T/set_graph_function"
	echo "crowd $1 $((tx1 - tx0)) $spin_win $spin_ns $calls $max $((CROWD_THRESH_US * 1000)) $overrun" \
		>>"$OUTDIR/crowd.txt"
	echo "# insnbench: crowd of $1: $((tx1 - tx0)) sent, longest dequeue $max ns, $calls over ${CROWD_THRESH_US} us, at ${SECONDS}s"
	tc qdisc del dev "$dev" root
}

# tcp_setup: t_Q, a veth to p_Q in namespace tn_Q (10.77.K.1 -> .2),
# for each qdisc Q (the K-th).
tcp_setup() {
	local k=0 q

	for q in "${QDISCS[@]}"; do
		k=$((k + 1))
		# (IPv6 off there too: see above)
		ip netns add "tn_$q" &&
			ip netns exec "tn_$q" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
				net.ipv6.conf.default.disable_ipv6=1 &&
			ip link add "t_$q" type veth peer name "p_$q" netns "tn_$q" &&
			ip addr add "10.77.$k.1/24" dev "t_$q" &&
			ip -n "tn_$q" addr add "10.77.$k.2/24" dev "p_$q" &&
			ip link set "t_$q" gso_max_segs 1 &&
			ip link set "t_$q" up && ip -n "tn_$q" link set "p_$q" up &&
			ip -n "tn_$q" link set lo up || die "veth t_$q"
	done
}

# tcp_window Q K BYTES REP: one counted run of the TCP load through t_Q
# (the K-th qdisc), against a fresh listener that never reads, killed
# after (so that the connections it holds go with it).
tcp_window() {
	local dev=t_$1 peer=10.77.$2.2 tx0 tx1 pid i l segs

	ip netns exec "tn_$1" python3 -c '
import signal, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.SOL_SOCKET, 33, 8 * int(sys.argv[3]))	# SO_RCVBUFFORCE
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(4096)
signal.pause()' "$peer" "$TCP_PORT" "$3" &
	pid=$!
	for ((i = 0; i < 6000; i++)); do
		l=$(ip netns exec "tn_$1" ss -Hltn "sport = :$TCP_PORT")
		[ -n "$l" ] && break
		nap
	done
	[ -n "$l" ] || die "tcp listener in tn_$1"
	read -r tx0 <"/sys/class/net/$dev/statistics/tx_packets"
	segs=$("$MARK" -tcp "$peer" "$TCP_PORT" "$TCP_N" "$3" $((TCP_PACE / 8)) \
		$((TCP_STEP / 8))) || die "insnmark -tcp through $1"
	segs=${segs#segs }
	read -r tx1 <"/sys/class/net/$dev/statistics/tx_packets"
	kill "$pid"
	wait "$pid" 2>/dev/null
	echo "tcp hash $TCP_N $1 $segs $4 $((tx1 - tx0))" >>"$OUTDIR/plan.txt"
}

nq=${#QDISCS[@]}
for h in $HASHES; do
	egress "$h"
	for n in $CLASSES; do
		for q in "${QDISCS[@]}"; do
			setup_qdisc "$q" "$n" || die "$q with $n classes"
			window light "$h" "$n" "$q" "$PKTS" -1
		done
		for ((r = 0; r < REPS; r++)); do
			for ((k = 0; k < nq; k++)); do
				q=${QDISCS[(k + r) % nq]}
				window light "$h" "$n" "$q" "$PKTS" "$r"
				window light "$h" "$n" "$q" $((2 * PKTS)) "$r"
			done
		done
		echo "# insnbench: light load, $h, $n classes: done at ${SECONDS}s"
	done
done
if [ "$BACKLOG_N" -gt 0 ]; then
	# (reloaded, the programs would move: kallsyms is read at the end)
	[ "$h" = hash ] || egress hash
	for ((r = 0; r < REPS; r++)); do
		for ((k = 0; k < nq; k++)); do
			q=${QDISCS[(k + r) % nq]}
			backlogged "$q" "$BACKLOG_PKTS" "$r"
			backlogged "$q" $((2 * BACKLOG_PKTS)) "$r"
		done
	done
	echo "# insnbench: backlogged, $BACKLOG_N classes: done at ${SECONDS}s"
fi
if [ "$TCP_N" -gt 0 ]; then
	tcp_setup
	for ((k = 0; k < nq; k++)); do
		q=${QDISCS[k]}
		SETUP_DEV=t_$q setup_qdisc "$q" "$TCP_N" $((TCP_N * TCP_RATE)) ||
			die "$q on t_$q"
		tcp_window "$q" $((k + 1)) "$TCP_BYTES" -1
	done
	for ((r = 0; r < REPS; r++)); do
		for ((k = 0; k < nq; k++)); do
			i=$(((k + r) % nq))
			q=${QDISCS[i]}
			tcp_window "$q" $((i + 1)) "$TCP_BYTES" "$r"
			tcp_window "$q" $((i + 1)) $((2 * TCP_BYTES)) "$r"
		done
	done
	for q in "${QDISCS[@]}"; do
		ip netns del "tn_$q"
	done
	echo "# insnbench: tcp, $TCP_N flows: done at ${SECONDS}s"
fi
# (before the crowd's program replaces one: its windows need no names)
cp /proc/kallsyms "$OUTDIR/kallsyms.txt"
if [ -n "$CROWD" ]; then
	[ -e "$TRACING/trace" ] || mount -t tracefs nodev "$TRACING" ||
		die "tracefs"
	: >"$OUTDIR/crowd.txt"
	# guest ns against instructions, in a window that never idles
	spin_win=$(wc -l <"$OUTDIR/plan.txt")
	spin_ns=$("$MARK" -spin 100000000) || die "insnmark -spin"
	spin_ns=${spin_ns#ns }
	echo "spin none 1 noqueue 0 -1 0" >>"$OUTDIR/plan.txt"
	for c in $CROWD; do
		crowd "$c"
	done
fi
pg kpktgend_0 rem_device_all
for q in "${QDISCS[@]}"; do
	ip link del "b_$q"
done
touch "$OUTDIR/done"
exit 0

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# In-guest CPU cost per packet of carousel, fq, htb and pfifo (and of no
# qdisc at all, noqueue, as the baseline), run by bench-guest.sh inside a network
# namespace of its own:
#
#   ip netns exec NS bash scripts/bench/cpubench.sh OUT.jsonl BPF_OBJ \
#       "CLASSES..." PACKETS ROUNDS
#
# Traffic: pktgen in queue_xmit mode (so every packet goes through
# dev_queue_xmit and the root qdisc) to a dummy device per qdisc, PACKETS
# UDP packets of 100 bytes per run, as fast as pktgen goes, the source port
# cycling through 1..N.  A clsact egress program (prio.bpf.o) sets
# skb->priority to 1:<source port> in front of every qdisc alike, so
# carousel and htb pick one of their N classes by the priority alone; fq
# sees N flows (N source ports, orphan_mask 65535) and pfifo one queue.
#
# Classes: N of rate 10 Gbit/N each (htb, carousel), or fq's maxrate
# 10 Gbit/N per flow: the sum is 10 Gbit, far above the few hundred Mbit
# pktgen offers in the emulated guest, so all qdiscs carry the same
# packets (each run records what left the device).
#
# CPU time: the sys + softirq ticks of /proc/stat over the run on CPU 0,
# where pktgen's thread runs (this script stays off it, on CPU 1: bench-guest.sh
# runs it under taskset; all-CPU figures are recorded too), divided by
# the packets that left.  pktgen runs flat out on CPU 0, so this is the
# cost of one packet through the whole path:
# pktgen's skb, the egress program, the qdisc, the dummy driver.  The
# qdiscs of one N are set up once and the runs interleaved (round r runs
# every qdisc, in an order rotated per round), so that drift of the host
# under us hits all of them alike.
#
# One JSON object per run to OUT.jsonl.  Exits non-zero if something could
# not be set up or a run failed; never for a figure.
set -u

OUT=$1
BPF_OBJ=$2
CLASSES=$3
PKTS=$4
ROUNDS=$5

QDISCS=(noqueue pfifo fq htb carousel)
PKT_SIZE=100
TOTAL_KBIT=10000000		# sum of the class rates: 10 Gbit
PG=/proc/net/pktgen
HZ_USER=$(getconf CLK_TCK)

PROG=cpubench
# shellcheck source=scripts/bench/pglib.sh
source "$(dirname "$0")/pglib.sh"

# cpu_ticks: CT=(sys softirq irq of all CPUs, the same of CPU 0, pktgen's).
# No subshell: a child of ours that exits while `start` is being written
# sends us SIGCHLD, and pktgen takes any signal to its writer as "stop"
# (runs of a few hundred packets).
cpu_ticks() {
	local name u n s i io irq sirq rest
	while read -r name u n s i io irq sirq rest; do
		case $name in
		cpu) CT=("$s" "$sirq" "$irq") ;;
		cpu0) CT+=("$s" "$sirq" "$irq"); return ;;
		esac
	done </proc/stat
}

# run Q N ROUND: one pktgen run through b_Q; appends its JSON line.
run() {
	local q=$1 n=$2 round=$3 dev=b_$1 t0 t1 tx0 tx1 l res=
	local a0 b0 c0 d0 e0 f0 a1 b1 c1 d1 e1 f1

	pg_device "$dev" "$PKTS" "$n"

	read -r tx0 <"/sys/class/net/$dev/statistics/tx_packets"
	cpu_ticks
	a0=${CT[0]} b0=${CT[1]} c0=${CT[2]} d0=${CT[3]} e0=${CT[4]} f0=${CT[5]}
	pg pgctrl start
	pg_wait "$dev" done
	cpu_ticks
	a1=${CT[0]} b1=${CT[1]} c1=${CT[2]} d1=${CT[3]} e1=${CT[4]} f1=${CT[5]}
	# What the qdisc still holds leaves within a few ms at these rates.
	nap; nap; nap; nap
	read -r tx1 <"/sys/class/net/$dev/statistics/tx_packets"
	while IFS= read -r l; do
		case $l in *Result:*) res=$l ;; esac
	done <"$PG/$dev"
	# "Result: OK: 2104861(c2104768+d93) usec, 200000 (100byte,0frags)"
	t0=${res#*OK: }
	t0=${t0%%(*}
	[[ $t0 =~ ^[0-9]+$ ]] || die "pktgen $dev: no result ($res)"
	printf '{"qdisc":"%s","classes":%d,"round":%d,"offered":%d,"sent":%d,"pkt_size":%d,"user_hz":%d,"sys":%d,"softirq":%d,"irq":%d,"cpu0_sys":%d,"cpu0_softirq":%d,"cpu0_irq":%d,"pktgen_us":%d}\n' \
		"$q" "$n" "$round" "$PKTS" $((tx1 - tx0)) "$PKT_SIZE" "$HZ_USER" \
		$((a1 - a0)) $((b1 - b0)) $((c1 - c0)) $((d1 - d0)) $((e1 - e0)) $((f1 - f0)) \
		"$t0" >>"$OUT"
	t1=$(( ((d1 - d0) + (e1 - e0)) * 1000000000 / HZ_USER / ((tx1 - tx0) > 0 ? tx1 - tx0 : 1) ))
	echo "# cpu $q classes=$n round=$round: $((tx1 - tx0))/$PKTS sent, ${t0} us, $t1 ns/packet"
	# Should pktgen still stop a run early (a signal to this shell while
	# it writes `start`, see cpu_ticks), the run stays in the file,
	# report.py leaves it out (sent < offered / 2), and it runs again.
	if [ $((tx1 - tx0)) -lt $((PKTS / 2)) ]; then
		echo "# cpu $q classes=$n round=$round: short run, again"
		return 1
	fi
	return 0
}

TMPD=$(mktemp -d /tmp/cpubench.XXXXXX)
trap 'rm -rf "$TMPD"' EXIT
mkfifo "$TMPD/nap" && exec 9<>"$TMPD/nap" || die "fifo"
[ -d "$PG" ] || die "$PG missing (modprobe pktgen)"
[ -r "$BPF_OBJ" ] || die "$BPF_OBJ missing (make -C scripts/bench)"
ip link set lo up
for q in "${QDISCS[@]}"; do
	ip link add "b_$q" type dummy || die "dummy b_$q"
	ip link set "b_$q" txqueuelen 10000 up || die "b_$q up"
	tc qdisc add dev "b_$q" clsact || die "clsact on b_$q"
	tc filter add dev "b_$q" egress bpf direct-action obj "$BPF_OBJ" sec classifier ||
		die "egress program on b_$q"
done

nq=${#QDISCS[@]}
for n in $CLASSES; do
	for q in "${QDISCS[@]}"; do
		setup_qdisc "$q" "$n" || die "$q with $n classes"
	done
	for ((r = 0; r < ROUNDS; r++)); do
		for ((k = 0; k < nq; k++)); do
			run "${QDISCS[(k + r) % nq]}" "$n" "$r" ||
				run "${QDISCS[(k + r) % nq]}" "$n" "$r"
		done
	done
	if [ "$n" -ge 100 ]; then
		echo "# carousel xstats at $n classes: $(tc -s -j qdisc show dev b_carousel root |
			jq -c '.[0] | {packets, drops, overlimits, classes, flows, timer_arms, alloc_drops}')"
	fi
done
pg kpktgend_0 rem_device_all
for q in "${QDISCS[@]}"; do
	ip link del "b_$q"
done
exit 0

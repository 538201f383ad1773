#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# In-guest part of `make bench` (run by scripts/bench/bench.sh through
# scripts/lib/vm.sh): CPU per packet, rate accuracy and kernel memory of
# carousel, htb, fq (and pfifo), all in this one boot so that the figures
# can be compared side by side.  Writes JSON lines to OUTDIR:
#   kernel.jsonl    one per pktgen run (cpubench.sh)
#   accuracy.jsonl  one per (qdisc, classes, rate)
#   memory.jsonl    one per qdisc (per-qdisc bytes) and per classful qdisc
#                   (per-class bytes at MEM_CLASSES classes)
#
#   scripts/bench/bench-guest.sh OUTDIR KO [--smoke]
#
# CAROUSEL_BENCH_PARTS picks the parts ("cpu accuracy memory", the
# default); CAROUSEL_BENCH_PKTS the packets per CPU run.  Uses
# selftests/lib.sh for the netns pair and the txtime.py sender.  A failure
# to set something up is an error (exit 1); a figure never is.
# shellcheck source=selftests/lib.sh
source "$(dirname "$0")/../../selftests/lib.sh"

BENCH_OUT=$1
KO=$2
SMOKE=0
[ "${3:-}" = --smoke ] && SMOKE=1
# Empty: the parts append, and a VM booted again (vmresult.sh's retry)
# must not add to what the one that died wrote.
rm -rf "$BENCH_OUT"
mkdir -p "$BENCH_OUT"
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)

if [ ! -d /sys/module/sch_carousel ]; then
	insmod "$KO" || fail "insmod $KO"
fi
export TC_LIB_DIR=$REPO/tc
for m in sch_htb sch_fq sch_ingress cls_bpf dummy veth pktgen; do
	modprobe -q "$m" || fail "modprobe $m"
done

PARTS=${CAROUSEL_BENCH_PARTS:-cpu accuracy memory}
want() { [[ " $PARTS " == *" $1 "* ]]; }

if [ "$SMOKE" = 1 ]; then
	CPU_CLASSES="10"
	CPU_PKTS=${CAROUSEL_BENCH_PKTS:-20000}
	CPU_ROUNDS=1
	ACC_CLASSES="2"
	ACC_RATES="10"
	ACC_SECS=1
	MEM_DEVS=4
	MEM_CLASSES=100
else
	CPU_CLASSES="1 100 1000 10000"
	CPU_PKTS=${CAROUSEL_BENCH_PKTS:-150000}
	CPU_ROUNDS=3
	ACC_CLASSES="1 10 100"
	ACC_RATES="1 5 10"
	ACC_SECS=${CAROUSEL_BENCH_ACC_SECS:-3}
	MEM_DEVS=64
	MEM_CLASSES=10000
fi
PKT_L2=1442			# 1400 B payload + UDP + IPv4 + Ethernet: what the qdiscs count

# ---------------------------------------------------------------- CPU
if want cpu; then
	CNS=carousel-cpu-$$
	ip netns add "$CNS" || fail "netns $CNS"
	defer ip netns del "$CNS"
	# Off CPU 0, where pktgen runs and the CPU time is read.
	ip netns exec "$CNS" taskset -c 1 bash "$BENCH_DIR/cpubench.sh" "$BENCH_OUT/kernel.jsonl" \
		"$BENCH_DIR/prio.bpf.o" "$CPU_CLASSES" "$CPU_PKTS" "$CPU_ROUNDS" ||
		fail "cpubench.sh"
fi

# ---------------------------------------------------------------- accuracy
if want accuracy; then
setup_pair --no-offload
quiet_link

# qdisc_setup QDISC CLASSES RATE_MBIT: root qdisc on $DEV; classes 1:1..1:N.
qdisc_setup() {
	local q=$1 n=$2 r=$3 i
	tc -n "$NS_S" qdisc del dev "$DEV" root 2>/dev/null
	case $q in
	carousel)
		ns_s tc qdisc add dev "$DEV" root handle 1: carousel flow_limit 1000 ||
			fail "carousel add"
		for ((i = 1; i <= n; i++)); do
			printf 'class add dev %s parent 1: classid 1:%x carousel rate %dmbit\n' \
				"$DEV" "$i" "$r"
		done >"$TMPD/cl.batch"
		ns_s tc -batch "$TMPD/cl.batch" || fail "carousel classes"
		;;
	htb)
		ns_s tc qdisc add dev "$DEV" root handle 1: htb || fail "htb add"
		for ((i = 1; i <= n; i++)); do
			printf 'class add dev %s parent 1: classid 1:%x htb rate %dmbit\n' \
				"$DEV" "$i" "$r"
		done >"$TMPD/cl.batch"
		ns_s tc -batch "$TMPD/cl.batch" || fail "htb classes"
		;;
	fq)
		ns_s tc qdisc add dev "$DEV" root handle 1: fq maxrate "${r}mbit" \
			flow_limit 1000 || fail "fq add"
		;;
	esac
}

port=7000
for q in carousel htb fq; do
	for n in $ACC_CLASSES; do
		for r in $ACC_RATES; do
			qdisc_setup "$q" "$n" "$r"
			gap_ns=$((PKT_L2 * 8 * 1000 / r))	# ns at r Mbit
			count=$((ACC_SECS * 1000000000 / gap_ns))
			[ "$count" -ge 40 ] || count=40
			bgpid=
			if [ "$n" -gt 1 ]; then
				ns_s "$PYTHON" "$BENCH_DIR/multisend.py" --dst "$IP_R" --port 9 \
					--count $((n - 1)) --base $((0x10002)) \
					--seconds $((ACC_SECS + 3)) >"$TMPD/bg.json" 2>&1 &
				bgpid=$!
				sleep 1
			fi
			port=$((port + 1))
			ns_r "$PYTHON" "$BENCH_DIR/recvgaps.py" --port "$port" --count "$count" \
				--timeout $((ACC_SECS * 3 + 20)) >"$TMPD/recv.json" &
			rpid=$!
			busywait 30000 _listening "$port" >/dev/null || fail "recvgaps.py did not start"
			# txtimes twice as dense as the rate: the qdisc does the pacing.
			txtime_send "$port" --gap-us "$((gap_ns / 2000))" --count "$count" \
				--size 1400 --lead-ms 1 --priority $((0x10001)) >/dev/null
			wait "$rpid" || fail "recvgaps.py failed"
			res=$(cat "$TMPD/recv.json")
			[ -z "$bgpid" ] || wait "$bgpid"
			stats=$(qdisc_json "$DEV" | jq -c '.[0] | {drops, overlimits}')
			printf '{"qdisc":"%s","classes":%d,"rate_mbit":%d,"pkt_bytes":%d,"expected_gap_ns":%d,"recv":%s,"qdisc_stats":%s}\n' \
				"$q" "$n" "$r" "$PKT_L2" "$gap_ns" "$res" "$stats" >>"$BENCH_OUT/accuracy.jsonl"
			echo "# accuracy $q classes=$n rate=${r}mbit: $(jq -c '{received, mean_gap_ns, stddev_gap_ns}' "$TMPD/recv.json")"
		done
	done
done
tc -n "$NS_S" qdisc del dev "$DEV" root 2>/dev/null
fi

# ---------------------------------------------------------------- memory
if want memory; then
# kmem: "used slab vmalloc" in bytes, after an RCU grace period, with
# every slab cache's per-CPU slabs flushed and the page cache dropped.
# used = MemTotal - MemFree sees slab objects, vmalloc and large kmalloc
# (straight from the page allocator, > 8 KiB: the wheel, the flow table)
# alike; Slab and VmallocUsed alone miss the last.  Noisy by some 100 KiB,
# hence many qdiscs / classes per sample.
kmem() {
	local f
	sync
	sleep 1
	for f in /sys/kernel/slab/*/shrink; do
		echo 1 >"$f" 2>/dev/null
	done
	echo 3 >/proc/sys/vm/drop_caches
	awk '$1 == "MemTotal:" { t = $2 } $1 == "MemFree:" { f = $2 }
	     $1 == "Slab:" { s = $2 } $1 == "VmallocUsed:" { v = $2 }
	     END { printf "%d %d %d\n", (t - f) * 1024, s * 1024, v * 1024 }' /proc/meminfo
}

MNS=carousel-mem-$$
ip netns add "$MNS" || fail "netns $MNS"
defer ip netns del "$MNS"
for ((i = 0; i < MEM_DEVS; i++)); do
	ip -n "$MNS" link add "bd$i" type dummy || fail "dummy"
	ip -n "$MNS" link set "bd$i" up
done

qdisc_args() {
	case $1 in
	carousel) echo "handle 1: carousel" ;;
	htb) echo "handle 1: htb" ;;
	fq) echo "handle 1: fq" ;;
	pfifo) echo "handle 1: pfifo" ;;
	esac
}

for q in carousel fq htb pfifo; do
	for ((i = 0; i < MEM_DEVS; i++)); do
		# shellcheck disable=SC2046
		echo "qdisc add dev bd$i root $(qdisc_args "$q")"
	done >"$TMPD/q.batch"
	for ((i = 0; i < MEM_DEVS; i++)); do
		echo "qdisc del dev bd$i root"
	done >"$TMPD/qdel.batch"
	read -r m0 s0 v0 < <(kmem)
	tc -n "$MNS" -batch "$TMPD/q.batch" || fail "$q add x$MEM_DEVS"
	read -r m1 s1 v1 < <(kmem)
	extra=
	if [ "$q" = carousel ]; then
		extra=$(tc -n "$MNS" -s -j qdisc show dev bd0 | jq -c '{wheel_bytes: .[0].wheel_bytes}')
	fi
	tc -n "$MNS" -batch "$TMPD/qdel.batch" || fail "$q del"
	printf '{"kind":"qdisc","qdisc":"%s","devices":%d,"bytes_total":%d,"bytes_per_qdisc":%d,"slab_per_qdisc":%d,"vmalloc_per_qdisc":%d,"extra":%s}\n' \
		"$q" "$MEM_DEVS" $((m1 - m0)) $(((m1 - m0) / MEM_DEVS)) \
		$(((s1 - s0) / MEM_DEVS)) $(((v1 - v0) / MEM_DEVS)) "${extra:-null}" \
		>>"$BENCH_OUT/memory.jsonl"
	echo "# memory $q: $(((m1 - m0) / MEM_DEVS)) B per qdisc"
done

for q in carousel htb; do
	tc -n "$MNS" qdisc add dev bd0 root handle 1: "$q" || fail "$q add"
	for ((i = 1; i <= MEM_CLASSES; i++)); do
		printf 'class add dev bd0 parent 1: classid 1:%x %s rate %dkbit\n' "$i" "$q" $((1000 + i))
	done >"$TMPD/c.batch"
	read -r m0 s0 v0 < <(kmem)
	tc -n "$MNS" -batch "$TMPD/c.batch" || fail "$q classes"
	read -r m1 s1 v1 < <(kmem)
	tc -n "$MNS" qdisc del dev bd0 root
	printf '{"kind":"class","qdisc":"%s","classes":%d,"bytes_total":%d,"bytes_per_class":%d,"slab_per_class":%d,"vmalloc_per_class":%d}\n' \
		"$q" "$MEM_CLASSES" $((m1 - m0)) $(((m1 - m0) / MEM_CLASSES)) \
		$(((s1 - s0) / MEM_CLASSES)) $(((v1 - v0) / MEM_CLASSES)) >>"$BENCH_OUT/memory.jsonl"
	echo "# memory $q: $(((m1 - m0) / MEM_CLASSES)) B per class at $MEM_CLASSES classes"
done
fi
echo "# guest bench done"
# Last: the host's sign that this script reached its end.
touch "$BENCH_OUT/done"
exit 0

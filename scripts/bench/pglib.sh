# SPDX-License-Identifier: GPL-2.0
#
# pglib.sh - what the in-guest pktgen benchmarks share (cpubench.sh, the
# wall-clock CPU cost, and insnbench-guest.sh, the instruction count):
# pktgen commands and waits, and the qdisc set-ups under test.  Sourced;
# the caller sets PROG (the name in error messages), PG, TOTAL_KBIT and
# TMPD, and opens fd 9 on a FIFO (nap).

die() {
	echo "$PROG: $*" >&2
	exit 1
}

# pg FILE CMD: one pktgen command; fail unless pktgen answers OK.
pg() {
	local l res=
	echo "$2" >"$PG/$1" 2>/dev/null || die "pktgen $1: '$2' refused"
	[ "$1" = pgctrl ] && return 0
	[ "${1#kpktgend_}" != "$1" ] && return 0
	while IFS= read -r l; do
		case $l in Result:*) res=$l ;; esac
	done <"$PG/$1"
	case $res in
	"Result: OK"*) ;;
	*) die "pktgen $1: '$2': $res" ;;
	esac
}

# nap: sleep 50 ms without a fork (a fork costs CPU time we measure).
nap() {
	read -r -t 0.05 -u 9
}

# pg_wait DEV gone|done: wait until pktgen has removed (gone) or finished (done)
# the device, up to 300 s.  pktgen only waits 125 ms for its thread to
# take a command, which the emulated guest may miss.
pg_wait() {
	local i l res
	for ((i = 0; i < 6000; i++)); do
		case $2 in
		gone) [ -e "$PG/$1" ] || return 0 ;;
		done)
			res=
			while IFS= read -r l; do
				case $l in *Result:*) res=$l ;; esac
			done <"$PG/$1"
			case $res in *"Result: OK: "*usec*) return 0 ;; esac
			;;
		esac
		nap
	done
	die "pktgen $1: not $2 after 300 s"
}

# setup_qdisc Q N [TOTAL_BIT]: the root qdisc of b_Q (or SETUP_DEV) for N classes of
# TOTAL_BIT / N bit/s each (default TOTAL_KBIT in all); fq gets that rate
# as its maxrate per flow, and FQ_OPTS (if set) besides; carousel gets
# CAROUSEL_OPTS.
setup_qdisc() {
	local q=$1 n=$2 dev=${SETUP_DEV:-b_$1} r i
	r=$((${3:-$((TOTAL_KBIT * 1000))} / n))
	tc qdisc del dev "$dev" root 2>/dev/null
	case $q in
	noqueue) return 0 ;;
	pfifo) tc qdisc add dev "$dev" root pfifo limit 10000 ;;
	fq_codel) tc qdisc add dev "$dev" root fq_codel ;;
	fq) tc qdisc add dev "$dev" root fq maxrate "${r}bit" orphan_mask 65535 \
		buckets 4096 ${FQ_OPTS:-} ;;
	htb|carousel)
		if [ "$q" = htb ]; then
			tc qdisc add dev "$dev" root handle 1: htb || return 1
		else
			tc qdisc add dev "$dev" root handle 1: carousel \
				${CAROUSEL_OPTS:-} || return 1
		fi
		for ((i = 1; i <= n; i++)); do
			if [ "$q" = htb ]; then
				printf 'class add dev %s parent 1: classid 1:%x htb rate %dbit quantum 1514\n' \
					"$dev" "$i" "$r"
			else
				printf 'class add dev %s parent 1: classid 1:%x carousel rate %dbit\n' \
					"$dev" "$i" "$r"
			fi
		done >"$TMPD/classes.batch"
		tc -batch "$TMPD/classes.batch"
		;;
	esac
}

# pg_device DEV PKTS N [DELAY_NS]: pktgen's thread 0 sends PKTS UDP
# packets of PKT_SIZE bytes through DEV (queue_xmit: through its root
# qdisc), the source port cycling through 1..N, one every DELAY_NS (0: as
# fast as it can); every other device (of QDISCS) is removed from the
# thread first.
pg_device() {
	local prev

	pg kpktgend_0 rem_device_all
	for prev in "${QDISCS[@]}"; do
		pg_wait "b_$prev" gone
	done
	pg kpktgend_0 "add_device $1"
	pg "$1" "xmit_mode queue_xmit"
	pg "$1" "count $2"
	pg "$1" "pkt_size $PKT_SIZE"
	pg "$1" "clone_skb 0"
	pg "$1" "delay ${4:-0}"
	pg "$1" "dst 198.18.0.2"
	pg "$1" "src_min 198.18.0.1"
	pg "$1" "src_max 198.18.0.1"
	pg "$1" "dst_mac 02:00:00:00:00:02"
	pg "$1" "udp_dst_min 9"
	pg "$1" "udp_dst_max 9"
	# pktgen cycles the port through [min, max): 1..N, moving it on
	# before every packet, from min (each of the two sets the current
	# port: min last), so the first packet is 1:2 and every Nth 1:1.
	pg "$1" "udp_src_max $(($3 > 1 ? $3 + 1 : 1))"
	pg "$1" "udp_src_min 1"
}

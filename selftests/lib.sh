# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# selftests/lib.sh: sourced by every selftest (selftests/NN-name.sh), in the
# style of tools/testing/selftests/net/lib.sh.
#
#   #!/bin/bash
#   # timeout: 120                  (optional; run.sh's per-test limit, s)
#   source "$(dirname "$0")/lib.sh"
#   require_carousel
#   setup_pair                      # NS_S/NS_R, DEV_S (=DEV)/DEV_R, IP_S/IP_R
#   ns_s tc qdisc add dev "$DEV" root handle 1: carousel || fail "add"
#   bps=$(iperf_tcp 5201 5)
#   assert_within goodput "$bps" "$(tcp_goodput_expected 10000000 1500)" 5
#
# Exit codes (kselftest): 0 pass, 1 fail, 4 skip.  fail/skip work from
# anywhere, even inside $(...): the subshell signals the test's main shell,
# which then exits.  Cleanup (trap on EXIT) deletes the netns, kills the
# background processes and runs what was registered with defer, in reverse.
#
# Environment from run.sh: CAROUSEL_REPO, CAROUSEL_KVER, CAROUSEL_RESULTS,
# CAROUSEL_TEST_NAME, CAROUSEL_SKIP_FILE, TC_LIB_DIR; from check-debug,
# CAROUSEL_WAIT_SCALE (below).  A test also runs by
# hand (as root, in the VM): bash selftests/01-load.sh.

set -u

KSFT_PASS=0
KSFT_FAIL=1
KSFT_SKIP=4

# (Every fork+exec costs ~0.1 s in the TCG guest, jq ~0.3 s: builtins where we can.)
LIB_DIR=$(readlink -f "${BASH_SOURCE[0]}")
LIB_DIR=${LIB_DIR%/*}
TOOLS=$LIB_DIR/tools
# shellcheck source=selftests/tools/tier.sh
source "$TOOLS/tier.sh"
REPO=${CAROUSEL_REPO:-${LIB_DIR%/*}}
KVER=${CAROUSEL_KVER:-$(uname -r)}
_t=${0##*/}
TEST_NAME=${CAROUSEL_TEST_NAME:-${_t%.sh}}
PYTHON=${PYTHON:-python3}

# TC_NEW: a newer tc to test the plugin against too (iproute2 6.15 from
# bookworm-backports, unpacked by deps.sh, not installed); empty if absent.
TC_NEW=${CAROUSEL_TC_NEW:-}

# WAIT_SCALE: a whole-number factor for busywait's limits (1).  check-debug
# sets it: under KASAN and lockdep a sender or receiver can take longer to
# start than the plain kernel's few seconds.
WAIT_SCALE=${CAROUSEL_WAIT_SCALE:-1}
[[ $WAIT_SCALE =~ ^[1-9][0-9]*$ ]] || WAIT_SCALE=1
if [ -z "$TC_NEW" ]; then
	for _t in "${HOME:-/root}/.cache/sch_carousel/iproute2-bp/root/sbin/tc" \
		  /root/.cache/sch_carousel/iproute2-bp/root/sbin/tc; do
		if [ -x "$_t" ]; then
			TC_NEW=$_t
			break
		fi
	done
fi

# Addresses from the benchmarking range 198.18.0.0/15 (RFC 2544).
IP_S=198.18.0.1
IP_R=198.18.0.2
DEV_S=veth_s
DEV_R=veth_r
DEV=$DEV_S			# where the qdisc under test goes
NS_S=
NS_R=

TMPD=$(mktemp -d "/tmp/carousel-$TEST_NAME.XXXXXX")
# Artifacts (iperf JSON, tool output) the host can read after the run.
if [ -n "${CAROUSEL_RESULTS:-}" ] && [ -w "${CAROUSEL_RESULTS}" ]; then
	ART=$CAROUSEL_RESULTS/$KVER.d/$TEST_NAME
else
	ART=$TMPD/artifacts
fi
mkdir -p "$ART"

_T0=${EPOCHREALTIME/./}
_MAIN_PID=$BASHPID
_DEFER=()
_BG_PIDS=()
declare -A _IPERF_CLIENT=()	# port -> client pid
declare -A _IPERF_SERVER=()	# port -> server pid
declare -A _TXTIME_RECV=()	# port -> txtime.py recv pid

# ---------------------------------------------------------------- basics

# now_ms: monotonic-enough wall clock in ms.
now_ms() { echo $(( ${EPOCHREALTIME/./} / 1000 )); }

# log MSG...: a line (to stderr) with the seconds since the test started.
log() {
	local us=$(( ${EPOCHREALTIME/./} - _T0 ))
	printf '[%d.%02ds] %s\n' $((us / 1000000)) $((us % 1000000 / 10000)) "$*" >&2
}

# fail MSG...: the test fails now (exit 1), from anywhere.
fail() {
	echo "FAIL: $*" >&2
	if [ "$BASHPID" != "$_MAIN_PID" ]; then
		kill -USR1 "$_MAIN_PID" 2>/dev/null
	fi
	exit "$KSFT_FAIL"
}

# skip REASON...: the test is skipped now (exit 4), from anywhere.  The
# reason ends up in the TAP line: "ok N name # SKIP reason".
skip() {
	echo "SKIP: $*" >&2
	[ -z "${CAROUSEL_SKIP_FILE:-}" ] || echo "$*" >"$CAROUSEL_SKIP_FILE"
	if [ "$BASHPID" != "$_MAIN_PID" ]; then
		kill -USR2 "$_MAIN_PID" 2>/dev/null
	fi
	exit "$KSFT_SKIP"
}

# in_tier TIER [WHAT]: true if this run's tier (CAROUSEL_TIER, unset: full)
# includes TIER (tools/tier.sh), for a part of a test that belongs to a
# higher tier than the test.  If not, and WHAT is given, says what it
# leaves out: in_tier full "the fq phase" || ...
in_tier() {
	local want have

	want=$(tier_rank "$1")
	have=$(tier_rank "${CAROUSEL_TIER:-full}")
	[ -n "$want" ] && [ -n "$have" ] ||
		fail "in_tier: unknown tier ($1, CAROUSEL_TIER=${CAROUSEL_TIER:-})"
	[ "$have" -ge "$want" ] && return 0
	[ -z "${2:-}" ] || echo "# not in tier ${CAROUSEL_TIER}: $2 (tier $1)"
	return 1
}

# check_fail MSG...: a soft failure: log it, go on, fail the test at exit.
check_fail() {
	echo "FAIL: $*" >&2
	echo "$*" >>"$TMPD/soft_fails"
	return 1
}

# defer CMD [ARGS...]: run CMD at cleanup (last registered runs first).
defer() {
	local q
	q=$(printf '%q ' "$@")
	_DEFER+=("$q")
}

# bg CMD [ARGS...]: start CMD in the background, killed at cleanup; sets
# BG_PID to its pid.  CMD may start with ns_s / ns_r:  bg ns_r socat ...
bg() {
	case $1 in
	ns_s) shift; ip netns exec "$NS_S" "$@" & ;;
	ns_r) shift; ip netns exec "$NS_R" "$@" & ;;
	*) "$@" & ;;
	esac
	BG_PID=$!
	_BG_PIDS+=("$BG_PID")
}

# wait_pid PID (also _wait_pid): wait for PID: its exit status if it is a
# child of this shell; else (e.g. called from a $(...) subshell) poll until
# it is gone and return 0 (callers then judge by the output files).
_wait_pid() {
	local rc=0
	if [ "$(ps -o ppid= -p "$1" 2>/dev/null | tr -d ' ')" = "$BASHPID" ]; then
		wait "$1" || rc=$?
		return "$rc"
	fi
	while kill -0 "$1" 2>/dev/null; do
		sleep 0.1
	done
	wait "$1" 2>/dev/null	# reap it if it was ours after all
	return 0
}

wait_pid() { _wait_pid "$@"; }

cleanup() {
	local rc=$? i
	set +e
	trap - EXIT USR1 USR2 TERM INT
	if declare -F cleanup_test >/dev/null; then
		cleanup_test
	fi
	for ((i = ${#_DEFER[@]} - 1; i >= 0; i--)); do
		eval "${_DEFER[i]}"
	done
	for i in "${_BG_PIDS[@]}"; do
		kill "$i" 2>/dev/null
	done
	for i in "${_BG_PIDS[@]}"; do
		wait "$i" 2>/dev/null
	done
	for i in $NS_S $NS_R; do
		ip netns del "$i" 2>/dev/null
	done
	if [ "$rc" = 0 ] && [ -s "$TMPD/soft_fails" ]; then
		echo "FAIL: $(wc -l <"$TMPD/soft_fails") check(s) failed" >&2
		rc=$KSFT_FAIL
	fi
	rm -rf "$TMPD"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit $KSFT_FAIL' USR1
trap 'exit $KSFT_SKIP' USR2
trap 'echo "FAIL: killed (timeout?)" >&2; exit $KSFT_FAIL' TERM INT

# busywait TIMEOUT_MS CMD [ARGS...]: retry CMD every 100 ms until it
# succeeds or TIMEOUT_MS passed.  Prints the last attempt's stdout and
# returns its status (net/lib.sh semantics).  TIMEOUT_MS is multiplied by
# WAIT_SCALE: it only bounds how long we wait for something to happen (a
# server to listen, a backlog to build), never what a test measures.
busywait() {
	local timeout_ms=$(($1 * WAIT_SCALE)) start out ret
	shift
	start=$(now_ms)
	while :; do
		out=$("$@")
		ret=$?
		if [ "$ret" = 0 ] || (( $(now_ms) - start > timeout_ms )); then
			printf '%s' "$out"
			return "$ret"
		fi
		sleep 0.1
	done
}

# require_cmd CMD...: skip unless every CMD is in PATH.
require_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null || skip "$c not installed"
	done
}

# require_module MOD...: modprobe a kernel module of the booted kernel, or skip.
require_module() {
	local m
	for m in "$@"; do
		modprobe -q "$m" 2>/dev/null || [ -d "/sys/module/$m" ] ||
			skip "kernel module $m not available"
	done
}

# require_carousel: fail (not skip) unless sch_carousel is loaded and tc
# knows the carousel kind.  A broken module or plugin must not look like a skip.
require_carousel() {
	[ -d /sys/module/sch_carousel ] || fail "sch_carousel is not loaded"
	[ -e "${TC_LIB_DIR:-/nonexistent}/q_carousel.so" ] ||
		fail "tc plugin q_carousel.so not found in TC_LIB_DIR=${TC_LIB_DIR:-}"
}

# mod_refcnt MOD: the module's reference count (lsmod's "Used by" number).
mod_refcnt() {
	cat "/sys/module/$1/refcnt" 2>/dev/null || echo -1
}

# ---------------------------------------------------------------- netns

# ns_s CMD... / ns_r CMD...: run CMD in the sender / receiver netns.
ns_s() { ip netns exec "$NS_S" "$@"; }
ns_r() { ip netns exec "$NS_R" "$@"; }

# tc_batch WHAT: the tc commands on stdin, one per line, run in NS_S by one
# tc (-batch: a tc run costs about 0.4 s in a TCG guest).  It stops at the
# first command that fails and names its line; the test fails with WHAT.
#   tc_batch "qdisc add, class add" <<EOF
#   qdisc add dev $DEV root handle 1: carousel
#   class add dev $DEV parent 1: classid 1:10 carousel rate 1mbit
#   EOF
tc_batch() { ns_s tc -batch - || fail "$1"; }

# setup_pair [--mtu N] [--no-offload] [--txqueues N] [--ipv6]: two fresh
# netns, NS_S (sender) and NS_R (receiver), joined by a veth pair DEV_S (in
# NS_S: IP_S/24; the qdisc goes here, DEV is DEV_S) and DEV_R (in NS_R:
# IP_R/24).  IPv6 is off unless --ipv6 (no router solicitations, DAD or MLD
# reports wandering through the qdisc).  --no-offload turns off TSO/GSO/GRO
# on both ends so the qdisc sees MTU-sized packets, not GSO super-packets.
setup_pair() {
	local mtu=1500 offload=1 txq=1 v6=1 id ns
	while [ $# -gt 0 ]; do
		case $1 in
		--mtu) mtu=$2; shift 2 ;;
		--no-offload) offload=0; shift ;;
		--txqueues) txq=$2; shift 2 ;;
		--ipv6) v6=0; shift ;;
		*) fail "setup_pair: unknown option $1" ;;
		esac
	done
	id=$$-$RANDOM
	NS_S=carousel-s-$id
	NS_R=carousel-r-$id
	for ns in "$NS_S" "$NS_R"; do
		ip netns add "$ns" || fail "ip netns add $ns"
		ip -n "$ns" link set lo up || fail "lo up in $ns"
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=$v6 \
			net.ipv6.conf.default.disable_ipv6=$v6 || fail "sysctl ipv6 in $ns"
	done
	veth_pair "$DEV_S" "$IP_S" "$DEV_R" "$IP_R" "$txq" "$mtu" "$offload"
}

# veth_pair DEV_S IP_S DEV_R IP_R [TXQ MTU OFFLOAD]: a veth pair between
# NS_S (DEV_S, IP_S/24) and NS_R (DEV_R, IP_R/24), TXQ (1) queues each
# way, MTU (1500), TSO/GSO/GRO off unless OFFLOAD (1); up on return.
veth_pair() {
	local ds=$1 is=$2 dr=$3 ir=$4 txq=${5:-1} mtu=${6:-1500} offload=${7:-1}
	ip -n "$NS_S" link add "$ds" numtxqueues "$txq" numrxqueues "$txq" type veth \
		peer name "$dr" netns "$NS_R" numtxqueues "$txq" numrxqueues "$txq" ||
		fail "veth pair $ds"
	ip -n "$NS_S" link set "$ds" mtu "$mtu" || fail "mtu $mtu"
	ip -n "$NS_R" link set "$dr" mtu "$mtu" || fail "mtu $mtu"
	ip -n "$NS_S" addr add "$is/24" dev "$ds" || fail "addr $is"
	ip -n "$NS_R" addr add "$ir/24" dev "$dr" || fail "addr $ir"
	if [ "$offload" = 0 ]; then
		ns_s ethtool -K "$ds" tso off gso off gro off >/dev/null 2>&1 ||
			fail "ethtool -K $ds"
		ns_r ethtool -K "$dr" tso off gso off gro off >/dev/null 2>&1 ||
			fail "ethtool -K $dr"
	fi
	ip -n "$NS_S" link set "$ds" up || fail "link up $ds"
	ip -n "$NS_R" link set "$dr" up || fail "link up $dr"
	busywait 5000 _link_up "$NS_S" "$ds" >/dev/null || fail "$ds not up"
	busywait 5000 _link_up "$NS_R" "$dr" >/dev/null || fail "$dr not up"
}

_link_up() {
	[ "$(ip -n "$1" -j link show dev "$2" | jq -r '.[0].operstate')" = UP ]
}

# PING: iputils ping, or busybox's (deps.sh installs busybox-static).
if command -v ping >/dev/null; then
	PING=(ping)
else
	PING=(busybox ping)
fi

# quiet_link: nothing but the test's own packets on the pair from now on,
# for tests that count packets exactly: IPv6 off on both ends, permanent ARP
# entries both ways (no ARP), and the receiver sends no ICMP destination
# unreachable back (a flower drop on DEV_R's egress), so datagrams to a port
# nobody listens on vanish quietly instead of making the sender's next
# send() fail with ECONNREFUSED.
quiet_link() {
	ip netns exec "$NS_S" sysctl -qw "net.ipv6.conf.$DEV_S.disable_ipv6=1" >/dev/null
	ip netns exec "$NS_R" sysctl -qw "net.ipv6.conf.$DEV_R.disable_ipv6=1" >/dev/null
	pair_neigh "$DEV_S" "$IP_S" "$DEV_R" "$IP_R"
	tc -n "$NS_R" qdisc add dev "$DEV_R" clsact || fail "quiet_link: clsact on $DEV_R"
	tc -n "$NS_R" filter add dev "$DEV_R" egress protocol ip prio 1 \
		flower ip_proto icmp type 3 action drop || fail "quiet_link: icmp filter"
}

# pair_neigh DEV_S IP_S DEV_R IP_R: permanent ARP entries both ways on a
# veth pair (veth_pair's arguments), so no ARP is ever sent on it.
pair_neigh() {
	local mac_s mac_r
	mac_s=$(ip -n "$NS_S" -br link show dev "$1" | awk '{print $3}')
	mac_r=$(ip -n "$NS_R" -br link show dev "$3" | awk '{print $3}')
	[ -n "$mac_s" ] && [ -n "$mac_r" ] || fail "pair_neigh: no MAC addresses on $1, $3"
	ip -n "$NS_S" neigh replace "$4" lladdr "$mac_r" dev "$1" nud permanent ||
		fail "pair_neigh: neigh $4"
	ip -n "$NS_R" neigh replace "$2" lladdr "$mac_s" dev "$3" nud permanent ||
		fail "pair_neigh: neigh $2"
}

# use_dctcp: DCTCP as the congestion control of both ends (NS_S, NS_R);
# a netns may only pick an allowed one.
use_dctcp() {
	local ns

	sysctl -qw net.ipv4.tcp_allowed_congestion_control="$(sysctl -n \
		net.ipv4.tcp_allowed_congestion_control) dctcp" || fail "allow dctcp"
	for ns in "$NS_S" "$NS_R"; do
		ip netns exec "$ns" sysctl -qw net.ipv4.tcp_congestion_control=dctcp ||
			fail "dctcp in $ns"
	done
}

# ping_ok [COUNT]: COUNT (3) pings from NS_S to IP_R, 200 ms apart, answered.
ping_ok() {
	ns_s "${PING[@]}" -q -c "${1:-3}" -i 0.2 -W 2 "$IP_R" >/dev/null
}

# ping_rtt COUNT INTERVAL_S [NAME]: COUNT pings from NS_S to IP_R,
# INTERVAL_S apart; prints "replies p50 p99 max" (rtt_stats) of the
# per-reply RTTs in ms, which stay in $ART/ping-NAME.txt (NAME: "last"),
# and "seq rtt" per reply in $ART/ping-NAME.seq.
ping_rtt() {
	local f=$ART/ping-${3:-last}.txt
	ns_s "${PING[@]}" -n -c "$1" -i "$2" -W 2 "$IP_R" |
		sed -n 's/.*seq=\([0-9]*\) .*time=\([0-9.]*\) ms.*/\1 \2/p' \
		>"${f%.txt}.seq"
	cut -d' ' -f2 "${f%.txt}.seq" >"$f"
	rtt_stats "$f"
}

# rtt_pct P FILE...: the P-th percentile (the ceil(P/100 n)-th smallest) of
# the numbers in FILEs, one a line; 0 if none.
rtt_pct() {
	local p=$1
	shift
	cat "$@" | sort -g | awk -v p="$p" '{ v[NR] = $1 }
		END {
			if (!NR) { print 0; exit }
			i = int(NR * p / 100); if (i < NR * p / 100) i++
			print v[i]
		}'
}

# rtt_stats FILE...: "n p50 p99 max" of the numbers in FILEs, one a line
# (p99: the ceil(0.99 n)-th smallest; "0 0 0 0" if none).
rtt_stats() {
	cat "$@" | sort -g | awk '{ v[NR] = $1 }
		END {
			if (!NR) { print "0 0 0 0"; exit }
			i = int(NR * 0.99); if (i < NR * 0.99) i++
			printf "%d %s %s %s\n", NR, v[int((NR + 1) / 2)], v[i], v[NR]
		}'
}

# ---------------------------------------------------------------- tc JSON

# qdisc_json DEV / class_json DEV: `tc -s -d -j` output (a JSON array) for DEV
# in TC_NS (default: NS_S, the sender, where the qdisc under test lives).
# qdisc_json uses the distro tc (stats and xstats flat in each object);
# class_json uses tc_json (TC_NEW; stats in .stats).
qdisc_json() { tc -n "${TC_NS:-$NS_S}" -s -d -j qdisc show dev "$1"; }
class_json() { tc_json -n "${TC_NS:-$NS_S}" -s -d class show dev "$1"; }

# tc_json TC_ARGS...: tc -j TC_ARGS (any netns, any object), run with
# TC_NEW when there is one: Debian 12's tc (iproute2 6.1) ignores -j for
# `class show` and prints text.  Class stats are under .stats:
#   tc_json -n "$NS_S" -s class show dev "$DEV" | jq '.[0].stats.packets'
tc_json() { "${TC_NEW:-tc}" -j "$@"; }

# qjq DEV 'JQ' / cjq DEV 'JQ': one value (jq -r) from qdisc_json/class_json.
#   qjq "$DEV" '.[] | select(.kind == "carousel") | .packets'
qjq() { qdisc_json "$1" | jq -r "$2"; }
cjq() { class_json "$1" | jq -r "$2"; }

# OFFERED: jq, on a carousel's object in qdisc_json, for what it was
# offered: sent + dropped + its own backlog (wheel_packets +
# waiting_packets).  Not + tc's qlen: a packet the driver hands back
# (NETDEV_TX_BUSY, which veth returns while its peer's ring is full, from
# 6.12.y on) waits in the core's requeue list, already counted sent by
# our dequeue, and qlen counts it again until the driver takes it.
#   qjq "$DEV" ".[0] | $OFFERED"
OFFERED='(.packets + .drops + .wheel_packets + .waiting_packets)'
# backlog_ok QLEN OWN REQUEUES: tc's qlen is the qdisc's own backlog (OWN)
# plus packets in the requeue list, at most the REQUEUES counted so far.
backlog_ok() {
	[[ "$1" =~ ^[0-9]+$ && "$2" =~ ^[0-9]+$ && "$3" =~ ^[0-9]+$ ]] ||
		fail "backlog_ok: qlen '$1', own backlog '$2', requeues '$3'"
	[ "$1" -ge "$2" ] && [ "$(($1 - $2))" -le "$3" ] ||
		fail "qlen $1 is not the qdisc's own backlog $2 plus at most $3 requeued"
}

# rates_start DELAY SECONDS [--classes]: tools/qstat.py --rates SECONDS on
# $DEV in NS_S, in the background, its window opening DELAY s from now.
# python3's start (1 to 8 s in a busy TCG guest) then runs inside DELAY
# instead of pushing the window past the traffic.  rates_wait: sets RATES
# to its JSON (late_s in it: how far past DELAY the window opened).
rates_start() {
	local at
	at=$(awk -v n="$EPOCHREALTIME" -v d="$1" 'BEGIN { printf "%.6f", n + d }')
	shift
	bg ns_s "$PYTHON" "$TOOLS/qstat.py" --dev "$DEV" --at "$at" --rates "$@" \
		>"$TMPD/rates.json" 2>"$ART/rates.err"
	_RATES_PID=$BG_PID
}
# rates_start_busy SECONDS CLASSES [ARGS...]: qstat.py --rates SECONDS
# --classes --busy CLASSES in the background, returning once python3 has
# started: start the load after it.  Its window opens once every class
# of CLASSES (1:5,1:a) holds a packet (see qstat.py); rates_wait as above.
rates_start_busy() {
	local secs=$1 cls=$2
	shift 2
	rm -f "$TMPD/rates.ready"
	bg ns_s "$PYTHON" "$TOOLS/qstat.py" --dev "$DEV" --rates "$secs" --classes \
		--busy "$cls" --ready "$TMPD/rates.ready" "$@" \
		>"$TMPD/rates.json" 2>"$ART/rates.err"
	_RATES_PID=$BG_PID
	busywait 60000 test -e "$TMPD/rates.ready" >/dev/null ||
		fail "qstat.py did not start: $(cat "$ART/rates.err")"
}
rates_wait() {
	_wait_pid "$_RATES_PID" || fail "qstat.py --rates: $(cat "$ART/rates.err")"
	RATES=$(cat "$TMPD/rates.json")
	jq -e .bps <<<"$RATES" >/dev/null || fail "qstat.py --rates printed no rates: $RATES"
}

# ---------------------------------------------------------------- traffic

IPERF_OMIT=${IPERF_OMIT:-1}	# seconds of warm-up left out of the result

# iperf_start PORT T [CLIENT_ARGS...]: a one-off iperf3 server on PORT in
# NS_R and, once it listens, a client in NS_S for T s (+ IPERF_OMIT s of
# warm-up, -O) in the background.  Client JSON: $ART/iperf-PORT.json.
# Extra args go to the client: -u -b 10M, -P 4, -S 0x10, -C reno, -l 1400 ...
iperf_start() {
	local port=$1 t=$2
	shift 2
	_iperf_server "$port"
	timeout $((t + IPERF_OMIT + 30)) ip netns exec "$NS_S" \
		iperf3 -c "$IP_R" -p "$port" -t "$t" -O "$IPERF_OMIT" -J "$@" \
		>"$ART/iperf-$port.json" 2>"$ART/iperf-$port.err" &
	_IPERF_CLIENT[$port]=$!
	_BG_PIDS+=("$!")
}

_listening() { ns_r ss -Htlnu "sport = :$1" | grep -q .; }

# running PID: PID is alive (not gone, and not a zombie nobody waited for).
running() {
	local st
	st=$(ps -o stat= -p "$1" 2>/dev/null)
	[ -n "$st" ] && [ "${st:0:1}" != Z ]
}

# _iperf_server PORT: a one-off iperf3 server in NS_R, listening on return.
_iperf_server() {
	ip netns exec "$NS_R" iperf3 -s -1 -p "$1" >"$ART/iperf-server-$1.log" 2>&1 &
	_IPERF_SERVER[$1]=$!
	_BG_PIDS+=("$!")
	busywait 5000 _listening "$1" >/dev/null ||
		fail "iperf3 server on port $1 did not start"
}

# iperf_wait [PORT...]: wait for the clients (default: all started); fails
# the test if one failed.  Call it in the shell that called iperf_start.
iperf_wait() {
	local p ports=("$@") rc=0
	[ $# -gt 0 ] || ports=("${!_IPERF_CLIENT[@]}")
	for p in "${ports[@]}"; do
		[ -n "${_IPERF_CLIENT[$p]:-}" ] || fail "iperf_wait: no client on port $p"
		_wait_pid "${_IPERF_CLIENT[$p]}" || rc=$?
		unset "_IPERF_CLIENT[$p]"
		if ! jq -e '.end.sum_received // .end.sum' "$ART/iperf-$p.json" >/dev/null 2>&1; then
			[ "$rc" != 0 ] || rc=1
		fi
		if [ "$rc" != 0 ]; then
			cat "$ART/iperf-$p.err" >&2
			jq -r '.error // empty' "$ART/iperf-$p.json" >&2 2>/dev/null
			fail "iperf3 client on port $p exited $rc"
		fi
		_wait_pid "${_IPERF_SERVER[$p]}"
	done
}

# iperf_bps PORT: receiver-side goodput (bit/s, integer) of a finished run:
# end.sum_received.bits_per_second (TCP and, in iperf3 >= 3.12, UDP).
iperf_bps() {
	jq -er '(.end.sum_received // .end.sum).bits_per_second | floor' \
		"$ART/iperf-$1.json" || fail "no result in $ART/iperf-$1.json"
}

# iperf_json PORT: the path of the client's JSON, for anything else
# (.end.sum_received.bytes, .end.sum.lost_percent, .intervals[] ...).
iperf_json() { echo "$ART/iperf-$1.json"; }

# iperf_tcp PORT T [CLIENT_ARGS...]: one TCP run; prints goodput in bit/s.
iperf_tcp() {
	iperf_start "$@"
	iperf_wait "$1"
	iperf_bps "$1"
}

# iperf_udp PORT T RATE [CLIENT_ARGS...]: one UDP run at RATE (iperf3 -b
# syntax: 10M); prints receiver goodput in bit/s (UDP payload, no headers).
iperf_udp() {
	local port=$1 t=$2 rate=$3
	shift 3
	iperf_start "$port" "$t" -u -b "$rate" "$@"
	iperf_wait "$port"
	iperf_bps "$port"
}

# udp_loss PORT: lost percent (receiver view) of a finished UDP run.
udp_loss() {
	jq -r '(.end.sum_received // .end.sum).lost_percent' "$ART/iperf-$1.json"
}

# tcp_goodput_expected RATE_BPS MTU: TCP goodput (bit/s) that RATE_BPS of
# wire rate allows, the wire counted at L2 (incl. the 14 B Ethernet header,
# as qdisc_pkt_len is) and TCP carrying timestamps: MTU-52 of MTU+14 bytes.
tcp_goodput_expected() {
	awk -v r="$1" -v m="$2" 'BEGIN { printf "%.0f\n", r * (m - 52) / (m + 14) }'
}

# udp_goodput_expected RATE_BPS PAYLOAD: the same for UDP/IPv4 datagrams of
# PAYLOAD bytes (8 + 20 + 14 bytes of headers each, no fragmentation).
udp_goodput_expected() {
	awk -v r="$1" -v p="$2" 'BEGIN { printf "%.0f\n", r * p / (p + 42) }'
}

# txtime_recv PORT COUNT TIMEOUT_S [ARGS...]: start tools/txtime.py recv in
# NS_R in the background, wait until it listens.  Its JSON goes to
# $ART/txtime-PORT.json; read it after txtime_wait.
txtime_recv() {
	local port=$1 count=$2 tmo=$3
	shift 3
	ip netns exec "$NS_R" "$PYTHON" "$TOOLS/txtime.py" recv --port "$port" --count "$count" \
		--timeout "$tmo" "$@" >"$ART/txtime-$port.json" 2>"$ART/txtime-$port.err" &
	_TXTIME_RECV[$port]=$!
	_BG_PIDS+=("$!")
	busywait 10000 _listening "$port" >/dev/null ||
		fail "txtime.py recv did not start: $(cat "$ART/txtime-$port.err")"
}

# txtime_send PORT ARGS...: tools/txtime.py send from TXTIME_NS (default NS_S) to IP_R:PORT
# (ARGS: --gap-us G --count N --size S [--lead-ms L]); prints its JSON.
txtime_send() {
	local port=$1
	shift
	ip netns exec "${TXTIME_NS:-$NS_S}" "$PYTHON" "$TOOLS/txtime.py" send \
		--dst "$IP_R" --port "$port" "$@" || fail "txtime.py send failed"
}

# txtime_wait PORT: wait for the receiver; prints its JSON (one line).
txtime_wait() {
	_wait_pid "${_TXTIME_RECV[$1]}" && jq -e . "$ART/txtime-$1.json" >/dev/null 2>&1 ||
		{ cat "$ART/txtime-$1.err" >&2; fail "txtime.py recv on port $1 failed"; }
	jq -c . "$ART/txtime-$1.json"
}

# ---------------------------------------------------------------- checks

# assert_within NAME ACTUAL EXPECTED PCT: print
# "NAME: actual X expected Y (err Z%)" and fail unless |err| <= PCT.
assert_within() {
	_within "$@" || fail "$1 outside +-$4%"
}

# check_within NAME ACTUAL EXPECTED PCT: the same, as a soft failure.
check_within() {
	_within "$@" || check_fail "$1 outside +-$4%"
}

# rate_tol PCT LOST_NS WINDOW_S: PCT plus the share of WINDOW_S the
# catch-up cap took from the class (LOST_NS: the qdisc's catchup_lost_ns
# over the run, an upper bound of the window's), that share at most 5
# points.  A qdisc run later than the cap (16 ms) after a packet fell due
# loses the class the time past it, by design (sch_carousel.c,
# CAROUSEL_CATCHUP_NS): under TCG, when the guest stalls, a rate reads
# short by that time; a module that lost time by mistake must not excuse
# itself beyond 5 points.
rate_tol() {
	awk -v p="$1" -v l="$2" -v w="$3" 'BEGIN {
		x = l / (w * 1e9) * 100; if (x > 5) x = 5; printf "%.2f", p + x }'
}

# check_rate NAME ACTUAL EXPECTED PCT LOST_NS WINDOW_S: ACTUAL at most
# PCT above EXPECTED, and at most rate_tol below it (soft failures).
check_rate() {
	local tol

	tol=$(rate_tol "$4" "$5" "$6")
	echo "# $1: allowance below: $4% + the time lost to the catch-up cap ($5 ns over $6 s) = $tol%" >&2
	check_within "$1" "$2" "$3" "$tol"
	check_within "$1, upper side" \
		"$(awk -v b="$2" -v e="$3" 'BEGIN { print (b > e ? b : e) }')" "$3" "$4"
}

_within() {
	awk -v n="$1" -v a="$2" -v e="$3" -v p="$4" 'BEGIN {
		if (a !~ /^-?[0-9.eE+-]+$/ || e !~ /^-?[0-9.eE+-]+$/) {
			printf "%s: actual \"%s\" expected \"%s\": not numbers\n", n, a, e
			exit 1
		}
		err = (e == 0) ? (a == 0 ? 0 : 100) : (a - e) * 100 / e
		printf "%s: actual %s expected %s (err %.2f%%, limit %s%%)\n", n, a, e, err, p
		exit (err <= p && err >= -p) ? 0 : 1
	}' >&2
}

# assert_eq NAME ACTUAL EXPECTED: string equality.
# assert_ge NAME ACTUAL MIN: integer ACTUAL >= MIN.
# check_ge NAME ACTUAL MIN: the same as a soft failure (the test goes on).
assert_eq() {
	echo "$1: $2 (want $3)" >&2
	[ "$2" = "$3" ] || fail "$1 is $2, want $3"
}
assert_ge() {
	_ge "$@" || fail "$1 is $2, want >= $3"
}
check_ge() {
	_ge "$@" || check_fail "$1 is $2, want >= $3"
}
_ge() {
	echo "$1: $2 (want >= $3)" >&2
	[[ "$2" =~ ^-?[0-9]+$ ]] && [ "$2" -ge "$3" ]
}

# ---------------------------------------------------------------- cgroups

CG_TOOL=$REPO/tc/carousel-cgroup
CG_ROOT=			# the cgroup v2 mount (require_cgroup2)
CG_BASE=			# this test's cgroups go below it (cg_new)

# cg_tool ARGS...: carousel-cgroup in NS_S's network namespace, and only
# there (27 runs it under `ip netns exec` too, which remounts /sys).
cg_tool() { nsenter --net="/run/netns/$NS_S" "$CG_TOOL" "$@"; }

# require_cgroup2: fail unless carousel-cgroup is built; skip without a
# cgroup v2 mount; mount bpffs at /sys/fs/bpf if it is not (the tool does
# not use it; 27 plants things in it).  Sets CG_ROOT
# and CG_BASE (CG_ROOT/carousel-TEST-PID, removed at cleanup with the
# cgroups cg_new made in it).
require_cgroup2() {
	[ -x "$CG_TOOL" ] || fail "$CG_TOOL not built (make -C tc)"
	require_cmd nsenter bpftool
	CG_ROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	[ -n "$CG_ROOT" ] || skip "no cgroup v2 mount"
	if [ "$(stat -f -c %T /sys/fs/bpf 2>/dev/null)" != bpf_fs ]; then
		mount -t bpf bpf /sys/fs/bpf || skip "cannot mount bpffs"
	fi
	CG_BASE=$CG_ROOT/carousel-$TEST_NAME-$$
	mkdir "$CG_BASE" || fail "mkdir $CG_BASE"
	defer _cg_rmtree "$CG_BASE"
}

# _cg_rmtree DIR [V1ROOT]: kill what is left in the cgroups below DIR, or
# with V1ROOT (a v1 hierarchy's root) move it there, then remove the
# cgroups, deepest first.
_cg_rmtree() {
	local d p
	[ -d "$1" ] || return 0
	while IFS= read -r d; do
		while read -r p; do
			if [ -n "${2:-}" ]; then
				echo "$p" >"$2/cgroup.procs" 2>/dev/null
			else
				kill -9 "$p" 2>/dev/null
			fi
		done <"$d/cgroup.procs"
	done < <(find "$1" -depth -type d)
	while IFS= read -r d; do
		busywait 3000 rmdir "$d" >/dev/null 2>&1
	done < <(find "$1" -depth -type d)
}

# cg_new NAME: create the cgroup CG_BASE/NAME (NAME may nest: a/b); print it.
cg_new() {
	mkdir -p "$CG_BASE/$1" || fail "mkdir $CG_BASE/$1"
	echo "$CG_BASE/$1"
}

# cg_detach_quiet: carousel-cgroup detach DEV, silently, if still attached
# (for defer; the netns going away would drop the filter too).
cg_detach_quiet() { cg_tool detach "$DEV" >/dev/null 2>&1 || true; }

# cg_run CGDIR CMD...: run CMD (may start with ns_s / ns_r) in the cgroup
# CGDIR (v2, or a v1 hierarchy's dir: anything with a cgroup.procs), in the
# background (killed at cleanup); BG_PID is its pid.
cg_run() {
	local cg=$1
	shift
	# shellcheck disable=SC2016 # expanded by the inner bash
	bg env NS_S="$NS_S" NS_R="$NS_R" bash -c \
		'echo "$BASHPID" >"$1/cgroup.procs" || exit 125; shift
		case $1 in
		ns_s) shift; exec ip netns exec "$NS_S" "$@" ;;
		ns_r) shift; exec ip netns exec "$NS_R" "$@" ;;
		*) exec "$@" ;;
		esac' cg_run "$cg" "$@"
}

# iperf_start_cg CGDIR PORT T [CLIENT_ARGS...]: iperf_start, with the
# client started inside the cgroup CGDIR, so its sockets belong to it.
iperf_start_cg() {
	local cg=$1 port=$2 t=$3
	shift 3
	_iperf_server "$port"
	# shellcheck disable=SC2016 # expanded by the inner bash
	NS_S=$NS_S timeout $((t + IPERF_OMIT + 30)) bash -c \
		'echo "$BASHPID" >"$1/cgroup.procs" || exit 125; shift
		 exec ip netns exec "$NS_S" "$@"' iperf_start_cg "$cg" \
		iperf3 -c "$IP_R" -p "$port" -t "$t" -O "$IPERF_OMIT" -J "$@" \
		>"$ART/iperf-$port.json" 2>"$ART/iperf-$port.err" &
	_IPERF_CLIENT[$port]=$!
	_BG_PIDS+=("$!")
}

# class_stat DEV FIELD: "classid value" lines, one per class of DEV (in
# NS_S), FIELD of .stats (bytes, packets, drops ...).
class_stat() {
	tc_json -n "$NS_S" -s class show dev "$1" |
		jq -r --arg f "$2" '.[] | "\(.handle) \(.stats[$f] // 0)"'
}

# cg_udp_from CGDIR COUNT: COUNT 1000-byte datagrams to IP_R:7000 from a
# sender in CGDIR; prints "CLASSID DELTA_PACKETS" for each class of DEV.
cg_udp_from() {
	local before
	before=$(class_stat "$DEV" packets)
	cg_run "$1" ns_s "$PYTHON" "$TOOLS/udpsend.py" --dst "$IP_R" --port 7000 \
		--size 1000 --count "$2" --rate 1000000
	_wait_pid "$BG_PID" || fail "udpsend in $1"
	sleep 0.5	# let the last ones leave the wheel
	join <(echo "$before" | sort) <(class_stat "$DEV" packets | sort) |
		awk '{ print $1, $3 - $2 }'
}

# cg_delta DELTAS CLASSID: CLASSID's count in cg_udp_from's output.
cg_delta() { echo "$1" | awk -v c="$2" '$1 == c { print $2 }'; }

# cg_maps: how many maps named cgroup_class the kernel holds (ours, across
# every attach in this boot).
cg_maps() { bpftool -j map show | jq '[.[] | select(.name == "cgroup_class")] | length'; }

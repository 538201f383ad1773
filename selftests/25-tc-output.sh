#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# tier: main
#
# tc output, key by key.  Every qdisc and class option is set to a value
# that is not its default; known datagrams go through two classes and
# unclassified.  Then `tc -j -s qdisc show` (with the distro tc and with
# iproute2 6.15) and `tc -j -s class show` are parsed with python's json
# module (tools/check_tc_json.py): the set of keys is exactly the
# documented one, options equal what was configured and counters what was
# sent, while the wheel is busy and after it drained.  The text output shows
# every option and counter, times and rates in human units.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
quiet_link

tc_batch "qdisc add, class 1:10, class 1:20" <<EOF
qdisc add dev $DEV root handle 1: carousel rate 100mbit default 30 granularity 2us horizon 5s horizon_cap limit 500 flow_limit 200 flow_budget 3 flow_budget_time 500us flow_limit_time 300ms ce_threshold 2ms timer_slack 20us
class add dev $DEV parent 1: classid 1:10 carousel rate 200kbit burst 3000
class add dev $DEV parent 1: classid 1:20 carousel rate 20mbit
EOF

OPTS='"options.rate", "options.default", "options.granularity", "options.horizon",
	"options.horizon_drop", "options.limit", "options.flow_limit", "options.flow_budget",
	"options.flow_budget_time", "options.flow_limit_time", "options.ce_threshold",
	"options.timer_slack"'
XSTATS='"wheel_packets", "horizon_drops", "horizon_caps", "limit_drops",
	"flow_limit_drops", "filter_drops", "unclassified", "timer_arms", "timer_fires",
	"timer_latency_ns", "timer_latency_max_ns", "next_departure_ns", "cascades",
	"classes", "wheel_bytes", "wheel_levels", "flows", "ce_marks", "cn_returns",
	"alloc_drops", "catchup_holds", "flow_time_drops", "waiting_packets",
	"catchup_lost_ns"'
# tc's own keys (not ours; they differ between tc versions).
TC_ALLOW='"kind", "handle", "root", "parent", "refcnt", "bytes", "packets", "drops",
	"overlimits", "requeues", "backlog", "qlen", "ingress_block", "egress_block"'
CLASS_KEYS='"class", "handle", "rate", "burst", "stats.bytes",
	"stats.packets", "stats.drops", "stats.overlimits", "stats.requeues",
	"stats.backlog", "stats.qlen", "stats.lag_ns", "stats.effective_rate", "stats.flows",
	"stats.delay_mean_ns", "stats.delay_max_ns", "stats.delay_packets", "stats.delay_interval_ns"'
CLASS_ALLOW='"root", "parent", "leaf", "stats.rate", "stats.pps"'

# The version line of each tc, asked once.
declare -A TCV
for t in tc "$TC_NEW"; do
	TCV[$t]=$($t -V | head -1)
done

# The checks of check_tc_json.py are queued, and run_checks runs them all
# in one python3 (--batch; a start costs 1-3 s in a TCG guest).
CHECKS=()
# run_checks: the queued checks (output to stderr), check_fail for each that
# failed.
run_checks() {
	local failed m
	failed=$("$PYTHON" "$TOOLS/check_tc_json.py" --batch "${CHECKS[@]}") ||
		check_fail "check_tc_json.py did not run every check to its end"
	while IFS= read -r m; do
		[ -z "$m" ] || check_fail "$m"
	done <<<"$failed"
	CHECKS=()
}

# check_qdisc TC WANT_VALUES_JSON WANT_INTS_JSON HEADER: queue the check of
# TC's qdisc JSON (dumped now), printed under HEADER.
check_qdisc() {
	local n=${#CHECKS[@]}
	cat >"$TMPD/want-$n.json" <<-EOF
	{ "handle": "1:", "keys": [$OPTS, $XSTATS], "allow": [$TC_ALLOW],
	  "values": $2, "ints": $3 }
	EOF
	ns_s "$1" -j -s qdisc show dev "$DEV" >"$TMPD/q-$n.json" || fail "$1 -j -s qdisc show"
	CHECKS+=(qdisc "$TMPD/want-$n.json" "$TMPD/q-$n.json" "$4" "$1: qdisc JSON")
}

# check_class HANDLE WANT_VALUES_JSON CLASS_JSON_FILE: queue the check of
# class HANDLE in CLASS_JSON_FILE (tc_json -s class show).
check_class() {
	local n=${#CHECKS[@]}
	cat >"$TMPD/want-$n.json" <<-EOF
	{ "handle": "$1", "keys": [$CLASS_KEYS], "allow": [$CLASS_ALLOW],
	  "values": $2, "ints": ["stats.lag_ns", "stats.overlimits", "stats.requeues",
		"stats.delay_mean_ns", "stats.delay_max_ns", "stats.delay_packets"] }
	EOF
	CHECKS+=(class "$TMPD/want-$n.json" "$3" "" "class $1 JSON")
}

OPTVALS='"options.rate": 12500000, "options.default": 48, "options.granularity": 2000,
	"options.horizon": 5000000000, "options.horizon_drop": false, "options.limit": 500,
	"options.flow_limit": 200, "options.flow_budget": 3, "options.flow_budget_time": 500000,
	"options.flow_limit_time": 300000000,
	"options.ce_threshold": 2000000, "options.timer_slack": 20000, "classes": 2'
ALLINTS='["timer_arms", "timer_fires", "timer_latency_ns", "timer_latency_max_ns",
	"cascades", "wheel_bytes", "wheel_levels", "cn_returns", "next_departure_ns",
	"catchup_holds", "catchup_lost_ns",
	"overlimits", "requeues"]'

# 1. Idle, before any traffic: options, and every counter at 0.
for t in tc "$TC_NEW"; do
	check_qdisc "$t" "{ $OPTVALS, \"packets\": 0, \"bytes\": 0, \"drops\": 0, \"qlen\": 0,
		\"backlog\": 0, \"wheel_packets\": 0, \"flows\": 0, \"unclassified\": 0,
		\"ce_marks\": 0, \"alloc_drops\": 0, \"next_departure_ns\": 18446744073709551615 }" \
		"$ALLINTS" "# ${TCV[$t]}: idle"
done
run_checks

# 2. Busy: 60 datagrams into the 200 kbit class, all queued at once (a
# send buffer that holds them): 3.5 s of them in the wheel when the sender
# returns, within the 5 s horizon.
send() { ns_s "$PYTHON" "$TOOLS/udpsend.py" --dst "$IP_R" "$@" | jq .sent; }
a=$(send --port 7300 --size 1400 --count 60 --priority 0x10010 --sndbuf 4000000)
ns_s tc -j -s qdisc show dev "$DEV" >"$TMPD/busy.json"
tc_json -n "$NS_S" -s class show dev "$DEV" >"$TMPD/busyc.json"
cp "$TMPD/busy.json" "$TMPD/busyc.json" "$ART/"
jq -c '.[0] | {qlen, wheel_packets, flows, next_departure_ns}' "$TMPD/busy.json" | sed 's/^/# busy: /'
assert_eq "sent to 1:10" "$a" 60
q=$(jq '.[0].qlen' "$TMPD/busy.json")
assert_ge "qlen while busy" "$q" 1
# A saturated class keeps one packet charged in the wheel; the rest wait
# their turn out of it, counted in qlen.
wp=$(jq '.[0].wheel_packets' "$TMPD/busy.json")
assert_ge "wheel_packets while busy" "$wp" 1
# (and the packets a driver handed back, already counted sent, in the
# requeue list: counted in qlen too)
echo "qlen = wheel_packets + waiting_packets (+ requeued): $(jq -c '.[0] | {qlen, wheel_packets,
	waiting_packets, requeues}' "$TMPD/busy.json")" >&2
backlog_ok "$q" "$((wp + $(jq '.[0].waiting_packets' "$TMPD/busy.json")))" \
	"$(jq '.[0].requeues' "$TMPD/busy.json")"
assert_eq "flows while busy (one socket)" "$(jq '.[0].flows' "$TMPD/busy.json")" 1
assert_eq "class 1:10 flows while busy" \
	"$(jq '.[] | select(.handle == "1:10") | .stats.flows' "$TMPD/busyc.json")" 1
assert_ge "class 1:10 lag_ns while busy" \
	"$(jq '.[] | select(.handle == "1:10") | .stats.lag_ns' "$TMPD/busyc.json")" 1
nd=$(jq '.[0].next_departure_ns' "$TMPD/busy.json")
assert_ge "next_departure_ns while busy is at most 1 packet at 200 kbit away" \
	$((57680000 + 20000 - nd)) 0

b=$(send --port 7301 --size 1000 --count 50 --priority 0x10020)
c=$(send --port 7302 --size 500 --count 20)
assert_eq "sent to 1:20" "$b" 50
assert_eq "sent unclassified" "$c" 20
drained() { [ "$(qjq "$DEV" '.[0].qlen')" = 0 ]; }
busywait 30000 drained >/dev/null || fail "the wheel did not drain"

# 3. Drained: every counter equals what was sent (L2 lengths: payload + 42).
B10=$((60 * 1442)) B20=$((50 * 1042)) BU=$((20 * 542))
for t in tc "$TC_NEW"; do
	check_qdisc "$t" "{ $OPTVALS, \"packets\": 130, \"bytes\": $((B10 + B20 + BU)),
		\"drops\": 0, \"qlen\": 0, \"backlog\": 0, \"wheel_packets\": 0, \"flows\": 0,
		\"unclassified\": 20, \"horizon_drops\": 0, \"horizon_caps\": 0,
		\"limit_drops\": 0, \"flow_limit_drops\": 0, \"filter_drops\": 0,
		\"flow_time_drops\": 0, \"waiting_packets\": 0, \"ce_marks\": 0, \"alloc_drops\": 0,
		\"next_departure_ns\": 18446744073709551615 }" \
		"$ALLINTS" "# ${TCV[$t]}: drained"
done
# (one class dump for both: drained, nothing changes between them)
tc_json -n "$NS_S" -s class show dev "$DEV" >"$TMPD/c.json" || fail "class show"
check_class 1:10 "{ \"rate\": 25000, \"burst\": 3000, \"stats.packets\": 60,
	\"stats.bytes\": $B10, \"stats.drops\": 0, \"stats.qlen\": 0, \"stats.backlog\": 0,
	\"stats.effective_rate\": 25000, \"stats.flows\": 0, \"class\": \"carousel\",
	\"stats.delay_interval_ns\": 1073741824 }" "$TMPD/c.json"
check_class 1:20 "{ \"rate\": 2500000, \"burst\": 0, \"stats.packets\": 50,
	\"stats.bytes\": $B20, \"stats.drops\": 0, \"stats.qlen\": 0, \"stats.backlog\": 0,
	\"stats.lag_ns\": 0, \"stats.effective_rate\": 2500000, \"stats.flows\": 0, \"class\": \"carousel\" }" \
	"$TMPD/c.json"
run_checks

# 4. Text: every option and counter, in human units.
for t in tc "$TC_NEW"; do
	out=$(ns_s "$t" -s qdisc show dev "$DEV")
	read -ra v <<<"${TCV[$t]}"
	echo "$out" | sed "s/^/# ${v[-1]}: /"
	for want in "rate 100Mbit" "default 0x30" "granularity 2us" "horizon 5s" "horizon_cap" \
		"limit 500p" "flow_limit 200p" "flow_budget 3p" "flow_budget_time 500us" \
		"flow_limit_time 300ms" "ce_threshold 2ms" "timer_slack 20us" "wheel_packets 0" "classes 2" "levels " \
		"wheel_bytes " "flows 0" "drops: horizon 0 limit 0 flow_limit 0 flow_time 0 filter 0 alloc 0" \
		"horizon_caps 0 unclassified 20" "congestion: ce_marks 0 cn_returns " \
		"timer: arms " " fires " " latency avg " " max " " catchup_lost " "next_departure none" "cascades "; do
		grep -qF -- "$want" <<<"$out" || check_fail "$t qdisc text lacks \"$want\""
	done
	out=$(ns_s "$t" -s class show dev "$DEV")
	for want in "class carousel 1:10 root rate 200Kbit burst 3000b" "effective_rate 200Kbit" \
		"class carousel 1:20 root rate 20Mbit" "effective_rate 20Mbit" "lag 0ns" \
		" flows 0" "  delay mean " " packets " " in the last 1.07s"; do
		grep -qF -- "$want" <<<"$out" || check_fail "$t class text lacks \"$want\": $out"
	done
done

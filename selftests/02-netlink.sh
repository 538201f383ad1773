#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# tier: compat
# compat: CAROUSEL_HAVE_CONST_RANGE: the policy ranges and the netlink core's extack
#
# The tc interface: every qdisc and class option set and read back (JSON,
# with both the distro tc and iproute2 6.15), live change, xstats, the
# wheel's memory at defaults, and every bad value refused with a message
# that names it and with nothing changed.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair

opts() { qjq "$DEV" '.[0].options | tojson'; }
classes() { tc_json -n "$NS_S" class show dev "$DEV" | jq -c '[.[] | {handle, rate, burst}]'; }

ns_s tc qdisc add dev "$DEV" root handle 1: carousel || fail "add with defaults"
# One dump for all the defaults and xstats: each tc run costs about 0.4 s
# in a TCG guest.
J=$(qdisc_json "$DEV") || fail "qdisc show"
j() { jq -r ".[0]$1" <<<"$J"; }
assert_eq "kind" "$(j .kind)" carousel
assert_eq "default limit" "$(j .options.limit)" 10000
assert_eq "default flow_limit" "$(j .options.flow_limit)" 100
assert_eq "default horizon (ns)" "$(j .options.horizon)" 10000000000
assert_eq "default horizon_drop" "$(j .options.horizon_drop)" true
assert_eq "default timer_slack (ns)" "$(j .options.timer_slack)" 10000
assert_eq "default flow_budget (packets)" "$(j .options.flow_budget)" 2
assert_eq "default flow_budget_time (ns)" "$(j .options.flow_budget_time)" 60000000
assert_eq "default flow_limit_time (ns)" "$(j .options.flow_limit_time)" 1000000000
assert_eq "default ce_threshold (ns, 0 = off)" "$(j .options.ce_threshold)" 0
gran=$(j .options.granularity)
[ "$gran" -le 2000 ] || fail "default granularity $gran ns is coarser than 2us"
bytes=$(j .wheel_bytes)
echo "# wheel at defaults: $bytes bytes, $(j .wheel_levels) levels, granularity ${gran}ns"
[ "$bytes" -gt 0 ] && [ "$bytes" -le $((256 * 1024)) ] || fail "wheel_bytes $bytes not in (0, 256KiB]"
missing=$(jq -r '.[0] as $q | $ARGS.positional[] | . as $k | select($q | has($k) | not)' --args \
	wheel_packets horizon_drops horizon_caps limit_drops flow_limit_drops \
	filter_drops unclassified timer_arms timer_fires timer_latency_ns \
	timer_latency_max_ns cascades classes wheel_bytes wheel_levels \
	flows ce_marks cn_returns alloc_drops catchup_holds flow_time_drops \
	waiting_packets catchup_lost_ns <<<"$J") || fail "jq on the qdisc's JSON"
[ -z "$missing" ] || fail "xstats missing from tc -j: $(paste -sd' ' <<<"$missing")"

ns_s tc qdisc change dev "$DEV" root carousel rate 100mbit default 10 granularity 2us \
	horizon 5s horizon_cap limit 500 flow_limit 50 timer_slack 20us \
	flow_budget 4 flow_budget_time 500us flow_limit_time 2s ce_threshold 2ms ||
	fail "change all"
want='{"rate":12500000,"default":16,"granularity":2000,"horizon":5000000000,"horizon_drop":false,"limit":500,"flow_limit":50,"flow_budget":4,"flow_budget_time":500000,"flow_limit_time":2000000000,"ce_threshold":2000000,"timer_slack":20000}'
assert_eq "options after change" "$(opts)" "$want"

ns_s tc class add dev "$DEV" parent 1: classid 1:10 carousel rate 10mbit burst 3000 || fail "class add"
ns_s tc class add dev "$DEV" parent 1: classid 1:20 carousel rate 400gbit || fail "class add 400gbit"
ns_s tc class change dev "$DEV" classid 1:10 carousel rate 20mbit || fail "class change"
assert_eq "classes" "$(classes)" \
	'[{"handle":"1:10","rate":2500000,"burst":3000},{"handle":"1:20","rate":50000000000,"burst":0}]'
assert_eq "xstat classes" "$(qjq "$DEV" '.[0].classes')" 2

# Both tc versions load the plugin and print the same options.
for t in tc "$TC_NEW"; do
	out=$(ns_s "$t" qdisc show dev "$DEV") || fail "$t qdisc show"
	echo "# $($t -V | head -1): $out"
	grep -q "carousel 1: root .*rate 100Mbit.*granularity 2us horizon 5s horizon_cap limit 500p flow_limit 50p flow_budget 4p flow_budget_time 500us flow_limit_time 2s ce_threshold 2ms timer_slack 20us" \
		<<<"$out" || fail "$t prints: $out"
	ns_s "$t" -s class show dev "$DEV" | grep -q "class carousel 1:10 root rate 20Mbit burst 3000b" ||
		fail "$t class show"
done

# Bad input: a non-zero exit, a message naming the problem, nothing changed.
# state: the device's qdiscs with their options, and the classes, from one
# tc run (-batch): a bad command must change none of them.
state() {
	printf 'qdisc show dev %s\nclass show dev %s\n' "$DEV" "$DEV" |
		ns_s "${TC_NEW:-tc}" -j -batch - |
		jq -c -s '{qdiscs: [.[0][] | {kind, handle, parent, options}],
			   classes: [.[1][] | {handle, rate, burst}]}'
}
before=$(state)
assert_eq "state: the root's options, the classes" \
	"$(jq -c '[(.qdiscs[] | select(.handle == "1:") | .options), .classes]' <<<"$before")" \
	"[$(opts),$(classes)]"
bad() {
	local want=$1 out
	shift
	if out=$(ns_s tc "$@" 2>&1); then
		check_fail "accepted: tc $*"
		return
	fi
	echo "# tc $* -> $(tr '\n' ' ' <<<"$out")"
	grep -qi -- "$want" <<<"$out" || check_fail "tc $*: message lacks \"$want\": $out"
	[ "$(state)" = "$before" ] || check_fail "tc $*: state changed: $(state)"
}
bad "granularity must be"	qdisc change dev "$DEV" root carousel granularity 0
bad "granularity must be"	qdisc change dev "$DEV" root carousel granularity 2s
bad "horizon must not be shorter than granularity" \
				qdisc change dev "$DEV" root carousel granularity 100us horizon 50us
bad "wheel levels"		qdisc change dev "$DEV" root carousel granularity 1ns horizon 4000s
bad "limit must be"		qdisc change dev "$DEV" root carousel limit 0
bad "flow_limit must be"	qdisc change dev "$DEV" root carousel flow_limit 0
bad "flow_limit must be"	qdisc change dev "$DEV" root carousel flow_limit 70000
bad "timer_slack must be"	qdisc change dev "$DEV" root carousel timer_slack 2s
bad "rate must be"		qdisc change dev "$DEV" root carousel rate 10tbit
bad "default must be"		qdisc change dev "$DEV" root carousel default 10000
bad "flow_budget must be"	qdisc change dev "$DEV" root carousel flow_budget 65536
bad "flow_budget_time must be"	qdisc change dev "$DEV" root carousel flow_budget_time 2s
bad "flow_limit_time must be"	qdisc change dev "$DEV" root carousel flow_limit_time 4100ms
bad "ce_threshold must be"	qdisc change dev "$DEV" root carousel ce_threshold 1001ms
bad "Illegal \"ce_threshold\""	qdisc change dev "$DEV" root carousel ce_threshold -1ms
# One bad value among good ones: nothing of the good ones applied either.
bad "flow_limit must be"	qdisc change dev "$DEV" root carousel limit 7 flow_limit 0
bad "unknown parameter"		qdisc change dev "$DEV" root carousel bogus 1
bad "needs a rate"		class add dev "$DEV" parent 1: classid 1:30 carousel burst 100
bad "rate"			class add dev "$DEV" parent 1: classid 1:30 carousel rate 0
bad "rate must be"		class change dev "$DEV" classid 1:10 carousel rate 10tbit
bad "exists"			class add dev "$DEV" parent 1: classid 1:10 carousel rate 1mbit
bad "no such\|not found\|No such file" class del dev "$DEV" classid 1:99
bad "no child qdisc"		qdisc add dev "$DEV" parent 1:10 handle 2: pfifo
bad "filters attach to the qdisc" filter add dev "$DEV" parent 1:10 protocol ip prio 1 matchall classid 1:10

# A class a filter points at cannot go; once the filter is gone it can.
ns_s tc filter add dev "$DEV" parent 1: protocol ip prio 1 matchall classid 1:20 || fail "filter add"
bad "in use by a filter"	class del dev "$DEV" classid 1:20
ns_s tc filter del dev "$DEV" parent 1: prio 1 || fail "filter del"
ns_s tc class del dev "$DEV" classid 1:20 || fail "class del after filter del"
ns_s tc class del dev "$DEV" classid 1:10 || fail "class del"
assert_eq "classes left" "$(tc_json -n "$NS_S" class show dev "$DEV" | jq length)" 0

ns_s tc qdisc del dev "$DEV" root || fail "qdisc del"

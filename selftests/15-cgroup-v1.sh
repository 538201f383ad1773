#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 150
# tier: compat
# compat: cgroup v1 net_cls: the classid the kernel puts on the socket, cls_cgroup
#
# cgroup v1 net_cls with tc's cgroup classifier (no BPF): a net_cls
# hierarchy mounted next to the v2 one, two cgroups with net_cls.classid
# 1:10 and 1:20, classes of 10 and 20 Mbit, an iperf3 client in each, at
# once: each class's rate within 1% over a 5 s window while both send
# (class byte counters, read next to their clock by tools/qstat.py, as
# in 13), each iperf3 goodput within 3%.  iperf3's receiver-side figure
# is timed by processes that share two vCPUs with three others: in one
# CI run 1:20 read -1.43% there.
source "$(dirname "$0")/lib.sh"
require_carousel
require_module cls_cgroup
setup_pair
T=14

V1=$TMPD/net_cls
mkdir -p "$V1" || fail "mkdir $V1"
mount -t cgroup -o net_cls none "$V1" || skip "cannot mount a cgroup v1 net_cls hierarchy"
defer umount "$V1"
for minor in 10 20; do
	mkdir "$V1/carousel-$minor-$$" || fail "mkdir net_cls cgroup"
	defer rmdir "$V1/carousel-$minor-$$"
	echo 0x100$minor >"$V1/carousel-$minor-$$/net_cls.classid" || fail "net_cls.classid"
done
defer _cg_rmtree_v1

# shellcheck disable=SC2317 # called at cleanup
_cg_rmtree_v1() {
	local d p
	for d in "$V1/carousel-"*"-$$"; do
		while read -r p; do echo "$p" >"$V1/cgroup.procs"; done <"$d/cgroup.procs"
	done
}

ns_s tc qdisc add dev "$DEV" root handle 1: carousel default 99 || fail "qdisc add"
for minor in 10 20; do
	ns_s tc class add dev "$DEV" parent 1: classid "1:$minor" carousel rate "${minor}mbit" ||
		fail "class 1:$minor"
done
ns_s tc class add dev "$DEV" parent 1: classid 1:99 carousel rate 2mbit || fail "class 1:99"
ns_s tc filter add dev "$DEV" parent 1: protocol ip prio 10 handle 1: cgroup || fail "cgroup filter"

IPERF_OMIT=2
rates_start_busy 5 1:10,1:20
for minor in 10 20; do
	iperf_start_cg "$V1/carousel-$minor-$$" $((5200 + minor)) "$T"
done
rates_wait
jq -e '.idle_at_end == []' <<<"$RATES" >/dev/null ||
	fail "the window ran past a client: $(jq -c . <<<"$RATES")"
echo "# window of $(jq .seconds <<<"$RATES") s, opened $(jq .busy_s <<<"$RATES") s after qstat.py began waiting for both backlogs: $(jq -c .bps <<<"$RATES")"
iperf_wait
lost=$(jq .catchup_lost_ns <<<"$RATES")
for minor in 10 20; do
	port=$((5200 + minor))
	echo "# retransmits of net_cls 0x100$minor: $(jq .end.sum_sent.retransmits "$(iperf_json $port)")"
	check_rate "rate of class 1:$minor, both at once" \
		"$(jq --arg c 1:$minor '.bps[$c]' <<<"$RATES")" $((minor * 1000000)) 1 \
		"$lost" "$(jq .seconds <<<"$RATES")"
	check_within "goodput of net_cls 0x100$minor (1:$minor)" "$(iperf_bps $port)" \
		"$(tcp_goodput_expected $((minor * 1000000)) 1500)" 3
done
assert_eq "drops" "$(qjq "$DEV" '.[0].drops')" 0
b99=$(class_stat "$DEV" bytes | awk '$1 == "1:99" { print $2 }')
assert_eq "default class nearly idle (only ARP and the like)" "$(( ${b99:-0} < 20000 ))" 1
exit 0

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The demo, inside the VM (scripts/demo/demo.sh boots it): three tenants, each a
# cgroup v2 mapped to a carousel class by carousel-cgroup, send TCP
# (iperf3) as fast as they can through one device.  Live rates are printed
# every 2 s, first with each tenant at its own rate, then with a 20 Mbit
# device ceiling set live, which shares the device in proportion to the
# rates.  Ends with carousel-cgroup list and tc -s.
source "$(dirname "$0")/../../selftests/lib.sh"
require_carousel
setup_pair
require_cgroup2

TENANTS=(10:5 20:10 30:20)		# minor:Mbit
ns_s tc qdisc add dev "$DEV" root handle 1: carousel default 99 || fail "qdisc add"
ns_s tc class add dev "$DEV" parent 1: classid 1:99 carousel rate 1mbit || fail "default class"
cg_tool attach "$DEV" || fail "carousel-cgroup attach"
defer cg_detach_quiet
declare -A CG=()
for t in "${TENANTS[@]}"; do
	m=${t%%:*}
	ns_s tc class add dev "$DEV" parent 1: classid "1:$m" carousel rate "${t##*:}mbit" || fail "class"
	CG[$m]=$(cg_new "tenant-$m")
	cg_tool set "$DEV" "${CG[$m]}" "1:$m" || fail "carousel-cgroup set"
done
printf '\n$ carousel-cgroup list %s\n' "$DEV"
cg_tool list "$DEV"

# sample: "<time in us> <bytes of each class>", the time taken at the middle
# of the tc call (which itself takes a good part of a second in the VM).
sample() {
	local a b
	a=${EPOCHREALTIME/./}
	b=$(tc_json -n "$NS_S" -s class show dev "$DEV" | jq -r '[.[] | select(.handle != "1:99") | .stats.bytes] | @tsv')
	echo "$(( (a + ${EPOCHREALTIME/./}) / 2 )) $b"
}

# watch N TITLE: print each class's wire rate N times, every 2 s.
watch() {
	local s prev now i
	printf '\n%s\n' "$2"
	printf '%6s' "t"
	for t in "${TENANTS[@]}"; do printf '   tenant-%-2s 1:%-2s(%s)' "${t%%:*}" "${t%%:*}" "$(want "$t")"; done
	printf '\n'
	read -ra prev <<<"$(sample)"
	for ((s = 1; s <= $1; s++)); do
		sleep 2
		read -ra now <<<"$(sample)"
		printf '%5ds' $((2 * s))
		for ((i = 1; i < ${#now[@]}; i++)); do
			printf '   %12.2f Mbit   ' "$(awk -v b=$((now[i] - prev[i])) -v us=$((now[0] - prev[0])) 'BEGIN { print b * 8 / us }')"
		done
		printf '\n'
		prev=("${now[@]}")
	done
}
CEIL=0
want() {
	local m=${1##*:} sum=0 t
	for t in "${TENANTS[@]}"; do sum=$((sum + ${t##*:})); done
	if [ "$CEIL" -gt 0 ] && [ "$sum" -gt "$CEIL" ]; then
		awk -v m="$m" -v c="$CEIL" -v s="$sum" 'BEGIN { printf "%.2f", m * c / s }'
	else
		echo "$m"
	fi
}

IPERF_OMIT=0
for t in "${TENANTS[@]}"; do iperf_start_cg "${CG[${t%%:*}]}" $((5500 + ${t%%:*})) 45; done
sleep 2
watch 5 "== each tenant at its own rate (wire Mbit/s; configured in brackets) =="
CEIL=20
ns_s tc qdisc change dev "$DEV" root carousel rate 20mbit || fail "ceiling"
sleep 1
watch 5 "== tc qdisc change ... rate 20mbit: 35 Mbit asked of 20, shared by rate =="
printf '\n== tc -s qdisc show dev %s ==\n' "$DEV"
ns_s tc -s qdisc show dev "$DEV"
printf '\n== tc -s class show dev %s ==\n' "$DEV"
ns_s tc -s class show dev "$DEV"
printf '\n$ carousel-cgroup detach %s\n' "$DEV"
cg_tool detach "$DEV" || fail "carousel-cgroup detach"

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 90
# tier: main
#
# No periodic polling.  An idle qdisc arms no timer at all; a datagram
# stamped (SO_TXTIME) 3 s ahead is waited for with at most two watchdog
# arms (its own tick, then its time within it if the first fires early),
# not a tick every slot nor one per wheel level it cascades through
# (carousel_slot_wake()), and still does not leave early.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
quiet_link

ns_s tc qdisc add dev "$DEV" root handle 1: carousel || fail "qdisc add"
ping_ok 3 || fail "ping"
arms0=$(qjq "$DEV" '.[0].timer_arms')
sleep 2
assert_eq "timer arms while idle for 2 s" "$(qjq "$DEV" '.[0].timer_arms')" "$arms0"

levels=$(qjq "$DEV" '.[0].wheel_levels')
# 3 s ahead; further under check-debug, where reading it back through tc
# can take longer than that (WAIT_SCALE), but inside the 10 s horizon.
lead=$(( WAIT_SCALE < 3 ? 3 * WAIT_SCALE : 9 ))
# The receiver's timeout runs from its own start, before the sender's
# python3 starts (seen to take over 5 s in a busy TCG guest): it only
# bounds the wait for a packet that never comes, so give it a minute.
txtime_recv 6200 1 $((lead + 60 * WAIT_SCALE))
txtime_send 6200 --gap-us 1000 --count 1 --size 200 --lead-ms $((lead * 1000)) >/dev/null
sleep 1
nd=$(qjq "$DEV" '.[0].next_departure_ns')
echo "# next_departure while waiting: ${nd}ns"
# Pending, due within its stamp, and not yet due.
[[ $nd =~ ^[0-9]{1,18}$ ]] && [ "$nd" -gt 100000000 ] && [ "$nd" -lt $((lead * 1000000000)) ] ||
	fail "next_departure_ns $nd, want (0.1 s, $lead s)"
r=$(txtime_wait 6200)
echo "# $r"
[ "$(jq .received <<<"$r")" = 1 ] ||
	echo "# qdisc after the wait: $(qdisc_json "$DEV" | jq -c '.[0] | {packets, wheel_packets,
		timer_arms, timer_fires, next_departure_ns, drops}')"
assert_eq "received" "$(jq .received <<<"$r")" 1
assert_eq "early" "$(jq .early <<<"$r")" 0
arms=$(( $(qjq "$DEV" '.[0].timer_arms') - arms0 ))
echo "# timer arms for one packet $lead s ahead: $arms (wheel levels: $levels)"
[ "$arms" -ge 1 ] && [ "$arms" -le 2 ] ||
	fail "$arms timer arms to wait $lead s, want 1..2"

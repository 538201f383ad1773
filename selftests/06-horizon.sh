#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# tier: rest
#
# Horizon.  Datagrams stamped (SO_TXTIME) 3 s ahead against a 1 s horizon
# are all dropped and counted with horizon_drop, and all capped, counted,
# and delivered about 1 s after sending with horizon_cap.  Datagrams
# stamped 1 s in the past leave at once.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
quiet_link
N=20

ns_s tc qdisc add dev "$DEV" root handle 1: carousel horizon 1s horizon_drop || fail "qdisc add"
txtime_recv 6100 $N 5
txtime_send 6100 --gap-us 1000 --count $N --size 200 --lead-ms 3000 >/dev/null
r=$(txtime_wait 6100)
echo "# drop: $r"
assert_eq "received with horizon_drop" "$(jq .received <<<"$r")" 0
assert_eq "horizon_drops" "$(qjq "$DEV" '.[0].horizon_drops')" $N
assert_eq "qdisc drops" "$(qjq "$DEV" '.[0].drops')" $N
assert_eq "horizon_caps" "$(qjq "$DEV" '.[0].horizon_caps')" 0

ns_s tc qdisc change dev "$DEV" root carousel horizon_cap || fail "change to horizon_cap"
txtime_recv 6101 $N 10
txtime_send 6101 --gap-us 1000 --count $N --size 200 --lead-ms 3000 >/dev/null
r=$(txtime_wait 6101)
echo "# cap: $r"
assert_eq "received with horizon_cap" "$(jq .received <<<"$r")" $N
assert_eq "horizon_caps" "$(qjq "$DEV" '.[0].horizon_caps')" $N
assert_eq "horizon_drops unchanged" "$(qjq "$DEV" '.[0].horizon_drops')" $N
# Capped to now + 1 s: they arrive about 2 s before their txtime.
slack=$(jq .max_slack_ns <<<"$r")
[ "$slack" -lt -1500000000 ] && [ "$slack" -gt -2500000000 ] ||
	fail "capped packets arrived $slack ns from their txtime, want about -2s"

# Stamps 1 s in the past: due, they leave at once.
txtime_recv 6102 $N 10
txtime_send 6102 --gap-us 1000 --count $N --size 200 --lead-ms -1000 >/dev/null
r=$(txtime_wait 6102)
echo "# past: $r"
assert_eq "received past" "$(jq .received <<<"$r")" $N
slack=$(jq .max_slack_ns <<<"$r")
[ "$slack" -lt 1200000000 ] || fail "past-stamped packets waited: slack $slack ns"

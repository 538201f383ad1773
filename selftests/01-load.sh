#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# 01-load: sch_carousel (loaded by run.sh) attaches as a root qdisc with no
# options, shows up as kind carousel, forwards pings (counted in its sent
# counters), detaches, survives add/delete cycles and a netns teardown with
# the qdisc attached, and gives back every module reference.
# timeout: 180
# tier: compat
# compat: module load and unload, netns teardown with the qdisc attached
source "$(dirname "$0")/lib.sh"

require_carousel
setup_pair

refcnt_is() { [ "$(mod_refcnt sch_carousel)" = "$1" ]; }

assert_eq "module refcnt before" "$(mod_refcnt sch_carousel)" 0

log "add"
ns_s tc qdisc add dev "$DEV" root handle 1: carousel || fail "tc qdisc add ... carousel"
assert_eq "kind" "$(qjq "$DEV" '.[0].kind')" carousel
assert_eq "handle" "$(qjq "$DEV" '.[0].handle')" "1:"
assert_eq "module refcnt with one instance" "$(mod_refcnt sch_carousel)" 1
ns_s tc qdisc show dev "$DEV" >&2

log "ping through it"
p0=$(qjq "$DEV" '.[0].packets')
b0=$(qjq "$DEV" '.[0].bytes')
ping_ok 5 || fail "ping through carousel"
p1=$(qjq "$DEV" '.[0].packets')
b1=$(qjq "$DEV" '.[0].bytes')
# 5 echo requests of 98 B (84 B IP + 14 B Ethernet), and maybe an ARP.
assert_ge "packets sent" "$((p1 - p0))" 5
assert_ge "bytes sent" "$((b1 - b0))" $((5 * 98))
assert_eq "drops" "$(qjq "$DEV" '.[0].drops')" 0
assert_eq "backlog after ping" "$(qjq "$DEV" '.[0].qlen')" 0
ns_s tc -s qdisc show dev "$DEV" >&2

log "delete"
ns_s tc qdisc del dev "$DEV" root || fail "tc qdisc del"
[ "$(qjq "$DEV" '.[0].kind')" != carousel ] || fail "carousel still attached after del"
busywait 5000 refcnt_is 0 || fail "module refcnt $(mod_refcnt sch_carousel) after del, want 0"
ping_ok 2 || fail "ping after del"

log "add/delete cycles"
for i in 1 2 3 4 5; do
	ns_s tc qdisc add dev "$DEV" root handle "$i": carousel || fail "add #$i"
	assert_eq "kind #$i" "$(qjq "$DEV" '.[0].kind')" carousel
	ping_ok 1 || fail "ping #$i"
	ns_s tc qdisc del dev "$DEV" root || fail "del #$i"
done
ns_s tc qdisc replace dev "$DEV" root handle 1: carousel || fail "replace (create)"
ns_s tc qdisc replace dev "$DEV" root handle 1: carousel || fail "replace (same)"
assert_eq "kind after replace" "$(qjq "$DEV" '.[0].kind')" carousel
ns_s tc qdisc del dev "$DEV" root || fail "del after replace"
busywait 5000 refcnt_is 0 || fail "module refcnt $(mod_refcnt sch_carousel) after cycles, want 0"

log "two instances, then a netns torn down with carousel attached"
ns_s tc qdisc add dev "$DEV" root handle 1: carousel || fail "add on $DEV_S"
TC_NS=$NS_R
ns_r tc qdisc add dev "$DEV_R" root handle 1: carousel || fail "add on $DEV_R"
assert_eq "kind on $DEV_R" "$(qjq "$DEV_R" '.[0].kind')" carousel
TC_NS=
assert_eq "module refcnt with two instances" "$(mod_refcnt sch_carousel)" 2
ping_ok 3 || fail "ping with carousel on both ends"
# Deleting the netns unregisters the veth pair: both instances go with it.
ip netns del "$NS_R"
ip netns del "$NS_S"
NS_S= NS_R=
busywait 20000 refcnt_is 0 || fail "module refcnt $(mod_refcnt sch_carousel) after netns teardown, want 0"
assert_eq "module refcnt at end" "$(mod_refcnt sch_carousel)" 0

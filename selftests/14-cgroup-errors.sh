#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 200
# tier: rest
#
# carousel-cgroup's errors: a path that is not a cgroup (v2), a classid
# with no such class, a device without a carousel root qdisc, and commands
# out of order.  Each prints one line on stderr, nothing on stdout, exits
# non-zero, and leaves the state (tc filters, our maps and programs, the
# map's entries) as it was.  27 has the errors that issue 20 found.
source "$(dirname "$0")/lib.sh"
require_carousel
require_cgroup2
setup_pair

# state: what an error must not change.
state() {
	ns_s tc filter show dev "$DEV" 2>&1
	cg_maps
	cg_tool list "$DEV" 2>&1
	bpftool prog show | grep -c carousel_cgroup
}

# must_fail WHAT CMD...: CMD fails with one line on stderr, no stdout, and
# the state unchanged.
must_fail() {
	local what=$1 rc=0 before
	shift
	before=$(state)
	"$@" >"$TMPD/out" 2>"$TMPD/err" || rc=$?
	echo "# $what: exit $rc: $(cat "$TMPD/err")"
	[ "$rc" != 0 ] || check_fail "$what: exit 0"
	[ "$(wc -l <"$TMPD/err")" = 1 ] || check_fail "$what: want one line on stderr, got: $(cat "$TMPD/err")"
	grep -q '^carousel-cgroup: ' "$TMPD/err" || check_fail "$what: stderr does not name the tool"
	[ ! -s "$TMPD/out" ] || check_fail "$what: stdout: $(cat "$TMPD/out")"
	[ "$(state)" = "$before" ] || check_fail "$what: state changed: $(diff <(echo "$before") <(state))"
}

cg=$(cg_new tenant-a)
rc=0
cg_tool frobnicate "$DEV" 2>/dev/null || rc=$?
assert_eq "usage error: exit" "$rc" 2
must_fail "no such device" cg_tool attach nosuchdev0
must_fail "no root qdisc" cg_tool attach "$DEV"
ns_s tc qdisc add dev "$DEV" root handle 1: fq || fail "fq root"
must_fail "fq root, not carousel" cg_tool attach "$DEV"
ns_s tc qdisc del dev "$DEV" root || fail "fq del"

ns_s tc qdisc add dev "$DEV" root handle 1: carousel default 99 || fail "qdisc add"
ns_s tc class add dev "$DEV" parent 1: classid 1:10 carousel rate 10mbit || fail "class add"
must_fail "set before attach" cg_tool set "$DEV" "$cg" 1:10
must_fail "list before attach" cg_tool list "$DEV"
must_fail "del before attach" cg_tool del "$DEV" "$cg"
must_fail "detach before attach" cg_tool detach "$DEV"

cg_tool attach "$DEV" || fail "attach"
defer cg_detach_quiet
cg_tool set "$DEV" "$cg" 1:10 || fail "set"
must_fail "attach twice" cg_tool attach "$DEV"
must_fail "not a cgroup (a plain dir)" cg_tool set "$DEV" "$TMPD" 1:10
must_fail "not a cgroup (a file)" cg_tool set "$DEV" "$cg/cgroup.procs" 1:10
must_fail "no such path" cg_tool set "$DEV" "$CG_BASE/nosuch" 1:10
must_fail "no such class" cg_tool set "$DEV" "$cg" 1:77
must_fail "other qdisc's major" cg_tool set "$DEV" "$cg" 2:10
must_fail "bad classid" cg_tool set "$DEV" "$cg" ten
must_fail "del of an unmapped cgroup" cg_tool del "$DEV" "$CG_BASE"
must_fail "del of a non-cgroup" cg_tool del "$DEV" "$TMPD"
assert_eq "list after the errors" "$(cg_tool list "$DEV" | grep -v '^#' | awk '{ print $1, $3, $4 }')" "$cg 1:10 10Mbit"
# A class deleted under a mapping: list says so, and it still works.
ns_s tc class add dev "$DEV" parent 1: classid 1:20 carousel rate 20mbit || fail "class 1:20"
cg_tool set "$DEV" "$(cg_new tenant-b)" 1:20 || fail "set 1:20"
ns_s tc class del dev "$DEV" classid 1:20 || fail "class del 1:20"
cg_tool list "$DEV" | grep -q "/tenant-b [0-9]* 1:20 no-such-class$" || fail "list with a deleted class: $(cg_tool list "$DEV")"
cg_tool detach "$DEV" || fail "detach"
must_fail "detach twice" cg_tool detach "$DEV"
exit 0

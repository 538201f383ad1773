#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 300
# tier: rest
#
# Tens of thousands of classes.  10000 classes go in with one tc -batch;
# the kernel memory they take (objects of kmalloc-192, which holds the
# 160 B class structs, and of kmalloc-2k, which holds the pages of the
# table that indexes them by minor, counted in /proc/slabinfo, with
# kmalloc-96, -128 and -256 beside them in case the struct's size class
# moves) is printed per class and must stay within 224 B (a 192 B slab
# object and its 8 B in the index, with room for slab overhead).  A class at the far end of the
# table is found on every packet: SO_TXTIME datagrams through it are
# spaced by its rate, the median gap within 1%, and on average never
# closer than that.  (The mean may be wider: after a host stall longer than
# the catch-up cap, 16 ms of the class's rate, the time past the cap is not
# made up: one CI run had its mean 1.08% wide.)
# Deleting them all gives the memory back.
source "$(dirname "$0")/lib.sh"
require_carousel
setup_pair
quiet_link
N=10000
CACHES="kmalloc-96 kmalloc-128 kmalloc-192 kmalloc-256 kmalloc-2k"

# slab_bytes: bytes in active objects of the caches a class lives in,
# after an RCU grace period (for anything freed by RCU) and with the
# per-CPU slabs flushed, so that free objects are not counted as active.
slab_bytes() {
	local c
	sync; sleep 1
	for c in $CACHES; do
		echo 1 >"/sys/kernel/slab/$c/shrink" 2>/dev/null
	done
	awk -v c=" $CACHES " 'index(c, " " $1 " ") { b += $2 * $4 } END { print b }' /proc/slabinfo
}
ns_s tc qdisc add dev "$DEV" root handle 1: carousel || fail "qdisc add"
for ((i = 1; i <= N; i++)); do
	printf 'class add dev %s parent 1: classid 1:%x carousel rate %dkbit\n' "$DEV" "$i" $((1000 + i))
done >"$TMPD/add.batch"
m0=$(slab_bytes)
t0=${EPOCHREALTIME/./}
ns_s tc -batch "$TMPD/add.batch" || fail "tc -batch add"
t1=${EPOCHREALTIME/./}
m1=$(slab_bytes)
assert_eq "classes" "$(qjq "$DEV" '.[0].classes')" $N
per=$(( (m1 - m0) / N ))
echo "# $N classes added in $(( (t1 - t0) / 1000 )) ms; $CACHES: +$((m1 - m0)) B = $per B per class"
[ "$per" -ge 160 ] || fail "$per B per class: less than the struct itself (160 B), so the caches counted are the wrong ones"
[ "$per" -le 224 ] || fail "$per B per class, want <= 224 (a 160 B struct in kmalloc-192, plus its index)"

ns_s tc class change dev "$DEV" classid 1:2710 carousel rate 5mbit || fail "class change 1:2710"
txtime_recv 6400 2000 20
txtime_send 6400 --gap-us 1200 --count 2000 --size 1400 --lead-ms 0.1 --priority $((0x12710)) >/dev/null
r=$(txtime_wait 6400)
echo "# via 1:2710: $r"
assert_eq "received via 1:2710" "$(jq .received <<<"$r")" 2000
gap=$(( 1442 * 8 * 1000000000 / 5000000 ))
assert_within "1:2710 median spacing (ns)" "$(jq .median_gap_ns <<<"$r")" "$gap" 1
assert_ge "1:2710 mean spacing - 99% of the class's (ns)" $(( $(jq .mean_gap_ns <<<"$r") - gap * 99 / 100 )) 0
assert_eq "unclassified datagrams" "$(( $(qjq "$DEV" '.[0].unclassified') < 10 ))" 1

for ((i = 1; i <= N; i++)); do
	printf 'class del dev %s classid 1:%x\n' "$DEV" "$i"
done >"$TMPD/del.batch"
m1=$(slab_bytes)		# again: the traffic allocated too
ns_s tc -batch "$TMPD/del.batch" || fail "tc -batch del"
assert_eq "classes after delete" "$(qjq "$DEV" '.[0].classes')" 0
m2=$(slab_bytes)
freed=$((m1 - m2))
echo "# deleting them gave back $freed B of the $((per * N)) B adding took"
[ "$freed" -ge $((per * N * 9 / 10)) ] || fail "class memory not given back: $freed of $((per * N)) B"
ns_s tc qdisc del dev "$DEV" root || fail "qdisc del"

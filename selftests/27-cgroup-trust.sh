#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 600
# tier: rest
#
# carousel-cgroup against what issue 20 found: what the tool says must be
# what the kernel does, from every namespace, at every depth, and no local
# user may steer it.
#  1. The qdisc replaced, or the device deleted, under an attached tool:
#     set/list/del say "not attached", nothing of ours is left behind, and
#     a new attach classifies again.
#  2. Two attaches at once, many times: one wins, the other says "already
#     attached", and the winner's map works.
#  3. A planted bpffs symlink (owned by an unprivileged user) to another
#     map of root's, and a lock file not root's: neither is touched.
#  4. A full map (4,096 entries) says so; 5,000 cgroups removed, then
#     `prune' drops exactly the gone ones; `del ID'; a parent slice keeps
#     a service's class across restarts.
#  5. A level-20 socket finds its level-18 ancestor; a level-70 one its
#     level-18 ancestor and a level-64 one; a change of mapping reaches
#     cached answers; mapping deeper than 64 is refused.
#  6. `ip netns exec' and `nsenter --net', and a PID namespace of its own.
#  7. Diagnostics: not root, the kernel's extack text, escaped names, a
#     malformed classid before any device check.
source "$(dirname "$0")/lib.sh"
require_carousel
require_cgroup2
require_cmd setpriv unshare
setup_pair
quiet_link
N=50

qdisc_up() {
	ns_s tc qdisc add dev "$1" root handle 1: carousel default 99 || fail "qdisc on $1"
	for c in 10 20 99; do
		ns_s tc class add dev "$1" parent 1: classid "1:$c" carousel rate 50mbit ||
			fail "class 1:$c on $1"
	done
}

# tool_fails WHAT PATTERN CMD...: CMD exits 1 (2 with WANT_RC=2) with one
# line on stderr that matches PATTERN (grep -E).
tool_fails() {
	local what=$1 pat=$2 rc=0
	shift 2
	"$@" >"$TMPD/out" 2>"$TMPD/err" || rc=$?
	echo "# $what: exit $rc: $(head -c 300 "$TMPD/err")"
	assert_eq "$what: exit" "$rc" "${WANT_RC:-1}"
	assert_eq "$what: lines on stderr" "$(wc -l <"$TMPD/err")" 1
	grep -Eq -- "$pat" "$TMPD/err" || check_fail "$what: stderr does not say /$pat/"
}

# classified WHAT CG CLASS: all N datagrams from CG land in CLASS.
classified() {
	local d
	d=$(cg_udp_from "$2" "$N")
	assert_eq "$1: packets in $3" "$(cg_delta "$d" "$3")" "$N"
}

base_maps=$(cg_maps)
echo "# maps named cgroup_class before: $base_maps"
maps_back() { [ "$(cg_maps)" = "$base_maps" ]; }
# le_hex N: the u64 N as bpftool's "hex" bytes, little-endian.
le_hex() { printf '%016x' "$1" | sed 's/../& /g' | awk '{ for (i = 8; i >= 1; i--) printf "%s ", $i }'; }

qdisc_up "$DEV"
cga=$(cg_new a)

# ---- 1. the qdisc replaced under an attached tool
cg_tool attach "$DEV" || fail "attach"
defer cg_detach_quiet
cg_tool set "$DEV" "$cga" 1:10 || fail "set"
classified "attached" "$cga" 1:10
ns_s tc qdisc del dev "$DEV" root || fail "qdisc del"
busywait 10000 maps_back >/dev/null || check_fail "qdisc deleted: our map left behind ($(cg_maps), want $base_maps)"
qdisc_up "$DEV"
tool_fails "set after the qdisc was replaced" "not attached" cg_tool set "$DEV" "$cga" 1:10
tool_fails "list after the qdisc was replaced" "not attached" cg_tool list "$DEV"
tool_fails "del after the qdisc was replaced" "not attached" cg_tool del "$DEV" "$cga"
cg_tool attach "$DEV" || check_fail "attach after the qdisc was replaced"
cg_tool set "$DEV" "$cga" 1:20 || fail "set after re-attach"
classified "re-attached" "$cga" 1:20

# ... and a device deleted under it
veth_pair cg1 198.19.0.1 cg1r 198.19.0.2
qdisc_up cg1
cg_tool attach cg1 || fail "attach cg1"
cg_tool set cg1 "$cga" 1:10 || fail "set on cg1"
[ "$(cg_maps)" = $((base_maps + 2)) ] || check_fail "two attaches, want $((base_maps + 2)) maps: $(cg_maps)"
ip -n "$NS_S" link del cg1 || fail "link del cg1"
busywait 10000 eval '[ "$(cg_maps)" = $((base_maps + 1)) ]' >/dev/null ||
	check_fail "device deleted: its map left behind ($(cg_maps), want $((base_maps + 1)))"
veth_pair cg1 198.19.0.1 cg1r 198.19.0.2
qdisc_up cg1
tool_fails "list on a new device of the same name" "not attached" cg_tool list cg1
cg_tool attach cg1 || check_fail "attach on the new device"
cg_tool detach cg1 || check_fail "detach the new device"

# ---- 2. two attaches at once
cg_tool detach "$DEV" || fail "detach"
R=${CG_RACE_ROUNDS:-16}
won=0 lost=0 bad=0 excl=0
# In odd rounds the second racer has a /run of its own, so the lock does
# not serialise the two, and the kernel's NLM_F_EXCL must decide.
for ((i = 0; i < R; i++)); do
	cg_tool attach "$DEV" >"$TMPD/a1" 2>&1 &
	p1=$!
	if ((i % 2)); then
		# shellcheck disable=SC2016 # expanded by sh -c
		nsenter --net="/run/netns/$NS_S" unshare -m --propagation private sh -c \
			'mount -t tmpfs -o mode=0755 none /run && exec "$1" attach "$2"' sh "$CG_TOOL" "$DEV" \
			>"$TMPD/a2" 2>&1 &
	else
		cg_tool attach "$DEV" >"$TMPD/a2" 2>&1 &
	fi
	p2=$!
	r1=0 r2=0
	wait "$p1" || r1=$?
	wait "$p2" || r2=$?
	if [ $((r1 + r2)) = 1 ] && cat "$TMPD/a1" "$TMPD/a2" | grep -q "is already attached"; then
		won=$((won + 1)) lost=$((lost + 1))
		cat "$TMPD/a1" "$TMPD/a2" | grep -q "attached it meanwhile" && excl=$((excl + 1))
	else
		bad=$((bad + 1))
		echo "# round $i: exits $r1 $r2: $(cat "$TMPD/a1" "$TMPD/a2")"
	fi
	cg_tool set "$DEV" "$cga" 1:10 || check_fail "round $i: set after the race"
	[ "$(cg_tool list "$DEV" | grep -vc '^#')" = 1 ] || check_fail "round $i: list after the race: $(cg_tool list "$DEV")"
	cg_tool detach "$DEV" || check_fail "round $i: detach after the race"
done
echo "# $R rounds of two racing attaches: $won won, $lost lost cleanly ($excl of them to NLM_F_EXCL, not the lock), $bad otherwise"
assert_eq "racing attaches that did not end one won, one 'already attached'" "$bad" 0
busywait 10000 maps_back >/dev/null || check_fail "after the races: $(cg_maps) maps, want $base_maps"

# ---- 3. planted symlinks and a lock not root's
ifx=$(ip -n "$NS_S" -o link show "$DEV" | cut -d: -f1)
nsino=$(stat -L -c %i "/run/netns/$NS_S")
victim=/sys/fs/bpf/carousel-victim-$$
bpftool map create "$victim" type hash key 8 value 4 entries 16 name victim ||
	fail "victim map"
defer rm -f "$victim"
# shellcheck disable=SC2046 # bytes as words
bpftool map update pinned "$victim" key hex $(le_hex "$(stat -c %i "$cga")") value hex 14 00 01 00 ||
	fail "victim entry"
victim_n() { bpftool -j map dump pinned "$victim" | jq length; }
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
# Where the old tool looked for the map: planted by a user, before root.
rm -rf /sys/fs/bpf/carousel
for d in "$ifx" "$ifx-ns$nsino"; do
	as_nobody mkdir -p "/sys/fs/bpf/carousel/$d" || fail "plant dir $d as nobody"
	as_nobody ln -s "$victim" "/sys/fs/bpf/carousel/$d/map" || fail "plant link $d as nobody"
done
defer rm -rf /sys/fs/bpf/carousel
echo "# planted: $(find /sys/fs/bpf/carousel -printf '%u %p -> %l\n' | tr '\n' ';')"
cg_tool attach "$DEV" || check_fail "attach with a planted link"
cg_tool set "$DEV" "$(cg_new b)" 1:20 || check_fail "set with a planted link"
tool_fails "del of a cgroup only the victim maps" "has no class" cg_tool del "$DEV" "$cga"
cg_tool list "$DEV" >"$TMPD/list" || check_fail "list with a planted link"
sed 's/^/# list: /' "$TMPD/list"
grep -q "$cga " "$TMPD/list" && check_fail "list shows the victim's entry"
assert_eq "entries in root's other map after set/del/list" "$(victim_n)" 1
classified "planted link: set reaches the classifier" "$CG_BASE/b" 1:20
# The lock: root's file in root's /run, or nothing runs.
touch /run/carousel-cgroup.lock && chown 65534 /run/carousel-cgroup.lock
tool_fails "a lock file not root's" "not a plain file of root's" cg_tool list "$DEV"
rm -f /run/carousel-cgroup.lock
ln -s /etc/passwd /run/carousel-cgroup.lock
tool_fails "a lock file that is a symlink" "lock" cg_tool list "$DEV"
rm -f /run/carousel-cgroup.lock
cg_tool list "$DEV" >/dev/null || fail "list"
ln /run/carousel-cgroup.lock "$TMPD/lock-link" 2>/dev/null ||
	ln /run/carousel-cgroup.lock /run/carousel-cgroup.lock2 || fail "hard link"
tool_fails "a lock file with another name" "not a plain file of root's" cg_tool list "$DEV"
rm -f "$TMPD/lock-link" /run/carousel-cgroup.lock2
runmode=$(stat -c %a /run)
chmod g+w /run && defer chmod "$runmode" /run
tool_fails "a /run that others can write to" "not root's own directory" cg_tool list "$DEV"
chmod "$runmode" /run
cg_tool list "$DEV" >/dev/null || check_fail "list after the lock file was removed"

# ---- 4. a full map, 5,000 short-lived cgroups, prune, restarts
cg_tool detach "$DEV" || fail "detach"
cg_tool attach "$DEV" || fail "attach"
cg_tool set "$DEV" "$cga" 1:10 || fail "set a"
mapid=$(cg_tool list "$DEV" | sed -n 's/^#.* map \([0-9]*\): .*/\1/p')
[ -n "$mapid" ] || fail "no map id in list's header: $(cg_tool list "$DEV")"
mkdir "$CG_BASE/s" && (cd "$CG_BASE/s" && mkdir $(seq 1 5000)) || fail "5000 cgroups"
# Fill the map to the brim behind the tool's back: 4,095 of them.
"$PYTHON" - "$CG_BASE/s" "$mapid" "$TMPD/first" >"$TMPD/batch" <<'PY' || fail "batch"
import os, struct, sys
base, mapid = sys.argv[1], sys.argv[2]
with open(sys.argv[3], "w") as f:
    print(os.stat(f"{base}/1").st_ino, file=f)
for i in range(1, 4096):
    key = struct.pack("<Q", os.stat(f"{base}/{i}").st_ino)
    val = struct.pack("<I", 0x10014)
    print(f"map update id {mapid} key hex {key.hex(' ')} value hex {val.hex(' ')}")
PY
bpftool batch file "$TMPD/batch" >/dev/null || fail "bpftool batch"
cg_tool list "$DEV" | head -n 1 | sed 's/^/# full: /'
cg_tool list "$DEV" | head -n 1 | grep -q ": 4096 of 4096 entries$" || check_fail "list's header: $(cg_tool list "$DEV" | head -n 1)"
tool_fails "set into a full map" "map is full \(4096 of 4096 entries\)" \
	cg_tool set "$DEV" "$CG_BASE/s/5000" 1:10
(cd "$CG_BASE/s" && rmdir $(seq 1 5000)) || fail "rmdir 5000 cgroups"
first=$(cat "$TMPD/first")
cg_tool del "$DEV" "$first" || check_fail "del by id of a removed cgroup"
tool_fails "del by id, twice" "has no class" cg_tool del "$DEV" "$first"
cg_tool prune "$DEV" >"$TMPD/prune" || check_fail "prune"
echo "# prune: $(cat "$TMPD/prune")"
grep -q "^pruned 4094 of 4095 entries" "$TMPD/prune" || check_fail "prune: $(cat "$TMPD/prune")"
assert_eq "entries after prune" "$(cg_tool list "$DEV" | grep -vc '^#')" 1
cg_tool list "$DEV" | grep -q "^$cga [0-9]* 1:10 " || check_fail "the live mapping survived prune: $(cg_tool list "$DEV")"
classified "after prune" "$cga" 1:10
# A service restarts: its cgroup is new, its slice is not.
slice=$(cg_new backup.slice)
svc=$(cg_new backup.slice/backup-a.service)
cg_tool set "$DEV" "$slice" 1:20 || fail "set slice"
classified "service in a mapped slice" "$svc" 1:20
rmdir "$svc" && mkdir "$svc" || fail "restart the service's cgroup"
classified "the restarted service" "$svc" 1:20

# ---- 5. depth
cg_tool detach "$DEV" && cg_tool attach "$DEV" || fail "re-attach"
p=$CG_BASE			# level 1
for ((l = 2; l <= 70; l++)); do
	p=$p/d
	mkdir "$p" || fail "mkdir level $l"
	eval "lv$l=\$p"
done
# shellcheck disable=SC2154 # set by eval
{ l18=$lv18 l20=$lv20 l64=$lv64 l65=$lv65 l70=$lv70; }
cg_tool set "$DEV" "$l18" 1:10 || fail "set level 18"
classified "level 20, its level-18 ancestor mapped" "$l20" 1:10
classified "level 70, its level-18 ancestor mapped" "$l70" 1:10
cg_tool set "$DEV" "$l20" 1:20 || fail "set level 20"
classified "level 20, itself mapped after a cached answer" "$l20" 1:20
cg_tool del "$DEV" "$l20" || fail "del level 20"
classified "level 20, its mapping deleted" "$l20" 1:10
cg_tool set "$DEV" "$l64" 1:20 || check_fail "set level 64"
classified "level 70, its level-64 ancestor mapped" "$l70" 1:20
tool_fails "set level 65" "levels below the root" cg_tool set "$DEV" "$l65" 1:10
# The answer for level 70 is cached: one entry per socket cgroup.
cache=$(bpftool -j map show | jq -r '[.[] | select(.name == "cgroup_cache")] | last | .id')
# shellcheck disable=SC2046 # bytes as words
bpftool map lookup id "$cache" key hex $(le_hex "$(stat -c %i "$l70")") >"$TMPD/c70" 2>&1 ||
	check_fail "no cached answer for level 70's cgroup in map $cache: $(cat "$TMPD/c70")"
echo "# cache map $cache, level 70's entry: $(tr -s ' \n' ' ' <"$TMPD/c70")"

# ---- 6. namespaces
cg2opts() { awk '$0 ~ / - cgroup2 / { print $6, $NF }' /proc/1/mountinfo; }
# With nsdelegate on, as systemd mounts it: a new mount of cgroup2 without
# it would turn it off for the whole host.
if ! cg2opts | grep -q nsdelegate; then
	mount -o remount,nsdelegate "$CG_ROOT" || fail "remount cgroup2 with nsdelegate"
	defer mount -o remount "$CG_ROOT"
fi
opts0=$(cg2opts)
echo "# cgroup2 mounts' options: $opts0"
cg_tool detach "$DEV" || fail "detach"
ns_s "$CG_TOOL" attach "$DEV" || check_fail "ip netns exec: attach"
ns_s "$CG_TOOL" set "$DEV" "$cga" 1:20 || check_fail "ip netns exec: set"
ns_s "$CG_TOOL" list "$DEV" >"$TMPD/list" || check_fail "ip netns exec: list"
sed 's/^/# ip netns exec list: /' "$TMPD/list"
grep -q "^$cga [0-9]* 1:20 50Mbit$" "$TMPD/list" || check_fail "ip netns exec: list shows $cga"
classified "set under ip netns exec" "$cga" 1:20
cg_tool list "$DEV" | grep -q "^$cga [0-9]* 1:20 " || check_fail "nsenter sees ip netns exec's mapping"
unshare --pid --fork --mount-proc nsenter --net="/run/netns/$NS_S" "$CG_TOOL" list "$DEV" |
	grep -q "^$cga " || check_fail "a PID namespace of its own: list"
ns_s "$CG_TOOL" del "$DEV" "$cga" || check_fail "ip netns exec: del"
ns_s "$CG_TOOL" detach "$DEV" || check_fail "ip netns exec: detach"
busywait 10000 maps_back >/dev/null || check_fail "after ip netns exec's detach: $(cg_maps) maps"
assert_eq "cgroup2 mounts' options after the tool ran under ip netns exec" "$(cg2opts)" "$opts0"

# ---- 7. diagnostics
cg_tool attach "$DEV" || fail "attach"
tool_fails "not root" "must run as root" as_nobody "$CG_TOOL" list "$DEV"
WANT_RC=2 tool_fails "malformed classid, no such device" "bad classid" cg_tool set nosuchdev0 "$cga" 1:zz
WANT_RC=2 tool_fails "malformed cgroup id" "bad cgroup id" cg_tool del "$DEV" 99999999999999999999999
tool_fails "del of an unmapped cgroup" "has no class" cg_tool del "$DEV" "$cga"
odd1=$(cg_new $'evil\tname\e[31m')
odd2=$(cg_new 'with space')
cg_tool set "$DEV" "$odd1" 1:10 || fail "set odd1"
cg_tool set "$DEV" "$odd2" 1:20 || fail "set odd2"
cg_tool list "$DEV" >"$TMPD/list" || fail "list"
sed 's/^/# list: /' "$TMPD/list" | cat -v
assert_eq "list: lines (header and two entries)" "$(wc -l <"$TMPD/list")" 3
grep -q $'\e' "$TMPD/list" && check_fail "list prints a raw escape"
grep -qF 'evil\x09name\x1b[31m ' "$TMPD/list" || check_fail "list: the odd name escaped"
grep -qF 'with\x20space ' "$TMPD/list" || check_fail "list: the name with a space"
grep -q "(deleted)" "$TMPD/list" && check_fail "list calls a live cgroup deleted"
classified "a cgroup name with a space" "$odd2" 1:20
cg_tool detach "$DEV" || fail "detach"
# A filter of another kind at our priority: the kernel's reason reaches the user.
ns_s tc filter add dev "$DEV" parent 1: prio 0xca00 protocol all u32 match u32 0 0 classid 1:10 ||
	fail "u32 at our prio"
tool_fails "attach over a u32 filter at our prio" "Invalid argument \(.*kind.*\)" cg_tool attach "$DEV"
ns_s tc filter del dev "$DEV" parent 1: prio 0xca00 || fail "u32 del"
exit 0

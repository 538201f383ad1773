#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 240
# tier: compat
# compat: veth, ifb, clsact, matchall and mirred as the CNI plugin uses them
#
# carousel-cni, the CNI plugin (tc/cni), driven as a container runtime
# drives it: cnitool (built from the CNI project) with a conflist that
# chains ptp and carousel-cni, the limits in CAP_ARGS as the runtime's
# "bandwidth" capability, network namespaces as pods.
#   - STATUS passes, and fails (code 50) when the kernel has no
#     sch_carousel;
#   - ADD: three pods at 5, 10 and 20 Mbit each way, with the runtimes'
#     default burst (2^32 - 1 bits), which is capped to 20 ms of the rate
#     and logged; a fourth pod without limits is passed through;
#   - into the pods (carousel root on the host-side veth) and out of them
#     (ifb), TCP to all three at once: each goodput within 1% of its rate;
#   - upstream's integration scenario: 2 MB to the 5 Mbit pod take over a
#     second longer than to the pod without limits;
#   - CHECK passes, and fails once someone changes a class by hand or
#     removes the egress redirect;
#   - DEL (twice, the second without prevResult) leaves no ifb, qdisc or
#     state; GC removes the attachments that are not valid, and only them.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib/cni.sh"
require_carousel
require_cmd iperf3

BIN=$CNI_BIN
NET=carousel-test
DATA=$CNI_DATA
T=8
IPERF_OMIT=2
GW=10.77.0.1

cni_net "$NET" 10.77.0.0/24 \
	"{ \"type\": \"carousel-cni\", \"capabilities\": { \"bandwidth\": true }, \"dataDir\": \"$DATA\" }"
PLUGIN_CONF="{\"cniVersion\": \"1.1.0\", \"name\": \"$NET\", \"type\": \"carousel-cni\", \"dataDir\": \"$DATA\""

state_files() { find "$DATA" -type f 2>/dev/null | wc -l; }
ifbs() { ip -o link show type ifb | grep -c ' ccni' || true; }
carousels() { tc qdisc show | grep -c '^qdisc carousel' || true; }

# ---- STATUS
"$BIN/cnitool" status "$NET" /run/netns/unused || fail "STATUS failed with sch_carousel loaded"
# Without the module (a mount namespace hiding /sys/module and
# /lib/modules) STATUS says the plugin cannot serve ADD: code 50.
out=$(echo "$PLUGIN_CONF}" | unshare -m sh -c \
	"mount -t tmpfs none /sys/module && mount -t tmpfs none /lib/modules &&
	 CNI_COMMAND=STATUS CNI_PATH=$BIN $BIN/carousel-cni" 2>&1)
rc=$?
log "STATUS without the module: exit $rc: $out"
[ "$rc" != 0 ] && [ "$(echo "$out" | jq -r .code 2>/dev/null)" = 50 ] ||
	check_fail "STATUS without sch_carousel: exit $rc, want code 50"

# ---- ADD
for p in 5 10 20 0; do
	pod_add "$NET" "p$p" "$p"
done
for p in 5 10 20; do
	for dir in ingress egress; do
		grep -q "$dir burst of $((CNI_MAXBURST / 8)) bytes capped to $((p * 1000000 / 8 / 50)) bytes" \
			"$ART/add-p$p.err" || check_fail "p$p: the $dir burst cap was not logged"
	done
	assert_eq "p$p: class 1:1 burst on ${HOST_IF[p$p]}" \
		"$(tc_json class show dev "${HOST_IF[p$p]}" | jq -r '.[] | select(.handle == "1:1") | (.options.burst // .burst)')" \
		"$((p * 1000000 / 8 / 50))"
done
assert_eq "ifbs (one per limited pod)" "$(ifbs)" 3
assert_eq "carousels (two per limited pod)" "$(carousels)" 6
assert_eq "state files" "$(state_files)" 3
assert_eq "the pod without limits: its veth's root qdisc" \
	"$(tc -j qdisc show dev "${HOST_IF[p0]}" | jq -r '.[] | select(.root) | .kind')" noqueue

# ---- rates, into the pods and out of them
# iperf_pair DIR: TCP to (in) or from (out) the three limited pods at
# once; prints "pod bps" lines.
iperf_pair() {
	local dir=$1 p port pids=()
	for p in 5 10 20; do
		port=$((5200 + p))
		if [ "$dir" = in ]; then
			in_pod "p$p" iperf3 -s -1 -p $port >/dev/null 2>&1 &
		else
			iperf3 -s -1 -B "$GW" -p $port >/dev/null 2>&1 &
		fi
		_BG_PIDS+=("$!")
	done
	sleep 1
	for p in 5 10 20; do
		port=$((5200 + p))
		if [ "$dir" = in ]; then
			timeout $((T + 30)) iperf3 -c "${POD_IP[p$p]}" -p $port -t $T -O $IPERF_OMIT -J \
				>"$ART/iperf-$dir-$p.json" 2>&1 &
		else
			timeout $((T + 30)) ip netns exec "p$p-$$" iperf3 -c "$GW" -p $port -t $T \
				-O $IPERF_OMIT -J >"$ART/iperf-$dir-$p.json" 2>&1 &
		fi
		pids+=("$!")
	done
	for p in "${pids[@]}"; do
		wait "$p"
	done
	for p in 5 10 20; do
		echo "$p $(jq -r '.end.sum_received.bits_per_second // 0 | floor' "$ART/iperf-$dir-$p.json")"
	done
}

for dir in in out; do
	while read -r p bps; do
		check_within "pod p$p, $dir" "$bps" \
			"$(tcp_goodput_expected $((p * 1000000)) 1500)" 1
	done < <(iperf_pair "$dir")
done
for p in 5 10 20; do
	tc -s -j qdisc show dev "${HOST_IF[p$p]}" >"$ART/qdisc-in-p$p.json"
	ifb=$(jq -r '.interfaces[] | select(.name | startswith("ccni")) | .name' "$ART/add-p$p.json")
	tc -s -j qdisc show dev "$ifb" >"$ART/qdisc-out-p$p.json"
	log "p$p drops: in $(jq '[.[] | select(.kind == "carousel") | .drops] | add' "$ART/qdisc-in-p$p.json")," \
		"out $(jq '[.[] | select(.kind == "carousel") | .drops] | add' "$ART/qdisc-out-p$p.json")"
done

# ---- upstream's scenario: a limited pod takes measurably longer
xfer_ms() {
	local p=$1 t0
	in_pod "$p" iperf3 -s -1 -p 5300 >/dev/null 2>&1 &
	_BG_PIDS+=("$!")
	sleep 1
	t0=$(now_ms)
	iperf3 -c "${POD_IP[$p]}" -p 5300 -n 2M >/dev/null 2>&1 || fail "iperf3 -n 2M to $p"
	echo $(($(now_ms) - t0))
}
lim=$(xfer_ms p5)
unl=$(xfer_ms p0)
log "2 MB: $lim ms to the 5 Mbit pod, $unl ms to the pod without limits"
[ "$lim" -gt $((unl + 1000)) ] ||
	check_fail "the limited pod took $lim ms, not over a second more than $unl ms"

# ---- CHECK
cni check p10 || check_fail "CHECK failed on an untouched pod"
tc class change dev "${HOST_IF[p10]}" classid 1:1 carousel rate 12mbit ||
	fail "tc class change"
if out=$(cni check p10 2>&1); then
	check_fail "CHECK passed after the class's rate was changed by hand"
else
	log "CHECK after a hand change: $out"
fi
cni check p20 || check_fail "CHECK failed on an untouched pod"
tc filter del dev "${HOST_IF[p20]}" ingress || fail "tc filter del"
if out=$(cni check p20 2>&1); then
	check_fail "CHECK passed without the egress redirect"
else
	log "CHECK without the redirect: $out"
fi

# ---- DEL
for p in "${PODS[@]}"; do
	cni del "$p" || check_fail "DEL $p"
	cni del "$p" || check_fail "DEL $p again (no prevResult)"
done
assert_eq "ifbs after DEL" "$(ifbs)" 0
assert_eq "carousels after DEL" "$(carousels)" 0
assert_eq "state files after DEL" "$(state_files)" 0

# ---- GC: two pods again; only the one GC is told about stays
pod_add "$NET" g1 5
pod_add "$NET" g2 5
assert_eq "ifbs before GC" "$(ifbs)" 2
keep=$(jq -c '{containerID, ifname}' "$DATA/$NET"/*/* | head -n1)
[ -n "$keep" ] || fail "no state file of g1 or g2 in $DATA/$NET"
keep_id=$(echo "$keep" | jq -r .containerID)
echo "$PLUGIN_CONF, \"cni.dev/valid-attachments\": [$keep]}" |
	CNI_COMMAND=GC CNI_PATH=$BIN "$BIN/carousel-cni" || check_fail "GC failed"
assert_eq "ifbs after GC" "$(ifbs)" 1
assert_eq "carousels after GC" "$(carousels)" 2
assert_eq "the state GC kept" "$(jq -r .containerID "$DATA/$NET"/*/*)" "$keep_id"
echo "$PLUGIN_CONF, \"cni.dev/valid-attachments\": []}" |
	CNI_COMMAND=GC CNI_PATH=$BIN "$BIN/carousel-cni" || check_fail "GC failed"
assert_eq "ifbs after GC of all" "$(ifbs)" 0
assert_eq "carousels after GC of all" "$(carousels)" 0
assert_eq "state files after GC of all" "$(state_files)" 0
exit 0

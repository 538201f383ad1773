# SPDX-License-Identifier: GPL-2.0
# Sourced by the CNI tests (37-39), after lib.sh: pods as network
# namespaces, attached by cnitool as a container runtime attaches them.
#
# cni_net NAME SUBNET PLUGIN_JSON: a conflist NAME in NETCONFPATH that
# chains ptp (host-local IPAM in SUBNET, MTU 1500) with PLUGIN_JSON.
# pod_add NET POD MBIT [BURST_BITS]: netns POD-$$ and a cnitool ADD of it
# to NET, limited to MBIT each way (0: no limits) with a burst of
# BURST_BITS (CNI_MAXBURST, what runtimes pass when none is set); sets
# POD_IP[POD], HOST_IF[POD], POD_NET[POD], POD_CAPS[POD], and the
# result in $ART/add-POD.json, the plugins' stderr in $ART/add-POD.err.
# cni CMD POD: cnitool CMD for POD, with its capability arguments, as a
# runtime passes them to every command.
# in_pod POD CMD...: CMD in POD's netns.

require_module ifb act_mirred cls_matchall sch_ingress
require_cmd jq unshare

# The binaries run from the guest's tmpfs, as from /opt/cni/bin on a
# host's disk: run from the host's tree (9p) each exec took ~0.45 s
# under TCG, ~0.05 s from tmpfs.
CNI_BIN=$TMPD/cni-bin
mkdir -p "$CNI_BIN"
for _b in carousel-cni cnitool ptp host-local bandwidth; do
	cp "$REPO/tc/cni/bin/$_b" "$CNI_BIN/" 2>/dev/null ||
		fail "$REPO/tc/cni/bin/$_b is missing (make -C tc/cni all refs)"
done
export CNI_PATH=$CNI_BIN NETCONFPATH=$TMPD/net.d
CNI_DATA=$TMPD/state
CNI_MAXBURST=4294967295
mkdir -p "$NETCONFPATH"

declare -A POD_IP=() HOST_IF=() POD_CAPS=() POD_NET=()
PODS=()

cni_net() {
	cat >"$NETCONFPATH/$1.conflist" <<-EOF
	{
		"cniVersion": "1.1.0",
		"name": "$1",
		"plugins": [
			{ "type": "ptp", "mtu": 1500,
			  "ipam": { "type": "host-local", "subnet": "$2",
				    "dataDir": "$TMPD/ipam" } },
			$3
		]
	}
	EOF
}

in_pod() { local p=$1; shift; ip netns exec "$p-$$" "$@"; }

cni() {
	CAP_ARGS=${POD_CAPS[$2]} "$CNI_BIN/cnitool" "$1" "${POD_NET[$2]}" "/run/netns/$2-$$"
}

pod_add() {
	local net=$1 name=$2 mbit=$3 burst=${4:-$CNI_MAXBURST} ns=$2-$$ caps='{}' out
	ip netns add "$ns" || fail "ip netns add $ns"
	PODS+=("$name")
	POD_NET[$name]=$net
	defer ip netns del "$ns"
	defer env CNI_PATH="$CNI_PATH" NETCONFPATH="$NETCONFPATH" \
		"$CNI_BIN/cnitool" del "$net" "/run/netns/$ns"
	# No IPv6: ptp would wait out the link-local address's DAD.
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1
	ip netns exec "$ns" ip link set lo up
	if [ "$mbit" != 0 ]; then
		caps=$(printf '{"bandwidth": {"ingressRate": %d, "ingressBurst": %d, "egressRate": %d, "egressBurst": %d}}' \
			$((mbit * 1000000)) "$burst" $((mbit * 1000000)) "$burst")
	fi
	POD_CAPS[$name]=$caps
	CAP_ARGS=$caps "$CNI_BIN/cnitool" add "$net" "/run/netns/$ns" \
		>"$ART/add-$name.json" 2>"$ART/add-$name.err" ||
		{ cat "$ART/add-$name.err" >&2; fail "cnitool add $name"; }
	out=$(jq -r '.ips[0].address' "$ART/add-$name.json")
	POD_IP[$name]=${out%/*}
	HOST_IF[$name]=$(jq -r '.interfaces[] | select(.sandbox == null or .sandbox == "") | .name' \
		"$ART/add-$name.json" | grep -v '^ccni' | head -n1)
	[ -n "${POD_IP[$name]}" ] && [ -n "${HOST_IF[$name]}" ] ||
		fail "cnitool add $name: no address or host interface in its result"
	log "pod $name on $net: ${POD_IP[$name]}, host side ${HOST_IF[$name]}, ${mbit} Mbit"
}

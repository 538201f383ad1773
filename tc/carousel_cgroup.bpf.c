// SPDX-License-Identifier: GPL-2.0
/*
 * carousel_cgroup.bpf.c: a cls_bpf classifier (direct-action) for
 * sch_carousel that picks a class by the sending socket's cgroup v2.
 *
 * The pinned hash map cgroup_class maps a cgroup id (the inode number of
 * the cgroup's directory) to a classid.  A packet is looked up by its
 * socket's cgroup, then by that cgroup's ancestors, deepest first: a
 * nested cgroup inherits its parent's class unless it has its own.  A
 * match sets skb->tc_classid to the class's minor (it has 16 bits; cls_bpf
 * ORs in the major, from the filter's classid MAJOR:0, which
 * carousel-cgroup sets) and returns TC_ACT_OK; no match returns
 * TC_ACT_UNSPEC, so the next filter runs and, at the end, the qdisc's
 * default class applies.
 *
 * Loaded and attached by carousel-cgroup (tc/carousel-cgroup.c).
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

/* Levels below the root that are searched; deeper cgroups still match
 * through their first CAROUSEL_CG_LEVELS - 1 ancestors. */
#define CAROUSEL_CG_LEVELS	16

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);	/* cgroup id */
	__type(value, __u32);	/* classid */
} cgroup_class SEC(".maps");

SEC("tc")
int carousel_cgroup(struct __sk_buff *skb)
{
	__u64 id = bpf_skb_cgroup_id(skb);
	__u32 *classid;
	int level;

	if (!id)		/* no full socket, or not cgroup v2 */
		return TC_ACT_UNSPEC;
	classid = bpf_map_lookup_elem(&cgroup_class, &id);
	if (classid)
		goto found;
	/* The ancestors, deepest first; 0 means "no such level". */
	for (level = CAROUSEL_CG_LEVELS - 1; level >= 0; level--) {
		id = bpf_skb_ancestor_cgroup_id(skb, level);
		if (!id)
			continue;
		classid = bpf_map_lookup_elem(&cgroup_class, &id);
		if (classid)
			goto found;
	}
	return TC_ACT_UNSPEC;
found:
	skb->tc_classid = *classid & 0xffff;
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";

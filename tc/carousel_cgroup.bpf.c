// SPDX-License-Identifier: GPL-2.0
/*
 * carousel_cgroup.bpf.c: a cls_bpf classifier (direct-action) for
 * sch_carousel that picks a class by the sending socket's cgroup v2.
 *
 * The hash map cgroup_class maps a cgroup id (what name_to_handle_at()
 * gives for the cgroup's directory) to a classid.  A packet takes the class
 * of its socket's cgroup or of the nearest ancestor that has one: a nested
 * cgroup inherits its parent's class unless it has its own.  A match sets
 * skb->tc_classid to the class's minor (it has 16 bits; cls_bpf ORs in the
 * major, from the filter's classid MAJOR:0, which carousel-cgroup sets) and
 * returns TC_ACT_OK; no match returns TC_ACT_UNSPEC, so the next filter
 * runs and, at the end, the qdisc's default class applies.
 *
 * Depth.  Levels 0 (the root) to CG_MAX_LEVEL are searched, nearest first;
 * carousel-cgroup refuses to map a cgroup deeper than that, so a socket at
 * any depth finds its nearest mapped ancestor.  The walk costs a helper
 * call and a lookup per level, so its answer is cached per socket cgroup
 * in cgroup_cache (LRU): a packet whose cgroup was seen before costs two
 * lookups, however deep and however unmapped its ancestors are.  Every
 * change to cgroup_class is followed by an increment of cgroup_gen[0]
 * (carousel-cgroup does both, under its lock); a cache entry from an older
 * generation is walked again.  A walk reads the generation before it reads
 * cgroup_class, so an entry can only be stamped older than what it saw,
 * never newer.
 *
 * Loaded and attached by carousel-cgroup (tc/carousel-cgroup.c), which
 * finds these maps through the filter's program, never through a pin.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#define CG_MAX_LEVEL	64	/* keep in step with carousel-cgroup.c */

struct cg_cached {
	__u64 gen;
	__u32 classid;		/* 0: no mapped ancestor */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);	/* cgroup id */
	__type(value, __u32);	/* classid */
} cgroup_class SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);	/* generation of cgroup_class */
} cgroup_gen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);	/* the socket's cgroup id */
	__type(value, struct cg_cached);
} cgroup_cache SEC(".maps");

/* The deepest level in [0, CG_MAX_LEVEL] at which the socket has a cgroup. */
static __always_inline __u32 cg_level(struct __sk_buff *skb)
{
	__u32 lo = 0, hi = CG_MAX_LEVEL, i;

	for (i = 0; i < 8 && lo < hi; i++) {
		__u32 mid = (lo + hi + 1) / 2;

		if (bpf_skb_ancestor_cgroup_id(skb, mid))
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

static __always_inline __u32 cg_walk(struct __sk_buff *skb)
{
	__u32 level = cg_level(skb), i;

	for (i = 0; i <= CG_MAX_LEVEL; i++) {
		__u32 *classid;
		__u64 id;

		if (i > level)
			break;
		id = bpf_skb_ancestor_cgroup_id(skb, level - i);
		if (!id)
			continue;
		classid = bpf_map_lookup_elem(&cgroup_class, &id);
		if (classid)
			return *classid;
	}
	return 0;
}

SEC("tc")
int carousel_cgroup(struct __sk_buff *skb)
{
	__u64 id = bpf_skb_cgroup_id(skb), gen;
	struct cg_cached *c, fresh = { 0 };
	__u32 zero = 0, classid;
	__u64 *g;

	if (!id)		/* no full socket, or not cgroup v2 */
		return TC_ACT_UNSPEC;
	g = bpf_map_lookup_elem(&cgroup_gen, &zero);
	if (!g)
		return TC_ACT_UNSPEC;
	/*
	 * A fully ordered read (a fetch-add of 0): the walk's reads of
	 * cgroup_class must not be done before it, or on a weakly ordered
	 * CPU an old answer could be stamped with the new generation.
	 */
	gen = __sync_fetch_and_add(g, 0);
	c = bpf_map_lookup_elem(&cgroup_cache, &id);
	if (c && c->gen == gen) {
		classid = c->classid;
	} else {
		classid = cg_walk(skb);
		fresh.gen = gen;
		fresh.classid = classid;
		bpf_map_update_elem(&cgroup_cache, &id, &fresh, BPF_ANY);
	}
	if (!classid)
		return TC_ACT_UNSPEC;
	skb->tc_classid = classid & 0xffff;
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";

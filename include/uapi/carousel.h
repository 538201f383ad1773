/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * The user ABI of the carousel qdisc: its netlink attributes and
 * statistics.  Shared by the kernel module and the tc plugin
 * (tc/q_carousel.c); it needs nothing but <linux/types.h>.
 */
#ifndef _UAPI_CAROUSEL_H
#define _UAPI_CAROUSEL_H

#include <linux/types.h>

/*
 * Qdisc options, nested in TCA_OPTIONS.  Every attribute is optional on
 * change; what is not sent is left as it was.
 */
enum {
	TCA_CAROUSEL_UNSPEC,
	TCA_CAROUSEL_RATE,		/* u64 bytes/s: device ceiling, 0 = none */
	TCA_CAROUSEL_DEFAULT,		/* u32: minor of the default class, 0 = none */
	TCA_CAROUSEL_GRANULARITY,	/* u32 ns: width of a near-term slot */
	TCA_CAROUSEL_HORIZON,		/* u32 us: farthest departure accepted */
	TCA_CAROUSEL_HORIZON_DROP,	/* u8: 1 = drop beyond horizon, 0 = cap */
	TCA_CAROUSEL_LIMIT,		/* u32 packets in the qdisc */
	TCA_CAROUSEL_FLOW_LIMIT,	/* u32 packets of one flow in the qdisc */
	TCA_CAROUSEL_TIMER_SLACK,	/* u32 ns: watchdog slack */
	TCA_CAROUSEL_PAD,
	TCA_CAROUSEL_CE_THRESHOLD,	/* u32 ns: mark CE beyond, 0 = off */
	TCA_CAROUSEL_FLOW_BUDGET,	/* u32 packets of a flow before CN */
	TCA_CAROUSEL_FLOW_BUDGET_TIME,	/* u32 ns of a flow's share before CN */
	TCA_CAROUSEL_FLOW_LIMIT_TIME,	/* u32 ns of a flow's share waiting,
					 * without CN, before drops; 0 = none
					 */
	__TCA_CAROUSEL_MAX
};

#define TCA_CAROUSEL_MAX	(__TCA_CAROUSEL_MAX - 1)

/* Class options, nested in TCA_OPTIONS of a class. */
enum {
	TCA_CAROUSEL_CLASS_UNSPEC,
	TCA_CAROUSEL_CLASS_RATE,	/* u64 bytes/s, required on add */
	TCA_CAROUSEL_CLASS_BURST,	/* u32 bytes, default 0 */
	TCA_CAROUSEL_CLASS_PAD,
	__TCA_CAROUSEL_CLASS_MAX
};

#define TCA_CAROUSEL_CLASS_MAX	(__TCA_CAROUSEL_CLASS_MAX - 1)

/*
 * Statistics: TCA_STATS_APP, of the qdisc and of each class, is a nest of
 * attributes.  The first is TCA_CAROUSEL_XSTATS_KIND and says whose they
 * are; each counter after it is a u64, and a reader skips what it does
 * not know, so counters can be added without a size to agree on.
 */
enum {
	TCA_CAROUSEL_XSTATS_UNSPEC,
	TCA_CAROUSEL_XSTATS_PAD,
	TCA_CAROUSEL_XSTATS_KIND,		/* u32, first: whose */
	TCA_CAROUSEL_XSTATS_WHEEL_PACKETS,	/* packets in the wheel now */
	TCA_CAROUSEL_XSTATS_HORIZON_DROPS,	/* dropped: beyond horizon */
	TCA_CAROUSEL_XSTATS_HORIZON_CAPS,	/* capped to now + horizon */
	TCA_CAROUSEL_XSTATS_LIMIT_DROPS,	/* dropped: limit reached */
	TCA_CAROUSEL_XSTATS_FLOW_LIMIT_DROPS,	/* dropped: flow_limit reached */
	TCA_CAROUSEL_XSTATS_FILTER_DROPS,	/* dropped by a filter action */
	TCA_CAROUSEL_XSTATS_UNCLASSIFIED,	/* packets enqueued with no class */
	TCA_CAROUSEL_XSTATS_TIMER_ARMS,		/* watchdog (re)armed */
	TCA_CAROUSEL_XSTATS_TIMER_FIRES,	/* dequeues at or after expiry */
	TCA_CAROUSEL_XSTATS_TIMER_LATENCY_NS,	/* sum of their lateness */
	TCA_CAROUSEL_XSTATS_TIMER_LATENCY_MAX_NS, /* the largest of them */
	TCA_CAROUSEL_XSTATS_NEXT_DEPARTURE_NS,	/* from now, ~0 = empty */
	TCA_CAROUSEL_XSTATS_CASCADES,		/* packets moved down a level */
	TCA_CAROUSEL_XSTATS_CLASSES,		/* classes configured */
	TCA_CAROUSEL_XSTATS_WHEEL_BYTES,	/* memory of wheel and index */
	TCA_CAROUSEL_XSTATS_WHEEL_LEVELS,	/* levels of the wheel */
	TCA_CAROUSEL_XSTATS_FLOWS,		/* flows with packets queued */
	TCA_CAROUSEL_XSTATS_CE_MARKS,		/* packets marked ECN CE */
	TCA_CAROUSEL_XSTATS_CN_RETURNS,		/* enqueues over a budget */
	TCA_CAROUSEL_XSTATS_ALLOC_DROPS,	/* dropped: no memory */
	TCA_CAROUSEL_XSTATS_CATCHUP_HOLDS,	/* due packets held back */
	TCA_CAROUSEL_XSTATS_LAG_NS,		/* class: its clock - now */
	TCA_CAROUSEL_XSTATS_EFFECTIVE_RATE,	/* class: bytes/s, its share */
	TCA_CAROUSEL_XSTATS_FLOW_TIME_DROPS,	/* dropped: flow_limit_time */
	TCA_CAROUSEL_XSTATS_WAITING_PACKETS,	/* due, out of the wheel, waiting
						 * their class's turn
						 */
	TCA_CAROUSEL_XSTATS_CATCHUP_LOST_NS,	/* class time the catch-up cap
						 * took: the qdisc ran late
						 */
	TCA_CAROUSEL_XSTATS_DELAY_MEAN_NS,	/* class: the delay it added, mean
						 * over the last interval
						 */
	TCA_CAROUSEL_XSTATS_DELAY_MAX_NS,	/* class: and the most */
	TCA_CAROUSEL_XSTATS_DELAY_PACKETS,	/* class: packets in it */
	TCA_CAROUSEL_XSTATS_DELAY_INTERVAL_NS,	/* class: its length */
	__TCA_CAROUSEL_XSTATS_MAX
};

#define TCA_CAROUSEL_XSTATS_MAX	(__TCA_CAROUSEL_XSTATS_MAX - 1)

/*
 * Values of TCA_CAROUSEL_XSTATS_KIND.  Modules before the nest sent the
 * structs below bare, told apart by length alone; a nest starts with this
 * attribute (8 bytes: length 8, type 2, value), and no bare struct can
 * start so: its first field is a packet count or a lag in ns, whose upper
 * 32 bits are never this large.
 */
#define TC_CAROUSEL_XSTATS_QDISC	0x63720001
#define TC_CAROUSEL_XSTATS_CLASS	0x63720002

/*
 * The statistics as the plugin holds them, and as modules before the nest
 * sent them: a qdisc's at least 128 bytes, a class's fewer.  Each X(attr,
 * field) list pairs an attribute with its field.
 */
struct tc_carousel_xstats {
	__u64	wheel_packets;
	__u64	horizon_drops;
	__u64	horizon_caps;
	__u64	limit_drops;
	__u64	flow_limit_drops;
	__u64	filter_drops;
	__u64	unclassified;
	__u64	timer_arms;
	__u64	timer_fires;
	__u64	timer_latency_ns;
	__u64	timer_latency_max_ns;
	__u64	next_departure_ns;
	__u64	cascades;
	__u64	classes;
	__u64	wheel_bytes;
	__u32	wheel_levels;
	__u32	pad;
	__u64	flows;
	__u64	ce_marks;
	__u64	cn_returns;
	__u64	alloc_drops;
	__u64	catchup_holds;		/* only in the nest */
	__u64	flow_time_drops;	/* only in the nest */
	__u64	waiting_packets;	/* only in the nest */
	__u64	catchup_lost_ns;	/* only in the nest */
};

#define TC_CAROUSEL_QDISC_XSTATS(X)					\
	X(WHEEL_PACKETS, wheel_packets)					\
	X(HORIZON_DROPS, horizon_drops)					\
	X(HORIZON_CAPS, horizon_caps)					\
	X(LIMIT_DROPS, limit_drops)					\
	X(FLOW_LIMIT_DROPS, flow_limit_drops)				\
	X(FILTER_DROPS, filter_drops)					\
	X(UNCLASSIFIED, unclassified)					\
	X(TIMER_ARMS, timer_arms)					\
	X(TIMER_FIRES, timer_fires)					\
	X(TIMER_LATENCY_NS, timer_latency_ns)				\
	X(TIMER_LATENCY_MAX_NS, timer_latency_max_ns)			\
	X(NEXT_DEPARTURE_NS, next_departure_ns)				\
	X(CASCADES, cascades)						\
	X(CLASSES, classes)						\
	X(WHEEL_BYTES, wheel_bytes)					\
	X(WHEEL_LEVELS, wheel_levels)					\
	X(FLOWS, flows)							\
	X(CE_MARKS, ce_marks)						\
	X(CN_RETURNS, cn_returns)					\
	X(ALLOC_DROPS, alloc_drops)					\
	X(CATCHUP_HOLDS, catchup_holds)					\
	X(FLOW_TIME_DROPS, flow_time_drops)				\
	X(WAITING_PACKETS, waiting_packets)				\
	X(CATCHUP_LOST_NS, catchup_lost_ns)

struct tc_carousel_class_xstats {
	__u64	lag_ns;
	__u64	effective_rate;
	__u64	flows;
	__u64	delay_mean_ns;		/* only in the nest */
	__u64	delay_max_ns;		/* only in the nest */
	__u64	delay_packets;		/* only in the nest */
	__u64	delay_interval_ns;	/* only in the nest */
};

#define TC_CAROUSEL_CLASS_XSTATS(X)					\
	X(LAG_NS, lag_ns)						\
	X(EFFECTIVE_RATE, effective_rate)				\
	X(FLOWS, flows)							\
	X(DELAY_MEAN_NS, delay_mean_ns)					\
	X(DELAY_MAX_NS, delay_max_ns)					\
	X(DELAY_PACKETS, delay_packets)					\
	X(DELAY_INTERVAL_NS, delay_interval_ns)

#endif /* _UAPI_CAROUSEL_H */

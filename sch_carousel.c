// SPDX-License-Identifier: GPL-2.0
/*
 * Carousel: one timing wheel shapes every flow and every class.
 *
 * Meaning of the word: the packets ride a wheel of time slots, and whatever
 * slot has come round leaves.  The design follows "Carousel: Scalable
 * Traffic Shaping at End Hosts" (Saeed et al., SIGCOMM 2017).
 *
 * Instead of a queue per rate (HTB) or an rb-tree per flow (fq), every
 * packet gets a departure time and goes into one hierarchical timing wheel
 * (see carousel_wheel.h) at the slot for that time.
 *
 * enqueue():
 *   - classify: skb->priority naming one of our classes, else the filters,
 *     else the default class, else none;
 *   - its own time: at = max(skb->tstamp, now), where skb->tstamp is the
 *     EDT time set by TCP pacing, SO_TXTIME or BPF (0 = now); beyond the
 *     horizon: drop or cap; limit and flow_limit: drop;
 *   - a packet stamped for later (or behind such a packet of its flow) is
 *     "pending": it goes into the wheel at its own time, and is charged to
 *     its class only when that time comes, in dequeue;
 *   - any other classified packet is charged now.  Charging gives the
 *     departure from the class clock, a GCRA: start = max(next, now),
 *     departure = max(at, start - burst/rate), next = start + len/rate.
 *     With a qdisc rate (the device ceiling) and active classes whose
 *     rates add up to more than it, len/rate is stretched by (sum of
 *     active rates / ceiling), so each class gets a share proportional to
 *     its rate (the ceiling itself is enforced at dequeue, below);
 *   - insert in the wheel at the departure: O(1); a packet of a class
 *     with nothing queued that may leave now goes on the due list
 *     instead, with no flow (carousel_enqueue_due());
 *   - account it to its flow (a connected socket, else a flow hash, in
 *     its class, computed only once a second packet of the class is
 *     there to tell apart; see carousel_flow_key()): a flow over its budget
 *     (flow_budget packets and flow_budget_time of its share of the
 *     class) still queues, but the sender gets NET_XMIT_CN, and TCP
 *     enters CWR without a loss;
 *   - past ce_threshold of delay added by us, mark ECN CE.
 *
 * dequeue():
 *   - take the earliest slot from the wheel (bitmap scans, O(1)), or the
 *     due list's head if no earlier; it leaves if its time has come, else
 *     the qdisc watchdog is armed for it.
 *     No periodic timer: idle or not, the only wake-up is the next departure;
 *   - a pending head whose time has come is charged to its class now; if
 *     its class clock puts its departure later, it goes back into the
 *     wheel at that departure.  So the class clock is only ever spent on
 *     the present, in time order (Carousel's chain of timestampers): a
 *     class sends at most burst + rate * W + one packet in any window W,
 *     whatever its senders stamp, and a stamp far ahead holds up no other
 *     flow of its class meanwhile;
 *   - with a ceiling, a due packet also waits for the ceiling's own clock,
 *     which advances by len/ceiling per packet that leaves: times set at
 *     enqueue with a share that has since shrunk cannot add up to more
 *     than the ceiling.
 *
 * Packets keep their socket charge until dequeued, so TCP Small Queues and
 * the socket send buffer hold senders back (Carousel's deferred completion).
 * The flow table knows what each flow holds, from its first packet's
 * enqueue to its last packet's exit, and only exists meanwhile.  TCP
 * sockets are switched to SK_PACING_FQ so that TCP leaves its pacing to
 * the timestamps we honour.
 *
 * Locking: everything runs under the qdisc root lock, as for any qdisc;
 * class and parameter changes take sch_tree_lock().  Classes live in a
 * table of two levels indexed by minor (carousel_class_get()): two loads
 * per lookup.  It is written under RTNL and the root lock both, so the
 * data path and the control path each read it under the lock they hold.
 */

#include <linux/module.h>
#include <linux/types.h>
#include <linux/kernel.h>
#include <linux/jiffies.h>
#include <linux/string.h>
#include <linux/errno.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/hash.h>
#include <linux/math64.h>
#include <linux/bitops.h>
#include <linux/log2.h>
#include <linux/hashtable.h>
#include <linux/timekeeping.h>
#include <net/netlink.h>
#include <net/pkt_sched.h>
#include <net/pkt_cls.h>
#include <net/sock.h>
#include <net/inet_ecn.h>
#include <net/tcp_states.h>

#include "sch_carousel.h"

#define CAROUSEL_FLOW_BITS	12			/* flow hash buckets */
#define CAROUSEL_FLOWS		BIT(CAROUSEL_FLOW_BITS)
/* The key of a flow not told apart yet (carousel_flow_key()) */
#define CAROUSEL_KEY_NONE	0UL

#define CAROUSEL_RATE_MAX	BIT_ULL(40)		/* bytes/s: 8.8 Tbit */
#define CAROUSEL_GRAN_MAX	NSEC_PER_SEC
#define CAROUSEL_SLACK_MAX	NSEC_PER_SEC
#define CAROUSEL_LIMIT_MAX	BIT(24)
#define CAROUSEL_CE_MAX		NSEC_PER_SEC
#define CAROUSEL_BUDGET_T_MAX	NSEC_PER_SEC
#define CAROUSEL_FLOW_T_MAX	(4 * NSEC_PER_SEC)

/*
 * Default flow budget: 2 packets and 60 ms at the flow's share of its
 * class (see carousel_over_budget()).  The packet bound rules with many
 * flows: 200 TCP flows in a 50 Mbit class hold 2 packets each, with no
 * drop from their initial windows on.  The time bound keeps a class of a
 * few flows free: TCP Small Queues already keeps up to two 2-segment
 * skbs (~9 KB, 7 ms at 10 Mbit) below each, and a flow cut by CWR must
 * still outlast the host's stalls.  A flow alone in its class is never
 * over budget.  docs/design.md has the measurements.
 */
#define CAROUSEL_BUDGET_DEFAULT		2
#define CAROUSEL_BUDGET_T_DEFAULT	(60 * NSEC_PER_MSEC)

/*
 * Default bound on what a flow that NET_XMIT_CN cannot slow down keeps
 * waiting its turn: 1 s at its share of its class
 * (carousel_over_time_limit()).  A UDP socket's default send buffer,
 * 208 KiB, is 0.8 s at 2 Mbit for two sockets sharing 4 Mbit: senders
 * that their socket buffer paces stay under it.
 */
#define CAROUSEL_FLOW_T_DEFAULT		NSEC_PER_SEC

struct carousel_class {
/* What enqueue and dequeue touch, first (64 bytes): */
	u64		rate;		/* bytes/s */
	u64		time_next;	/* ns: start of the class's next packet */
	u64		release;	/* ns: its release clock (catch-up cap) */
	u64		release_rate;	/* bytes/s of that clock: the higher of
					 * its rates since it was last idle
					 */
	u32		burst;		/* bytes */
	u32		qlen;		/* packets queued */
	u32		pending;	/* of them, in the wheel, not charged */
	u32		waiting;	/* of them, due, waiting their turn
					 * out of the wheel (carousel_wait())
					 */
	u32		held;		/* charged, held by its release clock */
	u32		backlog;	/* bytes queued */
	u32		flows:25;	/* its flows with packets queued */
	u32		dead:1;		/* deleted, freed when qlen drops to 0 */
	u32		rerate:1;	/* rate changed while active: clamp the
					 * clock when no charged packet is left
					 */
	u32		unkeyed:1;	/* holds a flow of CAROUSEL_KEY_NONE,
					 * solo's (carousel_flow_rekey())
					 */
	u16		minor;		/* classid is sch->handle:minor */
	u16		tx_rem;		/* carousel_tx_rem() of time_next */

/* Counted as packets leave, and read by dumps and its estimator: */
	struct gnet_stats_basic_sync bstats;	/* sent, in segments */
	struct net_rate_estimator __rcu *rate_est;
	u32		drops;
	u32		filter_cnt;	/* filters bound to this class */
	u64		credit;		/* ns: burst at rate (carousel_credit()):
					 * read by every charge and release; the
					 * first 64 bytes are full
					 */
	u32		catchup_bytes;	/* sent at rate in the catch-up cap */
	u32		lingering;	/* its flows on q->lingering */

/* Its flows with packets waiting, in turn (carousel_next_waiting()): */
	struct list_head new_flows;	/* below their share, served first */
	struct list_head old_flows;
	u64		vtime;		/* virtual time of its turns, in
					 * bytes << CAROUSEL_VSHIFT
					 * (carousel_next_waiting())
					 */

/* The delay it adds to its packets, by interval (carousel_delay_note()): */
	u64		delay_sum;	/* ns, in interval delay_epoch */
	u32		delay_epoch;	/* now >> CAROUSEL_DELAY_SHIFT */
	u32		delay_cnt;	/* packets charged in it */
	u32		delay_max;	/* us, the most of them */
	u32		last_mean;	/* us, over the interval before */
	u32		last_max;	/* us */
	u32		last_cnt;

	struct sk_buff	*solo;		/* while unkeyed: its one packet */
};

/*
 * A flow: the packets of one connected socket (or else of one flow hash,
 * see carousel_flow_key()) in one class, while any of them is in the
 * wheel.  It is in the table only then: added by its first packet's
 * enqueue, removed when its last packet leaves, so the table holds
 * the flows the wheel holds.  The one exception is a flow that has had
 * more than its share of a busy class's turns: it lingers in the table,
 * with no packet, until the class's virtual time has caught up with it
 * (carousel_flow_linger()).  The object itself goes to a small
 * stash of the qdisc's (q->flow_stash) and serves the next new flow: a
 * flow that comes and goes with each packet, as every flow of an idle
 * class does, costs no slab allocation.
 */
struct carousel_flow {
	struct hlist_node	node;		/* in q->flow_hash[] or in
						 * q->flow_stash
						 */
	unsigned long		key;		/* socket, hash << 1 | 1, or
						 * CAROUSEL_KEY_NONE: the one
						 * packet of its class, not
						 * yet hashed
						 */
	struct carousel_class	*cl;		/* NULL: unclassified */
	u32			qlen;		/* packets in the wheel */
	u32			pending;	/* of them, not yet charged */
	u32			backlog;	/* bytes in the wheel */
	u32			skbs;		/* packets as handed over: a
						 * split GSO packet counts once
						 */
	u64			tail;		/* departure of its last charged */

/* Its packets waiting for their class's turn, a FIFO linked by skb->next: */
	struct list_head	turn;		/* on its class's new_flows or
						 * old_flows while any waits; on
						 * q->lingering while it lingers
						 */
	struct sk_buff		*wait_head;
	struct sk_buff		*wait_tail;
	u32			wait_bytes;
	s32			deficit;	/* bytes it may still send in
						 * this round
						 */
	u64			vfinish;	/* virtual time its last turn
						 * ended (cl->vtime's)
						 */
};

static struct kmem_cache *carousel_flow_cachep __read_mostly;

/*
 * The class table: 256 pages of 256 class pointers each, by minor.  A
 * page is allocated with its first class (2 KiB, 8 B a class when the
 * minors are dense) and freed with its last: unlinked under the root
 * lock, which every lookup of the data path holds.
 */
#define CAROUSEL_CLS_PAGE_BITS	8
#define CAROUSEL_CLS_PAGE	BIT(CAROUSEL_CLS_PAGE_BITS)
#define CAROUSEL_CLS_PAGES	(BIT(16) / CAROUSEL_CLS_PAGE)
/* A minor's page in the table, and its slot in that page. */
#define CAROUSEL_CLS_PG(minor)		((minor) >> CAROUSEL_CLS_PAGE_BITS)
#define CAROUSEL_CLS_SLOT(minor)	((minor) & (CAROUSEL_CLS_PAGE - 1))

struct carousel_class_page {
	struct carousel_class	*cl[CAROUSEL_CLS_PAGE];
};

struct carousel_sched_data {
/* Read mostly: */
	struct carousel_wheel	*wheel;
	struct hlist_head	*flow_hash;	/* CAROUSEL_FLOWS buckets */
	struct tcf_proto __rcu	*filter_list;
	struct tcf_block	*block;
	u64			rate;		/* ceiling, bytes/s, 0 = none */
	u64			horizon;	/* ns */
	u32			default_minor;
	u32			flow_limit;
	u32			flow_budget;	/* packets */
	u32			flow_budget_time; /* ns */
	u32			flow_limit_time; /* ns, 0 = none */
	u32			ce_threshold;	/* ns, 0 = off */
	u32			timer_slack;	/* ns */
	u8			horizon_drop;
	u8			pacing_shift;	/* for TCP sockets, 0 = theirs */

/* Read/write: */
	u64			active_rate;	/* sum of rates of active classes,
						 * kept under a ceiling only
						 */
	u64			ceil_next;	/* ns: the ceiling's next departure */
	u64			ceil_rem;	/* of len * NSEC_PER_SEC / rate */
	u64			timer_expiry;	/* armed watchdog expiry, 0 = none */
	u64			clock;		/* the last carousel_clock() */
	u32			nr_classes;
	u32			nr_flows;
	struct hlist_head	flow_stash;	/* flow objects to reuse */
	u32			nr_stashed;	/* objects in flow_stash */
	u32			nr_lingering;	/* flows in lingering */
	struct list_head	lingering;	/* flows kept with no packet,
						 * oldest first
						 */
	u32			nr_waiting;	/* packets waiting their turn */
	u32			skbs;		/* packets as handed over */
	u32			nr_due;		/* packets on the due list */
	struct sk_buff		*due_head;	/* the due list, linked by
						 * skb->next, oldest first
						 * (carousel_enqueue_due())
						 */
	struct sk_buff		*due_tail;
	struct qdisc_watchdog	watchdog;

/* Statistics, under the root lock: */
	u64			stat_horizon_drops;
	u64			stat_horizon_caps;
	u64			stat_limit_drops;
	u64			stat_flow_limit_drops;
	u64			stat_flow_time_drops;
	u64			stat_filter_drops;
	u64			stat_unclassified;
	u64			stat_alloc_drops;
	u64			stat_ce_marks;
	u64			stat_cn_returns;
	u64			stat_catchup_holds;
	u64			stat_catchup_lost;	/* ns */
	u64			stat_timer_arms;
	u64			stat_timer_fires;
	u64			stat_timer_latency;
	u64			stat_timer_latency_max;

/* The class table (2 KiB), under RTNL and the root lock: */
	struct carousel_class_page *class_pages[CAROUSEL_CLS_PAGES];
};

/* The class of a minor (0..0xffff), or NULL. */
static struct carousel_class *
carousel_class_get(const struct carousel_sched_data *q, u32 minor)
{
	const struct carousel_class_page *p;

	p = q->class_pages[CAROUSEL_CLS_PG(minor)];
	return p ? p->cl[CAROUSEL_CLS_SLOT(minor)] : NULL;
}

/* The class of the lowest minor >= *minor, which *minor is set to. */
static struct carousel_class *
carousel_class_next(const struct carousel_sched_data *q, u32 *minor)
{
	u32 m;

	for (m = *minor; m < BIT(16); m++) {
		const struct carousel_class_page *p;
		struct carousel_class *cl;

		p = q->class_pages[CAROUSEL_CLS_PG(m)];
		if (!p) {
			m |= CAROUSEL_CLS_PAGE - 1;	/* to the next page */
			continue;
		}
		cl = p->cl[CAROUSEL_CLS_SLOT(m)];
		if (cl) {
			*minor = m;
			return cl;
		}
	}
	return NULL;
}

/* In order of minor; under RTNL or the root lock. */
#define carousel_for_each_class(q, minor, cl)				\
	for ((minor) = 0; ((cl) = carousel_class_next((q), &(minor)));	\
	     (minor)++)

static struct carousel_class *carousel_lookup(struct Qdisc *sch, u32 classid)
{
	struct carousel_sched_data *q = qdisc_priv(sch);

	if (TC_H_MAJ(classid) != sch->handle || !TC_H_MIN(classid))
		return NULL;
	return carousel_class_get(q, TC_H_MIN(classid));
}

/* The class of a packet in the wheel or the due list (NULL: none). */
static struct carousel_class *carousel_skb_class(struct sk_buff *skb)
{
	struct carousel_skb_cb *cb = carousel_cb(skb);

	return cb->flowless ? cb->cl : cb->fl->cl;
}

/* Packets with a place in time: in the wheel or on the due list. */
static u32 carousel_placed(const struct carousel_sched_data *q)
{
	return q->wheel->count + q->nr_due;
}

/*
 * The filters' verdict on skb, else the default class (*clp, NULL for
 * none): carousel_classify() when skb->priority names none of our
 * classes.  Out of line, so that its tcf_result (and the stack
 * realignment it brings) stays off the path of packets that skb->priority
 * classifies.
 */
static noinline bool carousel_classify_slow(struct sk_buff *skb,
					    struct Qdisc *sch,
					    struct carousel_class **clp,
					    int *qerr)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_class *cl;
	struct tcf_result res;
	struct tcf_proto *fl;
	int result;

	fl = rcu_dereference_bh(q->filter_list);
	if (fl) {
		result = tcf_classify(skb, NULL, fl, &res, false);
		if (result >= 0) {
#ifdef CONFIG_NET_CLS_ACT
			switch (result) {
			case TC_ACT_QUEUED:
			case TC_ACT_STOLEN:
			case TC_ACT_TRAP:
				*qerr = NET_XMIT_SUCCESS | __NET_XMIT_STOLEN;
				fallthrough;
			case TC_ACT_SHOT:
				return false;
			}
#endif
			cl = (struct carousel_class *)res.class;
			if (!cl)
				cl = carousel_lookup(sch, res.classid);
			if (cl)
				goto out;
		}
	}

	cl = q->default_minor ? carousel_class_get(q, q->default_minor) : NULL;
out:
	*clp = cl;
	return true;
}

/*
 * HTB's order: skb->priority if it names one of our classes, then the
 * filters, then the default class.  Returns false if a filter action took
 * the packet (*qerr says how); *clp is NULL for an unclassified packet.
 */
static bool carousel_classify(struct sk_buff *skb, struct Qdisc *sch,
			      struct carousel_class **clp, int *qerr)
{
	*qerr = NET_XMIT_SUCCESS | __NET_XMIT_BYPASS;
	*clp = carousel_lookup(sch, skb->priority);
	return *clp || carousel_classify_slow(skb, sch, clp, qerr);
}

/*
 * skb->tstamp, the EDT stamp, on CLOCK_MONOTONIC (0: none).  A stamp on
 * TAI or REALTIME is moved to it: an SO_TXTIME socket set to that clock,
 * or (6.11+) a packet marked so, from a container through a veth.  Read
 * as monotonic, a TAI stamp lies decades ahead and is dropped at the
 * horizon.  The skb's own mark comes first; without one, an SO_TXTIME
 * socket's clock; anything else is monotonic, as fq reads it.  A stamp
 * that falls before boot is due now.
 */
static u64 carousel_edt(const struct sk_buff *skb)
{
	enum tk_offsets offs;
	u64 t = skb->tstamp;
	s64 mono;
	int clock;

	if (!t)
		return 0;
	clock = carousel_tstamp_clock(skb);
	if (clock < 0) {
		const struct sock *sk = skb->sk;

		clock = CLOCK_MONOTONIC;
		if (sk && sk_fullsock(sk) && sock_flag(sk, SOCK_TXTIME))
			clock = READ_ONCE(sk->sk_clockid);
	}
	switch (clock) {
	case CLOCK_TAI:
		offs = TK_OFFS_TAI;
		break;
	case CLOCK_REALTIME:
		offs = TK_OFFS_REAL;
		break;
	default:
		return t;
	}
	/* (the offset is negative on a box whose wall clock is unset) */
	mono = (s64)t - ktime_mono_to_any(0, offs);
	return mono > 0 ? mono : 1;
}

/*
 * Is sk a flow of its own?  Not a listener or request socket (its SYN-ACKs
 * are no flow yet, and a SYN flood must not become one), and not a socket
 * in TCP_CLOSE: an unconnected UDP socket sending to many peers, or a
 * per-CPU control socket sending RSTs, TIME_WAIT ACKs and ICMP errors for
 * everyone.  As in fq, their packets are keyed by flow hash instead.
 * Only fields of sock_common are read: sk may be a request or timewait
 * socket.
 */
static bool carousel_sk_is_flow(const struct sock *sk)
{
	return !sk_listener(sk) && READ_ONCE(sk->sk_state) != TCP_CLOSE;
}

/*
 * The clock, read about once a packet.  Enqueue and dequeue leave their
 * readings in q->clock, and a dequeue starts from the last one (unless a
 * watchdog is armed, whose lateness it times).  That reading may be
 * old, never ahead: a packet due by it is due, so letting a due packet go
 * on it sends nothing early.  It decides nothing else.  Before a dequeue
 * keeps a packet back (not due, held by its release clock, or by the
 * ceiling) or charges one (a pending packet; a saturated class's next
 * turn), it reads the clock (carousel_refresh()).  Its release clock
 * (carousel_release()) takes an old reading only for a packet alone in
 * its class and no longer than the class sends in the catch-up cap C:
 * however old the reading, the release clock then ends up at most that
 * packet's time (<= C) behind where a fresh one would put it, and what
 * the class charges after the packet leaves starts no earlier than that
 * instant, so in any window the class still sends at most burst + rate *
 * (window + C) + one packet (docs/design.md, "Catch-up").  An old reading
 * also advances the wheel's cursor and cascades less far; the cursor may
 * be ahead of it (a dump or a change moved it), and a dequeue never moves
 * it back.  In a qdisc run, so, the enqueue's reading serves the dequeue
 * that sends its packet.
 */
static __always_inline u64 carousel_clock(struct carousel_sched_data *q)
{
	q->clock = ktime_get_ns();
	return q->clock;
}

/* If *now is an old reading (!*fresh), read the clock; true if it did. */
static __always_inline bool carousel_refresh(struct carousel_sched_data *q,
					     u64 *now, bool *fresh)
{
	if (*fresh)
		return false;
	*now = carousel_clock(q);
	*fresh = true;
	return true;
}

static struct hlist_head *carousel_flow_bucket(struct carousel_sched_data *q,
					       unsigned long key,
					       const struct carousel_class *cl)
{
	return &q->flow_hash[hash_long(key ^ (unsigned long)cl,
				       CAROUSEL_FLOW_BITS)];
}

/*
 * Flows kept lingering at most (carousel_flow_linger()): 512 objects of
 * 104 bytes, 52 KiB a qdisc.  Virtual times count bytes in 1/1024ths: a
 * turn of 64 bytes among 50,000 flows still moves its class's on.
 */
#define CAROUSEL_LINGER_MAX	512
#define CAROUSEL_VSHIFT		10

/*
 * Is virtual time a past b?  Virtual times wrap (2^54 bytes, 17 days of
 * a saturated 100 Gbit class): they are only compared near each other.
 */
static bool carousel_vafter(u64 a, u64 b)
{
	return (s64)(a - b) > 0;
}

/* A lingering flow has a packet again: it counts as a flow of the wheel. */
static noinline void carousel_flow_unlinger(struct carousel_sched_data *q,
					    struct carousel_flow *fl)
{
	list_del_init(&fl->turn);
	q->nr_lingering--;
	fl->cl->lingering--;
	q->nr_flows++;
	fl->cl->flows++;
	/* its last departure is past, unless that packet was dropped */
	fl->tail = 0;
}

/* The flow of (key, cl), created if it has no packet queued yet. */
static __always_inline struct carousel_flow *
carousel_flow_get(struct carousel_sched_data *q, unsigned long key,
		  struct carousel_class *cl)
{
	struct hlist_head *head = carousel_flow_bucket(q, key, cl);
	struct carousel_flow *fl;

	hlist_for_each_entry(fl, head, node) {
		if (fl->key == key && fl->cl == cl) {
			if (unlikely(!fl->qlen))
				carousel_flow_unlinger(q, fl);
			return fl;
		}
	}
	if (q->nr_stashed) {
		/* As its last packet left it: nothing queued, no turn. */
		fl = hlist_entry(q->flow_stash.first, struct carousel_flow,
				 node);
		hlist_del(&fl->node);
		q->nr_stashed--;
	} else {
		fl = kmem_cache_alloc(carousel_flow_cachep,
				      GFP_ATOMIC | __GFP_NOWARN);
		if (unlikely(!fl))
			return NULL;
		fl->qlen = 0;
		fl->skbs = 0;
		fl->pending = 0;
		fl->backlog = 0;
		INIT_LIST_HEAD(&fl->turn);
		fl->wait_head = NULL;
		fl->wait_bytes = 0;
	}
	fl->key = key;
	fl->cl = cl;
	fl->tail = 0;
	fl->deficit = 0;
	fl->vfinish = cl ? cl->vtime : 0;	/* caught up */
	hlist_add_head(&fl->node, head);
	q->nr_flows++;
	if (cl)
		cl->flows++;
	return fl;
}

/*
 * Flow objects kept for reuse: enough for the flows that start and end
 * within one qdisc run, a few KiB.  Beyond it a departing flow's object
 * goes back to the slab.  None under KASAN, which could not see a use of
 * a stashed object.
 */
#define CAROUSEL_FLOW_STASH	(IS_ENABLED(CONFIG_KASAN) ? 0 : 64)

/* A flow object out of the table goes to the stash, else to the slab. */
static __always_inline void carousel_flow_free(struct carousel_sched_data *q,
					       struct carousel_flow *fl)
{
	if (q->nr_stashed < CAROUSEL_FLOW_STASH) {
		hlist_add_head(&fl->node, &q->flow_stash);
		q->nr_stashed++;
		return;
	}
	kmem_cache_free(carousel_flow_cachep, fl);
}

/* A lingering flow is forgotten: from now on it is new again. */
static void carousel_flow_forget(struct carousel_sched_data *q,
				 struct carousel_flow *fl)
{
	list_del_init(&fl->turn);
	q->nr_lingering--;
	fl->cl->lingering--;
	hlist_del(&fl->node);
	carousel_flow_free(q, fl);
}

/* Forget the oldest lingering flows while their classes have caught up. */
static void carousel_linger_reclaim(struct carousel_sched_data *q)
{
	struct carousel_flow *old;

	while (!list_empty(&q->lingering)) {
		old = list_first_entry(&q->lingering, struct carousel_flow,
				       turn);
		if (carousel_vafter(old->vfinish, old->cl->vtime))
			return;
		carousel_flow_forget(q, old);
	}
}

/*
 * Flow fl, whose last packet has just left, had a turn of its busy
 * class that ends past the class's virtual time
 * (carousel_next_waiting()): it stays in the table, with no packet, so
 * that if it comes back more than its quantum ahead of the others it is
 * not taken for a new flow (carousel_wait()).  A sender cannot then get
 * the new flows' priority, beyond its share, by spreading its packets
 * over flows that each go idle between them.  The oldest lingering flows go
 * first: those that their class's turns have caught up with (they would
 * come back new anyway) and, beyond CAROUSEL_LINGER_MAX, any, as if
 * their class had caught up.  A flow with no key (its class's one
 * packet) or of a deleted class does not linger.  True if fl lingers.
 */
static noinline bool carousel_flow_linger(struct carousel_sched_data *q,
					  struct carousel_flow *fl)
{
	struct carousel_flow *old;

	if (fl->key == CAROUSEL_KEY_NONE || fl->cl->dead)
		return false;
	carousel_linger_reclaim(q);
	if (q->nr_lingering >= CAROUSEL_LINGER_MAX) {
		old = list_first_entry(&q->lingering, struct carousel_flow,
				       turn);
		carousel_flow_forget(q, old);
	}
	list_add_tail(&fl->turn, &q->lingering);
	q->nr_lingering++;
	fl->cl->lingering++;
	return true;
}

/* Forget every lingering flow of class cl, or with cl NULL, all of them. */
static void carousel_forget_lingering(struct carousel_sched_data *q,
				      const struct carousel_class *cl)
{
	struct carousel_flow *fl, *tmp;

	list_for_each_entry_safe(fl, tmp, &q->lingering, turn) {
		if (!cl || fl->cl == cl)
			carousel_flow_forget(q, fl);
	}
}

/*
 * A flow whose last packet has left goes, or lingers
 * (carousel_flow_linger()).  (It has no place in its class's turns: a
 * flow is in them only while a packet of it waits.)
 */
static __always_inline void carousel_flow_put(struct carousel_sched_data *q,
					      struct carousel_flow *fl)
{
	if (fl->qlen)
		return;
	/* carousel_flow_get() reuses a stashed object as it is left here */
	DEBUG_NET_WARN_ON_ONCE(fl->skbs || fl->pending || fl->backlog ||
			       fl->wait_head || fl->wait_bytes ||
			       !list_empty(&fl->turn));
	q->nr_flows--;
	if (fl->cl) {
		fl->cl->flows--;
		if (fl->key == CAROUSEL_KEY_NONE) {
			fl->cl->unkeyed = 0;
			fl->cl->solo = NULL;
		}
		if (unlikely(carousel_vafter(fl->vfinish, fl->cl->vtime)) &&
		    carousel_flow_linger(q, fl))
			return;
	}
	hlist_del(&fl->node);
	carousel_flow_free(q, fl);
}

/*
 * Transmission time of len bytes at the class's share of the ceiling,
 * saturated far beyond any horizon: with a tiny ceiling under a fast
 * backlog, len/rate * active/ceiling does not fit in 64 bits (and
 * mul_u64_u64_div_u64() would fault on x86).
 */
#define CAROUSEL_TX_MAX		BIT_ULL(53)

/*
 * The catch-up cap: how much of a class's time a late watchdog (or a
 * stopped queue) may release at once, beyond its burst.  A packet charged
 * late starts its class clock no earlier than this before now, and the
 * release clock (carousel_release()) holds charged packets that fell due
 * meanwhile to the same; lateness beyond it is time the class loses, not
 * a burst.
 */
#define CAROUSEL_CATCHUP_NS	(16 * NSEC_PER_MSEC)

/*
 * ns of class time an idle class may spend at once: its burst.  Every
 * packet's charge and release reads it, so it is computed when the rate
 * or the burst is set (carousel_set_rate()), not divided out each time.
 */
static u64 carousel_credit(const struct carousel_class *cl)
{
	return cl->credit;
}

static void carousel_set_rate(struct carousel_class *cl, u64 rate, u32 burst)
{
	cl->rate = rate;
	cl->burst = burst;
	cl->credit = burst ? div64_u64((u64)burst * NSEC_PER_SEC, rate) : 0;
	/* (a rate is at most 2^40 bytes/s: no overflow) */
	cl->catchup_bytes = min_t(u64, div_u64(rate * (CAROUSEL_CATCHUP_NS /
							NSEC_PER_USEC),
						USEC_PER_SEC), U32_MAX);
}

/*
 * A class is active while it holds a due packet: charged (its clock has
 * set its departure), or waiting its turn to be.  Packets still waiting
 * for their own EDT stamps do not count: a datagram stamped seconds ahead
 * takes no share of the ceiling from the class's siblings meanwhile.
 */
static bool carousel_class_active(const struct carousel_class *cl)
{
	return cl->qlen > cl->pending;
}

/*
 * Keep active_rate after cl's counts changed from was_active.  Only a
 * ceiling reads it: without one it is not kept, and a change of the ceiling
 * sums it afresh (carousel_change()).
 */
static void carousel_class_activity(struct carousel_sched_data *q,
				    const struct carousel_class *cl,
				    bool was_active)
{
	bool active;

	if (!q->rate)
		return;
	active = carousel_class_active(cl);
	if (active == was_active || cl->dead)
		return;
	if (active)
		q->active_rate += cl->rate;
	else
		q->active_rate -= cl->rate;
}

/* Packets of cl with a departure: in the wheel, not pending. */
static u32 carousel_class_charged(const struct carousel_class *cl)
{
	return cl->qlen - cl->pending - cl->waiting;
}

/* Would a packet of cl charged at `now' wait for its clock, burst spent? */
static bool carousel_class_ahead(const struct carousel_class *cl, u64 now)
{
	return cl->time_next > now + carousel_credit(cl);
}

/*
 * Is class cl saturated at `now': packets of it are waiting their turn,
 * or a packet charged now would have to wait for its clock while one it
 * charged before is still in the wheel?  A busy class does not charge a
 * due packet as it arrives: the packet waits out of the wheel, in its
 * flow's FIFO, until the class's next departure gives its flow a turn
 * (carousel_refill()).  So a saturated class keeps one packet charged
 * ahead of now, not its whole backlog.
 */
static bool carousel_class_busy(const struct carousel_class *cl, u64 now)
{
	if (cl->waiting)
		return true;
	return carousel_class_charged(cl) && carousel_class_ahead(cl, now);
}

/* Sum of the rates of the active classes, counting cl as one. */
static u64 carousel_active_rate(const struct carousel_sched_data *q,
				const struct carousel_class *cl)
{
	return q->active_rate + (carousel_class_active(cl) ? 0 : cl->rate);
}

/* With rem, the remainder is carried (carousel_tx_rem()). */
static __always_inline u64
carousel_tx_ns(const struct carousel_sched_data *q,
	       const struct carousel_class *cl, u32 len, u16 *rem)
{
	u64 active, ns;

	if (rem)
		ns = carousel_tx_rem(len, cl->rate, rem);
	else
		ns = div64_u64((u64)len * NSEC_PER_SEC, cl->rate);

	/* (the sum of active rates is only read with a ceiling) */
	active = q->rate ? carousel_active_rate(q, cl) : 0;
	if (active > q->rate) {
		/* ratio > active / rate, so ns * ratio bounds the product */
		u64 ratio = div64_u64(active, q->rate) + 1;

		if (ns >= div64_u64(CAROUSEL_TX_MAX, ratio))
			return CAROUSEL_TX_MAX;
		ns = mul_u64_u64_div_u64(ns, active, q->rate);
	}
	return min(ns, CAROUSEL_TX_MAX);
}

static u64 carousel_effective_rate(const struct carousel_sched_data *q,
				   const struct carousel_class *cl)
{
	u64 active = carousel_active_rate(q, cl);

	if (q->rate && active > q->rate)
		return mul_u64_u64_div_u64(cl->rate, q->rate, active);
	return cl->rate;
}

/*
 * TCP keeps at most about 1ms of its pacing rate below it (TCP Small
 * Queues, and the size of its TSO bursts): 2^-sk_pacing_shift seconds.
 * A flow_budget_time shorter than that is the operator asking for less,
 * so the socket's shift follows it, the knob mac80211 turns the other way.
 */
#define CAROUSEL_SHIFT_DEFAULT	10
#define CAROUSEL_SHIFT_MAX	16

static u8 carousel_pacing_shift(u32 budget_ns)
{
	u32 shift;

	if (!budget_ns)
		return 0;
	shift = order_base_2(DIV_ROUND_UP(NSEC_PER_SEC, budget_ns));
	if (shift <= CAROUSEL_SHIFT_DEFAULT)
		return 0;
	return min_t(u32, shift, CAROUSEL_SHIFT_MAX);
}

static void carousel_set_pacing(const struct carousel_sched_data *q,
				struct sock *sk)
{
	if (READ_ONCE(sk->sk_pacing_status) != SK_PACING_FQ) {
		/* Pairs with smp_load_acquire() in tcp_needs_internal_pacing():
		 * from now on TCP leaves the pacing of its EDT stamps to us.
		 */
		smp_store_release(&sk->sk_pacing_status, SK_PACING_FQ);
	}
	if (q->pacing_shift)
		sk_pacing_shift_update(sk, q->pacing_shift);
}

/*
 * Flows without a socket of their own are told apart by at most this many
 * hash values, as fq's orphan_mask does: a socket sending to many peers,
 * or forwarded traffic, holds at most 1024 flows per class.
 */
#define CAROUSEL_HASH_MASK	1023

static unsigned long carousel_hash_key(struct sk_buff *skb)
{
	return (skb_get_hash(skb) & CAROUSEL_HASH_MASK) << 1 | 1;
}

/*
 * The flow key of a packet: its socket if that is a flow of its own, else
 * its flow hash, tagged in bit 0 (never set in a socket pointer).  The
 * socket is only compared, never dereferenced later; packets charged to
 * it keep it alive while they wait.  Only a socket that is its own flow
 * is told that we pace it (SK_PACING_FQ, and its pacing shift), as fq
 * does: a listener's setting would pass to every child it accepts.  *tcp
 * says whether the sender is a TCP socket, the one sender NET_XMIT_CN is
 * good for (carousel_enqueue()).
 *
 * A packet with no socket flow and no hash yet that is to be the only
 * packet of its class (lone) needs no key: there is no other flow to tell
 * it from.  It gets CAROUSEL_KEY_NONE, and the flow dissector is not run
 * for it; the next packet of its class hashes it first
 * (carousel_flow_rekey()).
 */
static unsigned long carousel_flow_key(const struct carousel_sched_data *q,
				       struct sk_buff *skb, bool lone,
				       bool *tcp)
{
	struct sock *sk = skb->sk;

	*tcp = false;
	if (!sk || !carousel_sk_is_flow(sk)) {
		if (lone && !skb->l4_hash && !skb->sw_hash)
			return CAROUSEL_KEY_NONE;
		return carousel_hash_key(skb);
	}
	if (sk_fullsock(sk)) {
		carousel_set_pacing(q, sk);
		*tcp = sk_is_tcp(sk);
	}
	return (unsigned long)sk;
}

/*
 * Class cl holds a flow of CAROUSEL_KEY_NONE (carousel_flow_key()), of its
 * one packet cl->solo, and a packet of cl comes: the flow gets its packet's
 * hash key first, so that the newcomer finds it if they are one flow.
 */
static void carousel_flow_rekey(struct carousel_sched_data *q,
				struct carousel_class *cl)
{
	struct carousel_flow *fl = carousel_cb(cl->solo)->fl;

	cl->unkeyed = 0;
	if (WARN_ON_ONCE(fl->key != CAROUSEL_KEY_NONE || fl->cl != cl))
		return;
	hlist_del(&fl->node);
	fl->key = carousel_hash_key(cl->solo);
	hlist_add_head(&fl->node, carousel_flow_bucket(q, fl->key, cl));
}

/* A packet's charge to its class: its departure, and the class clock after. */
struct carousel_charge {
	u64	depart;		/* 0: not charged (pending, or no class) */
	u64	next;
	u64	lost;		/* ns the catch-up cap took */
	u16	rem;
};

/*
 * The departure of a packet of len bytes whose own time is `at' (its EDT
 * stamp, or its arrival), charged to class cl at `now' (>= at), and in
 * *next and *rem the class clock after it.  The class spends [start,
 * *next) on it, from start = max(clock, at, now - catch-up); it may
 * leave up to its burst credit before start, never before `at', and
 * never before `tail', its flow's last departure (0: none): a burst
 * credit grown by a class change must not let it overtake its flow's
 * queued packets.  In *lost, what the catch-up cap takes from a
 * backlogged class (its clock not behind `at'): the qdisc ran that late,
 * and the class loses that time (carousel_charged() counts it).
 */
static __always_inline u64
carousel_departure(const struct carousel_sched_data *q,
		   const struct carousel_class *cl, u64 tail, u32 len,
		   u64 at, u64 now, u64 *next, u16 *rem, u64 *lost)
{
	u64 start = max(cl->time_next, at);
	u64 credit = carousel_credit(cl);

	*lost = 0;
	if (unlikely(now > start + CAROUSEL_CATCHUP_NS)) {
		if (cl->time_next >= at)
			*lost = now - CAROUSEL_CATCHUP_NS - start;
		start = now - CAROUSEL_CATCHUP_NS;
	}

	*rem = cl->tx_rem;
	*next = start + carousel_tx_ns(q, cl, len, rem);
	if (start > credit && start - credit > at)
		at = start - credit;
	return max(at, tail);
}

/*
 * The release clock of class cl (carousel_release()): the earliest a
 * packet of it may be released at `now', and the clock once len bytes
 * have been, from there.
 */
static __always_inline u64
carousel_release_start(const struct carousel_class *cl, u64 now)
{
	u64 back = carousel_credit(cl) + CAROUSEL_CATCHUP_NS;

	return max(cl->release, now > back ? now - back : 0);
}

static __always_inline u64
carousel_release_next(const struct carousel_class *cl, u64 start, u32 len)
{
	return start + div64_u64((u64)len * NSEC_PER_SEC, cl->release_rate);
}

/*
 * After a rate change (the class's own, or the ceiling's), a class clock
 * may stand far ahead of now: under a mistyped rate 8bit one packet cost
 * its class 24 minutes, and every packet after it was a horizon drop.  An
 * inactive class's clock (no charged packet queued) is clamped to what
 * the new rate allows a class that has just sent: its burst credit and
 * one MTU-sized packet ahead of now.  Normal debt stays (a change is no
 * fresh burst); only the excess goes.  An active class keeps its clock
 * while its charged packets, which keep their times, are queued (or new
 * ones would overtake them), and is clamped when the last has left.
 */
static void carousel_clamp_clock(struct Qdisc *sch, struct carousel_class *cl,
				 u64 now)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	u64 max = now + carousel_credit(cl) +
		  carousel_tx_ns(q, cl, psched_mtu(qdisc_dev(sch)), NULL);

	cl->rerate = 0;
	if (cl->time_next > max)
		cl->time_next = max;
	/* no packet of the old rate is left: the clock takes the new one */
	cl->release_rate = cl->rate;
	if (!cl->held)
		cl->release = 0;	/* the class clock bounds what it sends */
}

static void carousel_rerate(struct Qdisc *sch, struct carousel_class *cl,
			    u64 now)
{
	/* Pending and waiting packets have no departure yet: they cannot be
	 * overtaken.
	 */
	if (carousel_class_charged(cl))
		cl->rerate = 1;
	else
		carousel_clamp_clock(sch, cl, now);
}

static int carousel_drop(struct sk_buff *skb, struct Qdisc *sch,
			 struct carousel_class *cl, u64 *stat,
			 struct sk_buff **to_free)
{
	(*stat)++;
	if (cl)
		cl->drops++;
	return qdisc_drop(skb, sch, to_free);
}

/*
 * Does a flow of class cl that holds `bytes' hold more than `packets'
 * MTU-sized packets' worth and more than `ns' at its share of the class
 * (the class's effective rate over the flows it has queued)?  Never when
 * the flow is alone in its class.
 */
static bool carousel_over_share(struct Qdisc *sch,
				const struct carousel_class *cl, u32 bytes,
				u32 packets, u32 ns)
{
	struct carousel_sched_data *q = qdisc_priv(sch);

	if (cl->flows < 2 ||
	    bytes <= (u64)packets * psched_mtu(qdisc_dev(sch)))
		return false;
	return carousel_tx_ns(q, cl, bytes, NULL) > div_u64(ns, cl->flows);
}

/*
 * Is flow fl over its budget: more than flow_budget packets' worth of
 * bytes, and more than flow_budget_time at its share of its class (the
 * class's effective rate over the flows it has queued)?  With many flows
 * the packet bound rules, with few the time bound.  A flow alone in its
 * class never is: its sender has the whole class, TCP Small Queues bound
 * what it queues, and a cut in its window would only idle the class
 * through a stall of the host.  The budget is for flows that share.
 */
static bool carousel_over_budget(struct Qdisc *sch,
				 const struct carousel_flow *fl)
{
	struct carousel_sched_data *q = qdisc_priv(sch);

	/* (a flow alone in its class has it all: that test first, inline) */
	return q->flow_budget && fl->cl->flows >= 2 &&
	       carousel_over_share(sch, fl->cl, fl->backlog, q->flow_budget,
				   q->flow_budget_time);
}

/*
 * Would flow fl, with len bytes more, wait longer than flow_limit_time at
 * its share of its class?  Asked of a packet that is to wait its turn
 * (its class is busy), from a flow that NET_XMIT_CN cannot slow down:
 * not TCP, or not at the root.  Such a flow gets no signal but loss, so
 * its queue is bounded where it sits, and it pays for its own excess: a
 * UDP flood from many ports loses its excess packets, the sparse flows
 * of its class keep theirs.  As the budget, it spares a flow alone in
 * its class and one of no more than flow_budget packets.
 */
static bool carousel_over_time_limit(struct Qdisc *sch,
				     const struct carousel_flow *fl, u32 len)
{
	struct carousel_sched_data *q = qdisc_priv(sch);

	return q->flow_limit_time &&
	       carousel_over_share(sch, fl->cl,
				   min_t(u64, (u64)fl->wait_bytes + len, U32_MAX),
				   max(q->flow_budget, 1U), q->flow_limit_time);
}

/*
 * A packet's own time: its EDT stamp, never before now; beyond the
 * horizon capped to it, or 0 (to be dropped) with horizon_drop.
 */
static u64 carousel_own_time(struct carousel_sched_data *q,
			     struct sk_buff *skb, u64 now)
{
	u64 at = carousel_edt(skb);

	/* Beyond the horizon an EDT stamp is dropped or capped, as in fq. */
	if (unlikely(at > now + q->horizon)) {
		if (q->horizon_drop)
			return 0;
		q->stat_horizon_caps++;
		if (at == skb->tstamp)	/* on our clock: say so downstream */
			skb->tstamp = now + q->horizon;
		at = now + q->horizon;
	}
	/* A time already past leaves now; kept as now, it also gives the
	 * ceiling's clock (carousel_ceiling_admit()) no credit from before
	 * the packet existed: an old EDT stamp is no licence to burst.
	 */
	return max(at, now);
}

/*
 * What a class holds uncharged, waiting for its stamps or its turn, is
 * bounded as its clock is: no more than a horizon (and its burst) of its
 * rate, or one class could fill the limit for a horizon.
 */
static bool carousel_backlog_over_horizon(const struct carousel_sched_data *q,
					  const struct carousel_class *cl,
					  u32 len)
{
	return carousel_tx_ns(q, cl, min_t(u64, (u64)cl->backlog + len,
					   U32_MAX), NULL) >
	       q->horizon + carousel_credit(cl);
}

/*
 * Admission of a packet of len bytes, own time `at' (0: beyond the
 * horizon), to class cl (NULL: unclassified), from a sender that
 * NET_XMIT_CN can slow down (cn) or not: NULL, with its flow in *flp
 * and, if it is to be charged now, its charge in *ch (for the
 * packet whole: a split packet's segments are charged one by one), or
 * the counter of the reason it is refused.  A GSO packet that is
 * split is asked once, whole: limit and flow_limit count it as the one
 * packet its sender handed over (as fq, which does not split, counts
 * it), so that a split never turns part of what a socket's buffer let
 * through into drops, and one flow holds at most flow_limit of the
 * qdisc's limit, whatever its packets' sizes.
 *
 * A packet not split (whole), due now, of a class with nothing queued is
 * charged here, before its flow is looked up: if its departure is now
 * and its class's release clock lets it go now, it needs no flow (*flp
 * is NULL: carousel_enqueue_due()).
 */
static __always_inline u64 *
carousel_admit(struct Qdisc *sch, struct carousel_class *cl,
	       unsigned long key, u32 len, u64 at, u64 now,
	       bool cn, bool whole, struct carousel_flow **flp,
	       struct carousel_charge *ch)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_flow *fl;

	ch->depart = 0;
	ch->lost = 0;
	/* (a packet peeked into gso_skb, under a parent that peeks, counts) */
	if (unlikely(q->skbs + skb_queue_len(&sch->gso_skb) >= sch->limit))
		return &q->stat_limit_drops;
	if (unlikely(!at))
		return &q->stat_horizon_drops;
	if (whole && cl && !cl->qlen && at <= now) {
		/*
		 * As below for a new flow or a lingering one, whose last
		 * departure is past: not busy, and no tail.  (A class's
		 * clock a horizon ahead is a drop, as below.)  Nor may its
		 * release clock hold it (carousel_release_start() <= now,
		 * nothing of its class being held: nothing is queued), so
		 * that it never will: that clock moves on only as packets
		 * of the class leave or are held, none of which can come
		 * before this one, and a class change only lowers it.
		 */
		ch->depart = carousel_departure(q, cl, 0, len, at, now,
						&ch->next, &ch->rem, &ch->lost);
		if (ch->depart <= now && cl->release <= now) {
			*flp = NULL;
			return NULL;
		}
		if (unlikely(ch->depart > now + q->horizon))
			return &q->stat_horizon_drops;
	}
	fl = carousel_flow_get(q, key, cl);
	if (unlikely(!fl))
		return &q->stat_alloc_drops;
	*flp = fl;
	/* A new flow has no packet, and flow_limit is at least 1. */
	if (unlikely(fl->skbs >= q->flow_limit))
		goto refuse_flow_limit;
	if (!cl || ch->depart)
		return NULL;
	if (at > now || fl->pending) {
		if (unlikely(carousel_backlog_over_horizon(q, cl, len)))
			goto refuse_horizon;
		return NULL;
	}
	if (carousel_class_busy(cl, now)) {
		/* It is to wait its turn: bounded by its flow's share if only
		 * loss can slow its sender down, and by the horizon.
		 */
		if (!cn && carousel_over_time_limit(sch, fl, len))
			goto refuse_flow_time;
		if (unlikely(carousel_backlog_over_horizon(q, cl, len)))
			goto refuse_horizon;
		return NULL;
	}
	/* A class that has run a horizon ahead of now is overloaded: capping
	 * would send at the arrival rate, so it drops.  (A split packet is
	 * asked for its first segment's departure; the rest follow within
	 * its own length at the class rate.)
	 */
	ch->depart = carousel_departure(q, cl, fl->tail, len, at, now,
					&ch->next, &ch->rem, &ch->lost);
	if (unlikely(ch->depart > now + q->horizon))
		goto refuse_horizon;
	return NULL;

refuse_flow_limit:
	carousel_flow_put(q, fl);
	return &q->stat_flow_limit_drops;
refuse_flow_time:
	carousel_flow_put(q, fl);
	return &q->stat_flow_time_drops;
refuse_horizon:
	carousel_flow_put(q, fl);
	return &q->stat_horizon_drops;
}

/*
 * A class's delay statistics cover intervals of 2^30 ns (1.07 s) of
 * CLOCK_MONOTONIC, the same for all classes; a dump gives the last
 * complete one.  The delay is what the shaper adds to a packet: from its
 * own time (its EDT stamp, or its arrival) to the departure it is
 * charged, waiting for its turn included; a late watchdog's share is the
 * qdisc's timer_latency.  Per packet it costs an add, a compare and, once
 * an interval, a roll-over.
 */
#define CAROUSEL_DELAY_SHIFT	30

static void carousel_delay_roll(struct carousel_class *cl, u32 epoch)
{
	if (cl->delay_epoch + 1 == epoch && cl->delay_cnt) {
		cl->last_mean = div_u64(div_u64(cl->delay_sum, cl->delay_cnt),
					NSEC_PER_USEC);
		cl->last_max = cl->delay_max;
		cl->last_cnt = cl->delay_cnt;
	} else {
		cl->last_mean = 0;
		cl->last_max = 0;
		cl->last_cnt = 0;
	}
	cl->delay_epoch = epoch;
	cl->delay_sum = 0;
	cl->delay_cnt = 0;
	cl->delay_max = 0;
}

static __always_inline void carousel_delay_note(struct carousel_class *cl,
						u64 now, u64 delay)
{
	u32 epoch = now >> CAROUSEL_DELAY_SHIFT;

	if (unlikely(epoch != cl->delay_epoch))
		carousel_delay_roll(cl, epoch);
	cl->delay_sum += delay;
	cl->delay_cnt++;
	if (delay >= (u64)(cl->delay_max + 1) * NSEC_PER_USEC)
		cl->delay_max = min_t(u64, div_u64(delay, NSEC_PER_USEC),
				      U32_MAX - 1);
}

/*
 * skb of class cl, its own time `at', is charged its departure at `now',
 * for good (in the wheel, or leaving): the delay between them is the
 * class's, and past ce_threshold it marks skb CE: the delay we add, not
 * the sender's own pacing, is congestion.  `lost': what the catch-up cap
 * took from the class for it (carousel_departure()).
 */
static __always_inline void
carousel_charged(struct carousel_sched_data *q,
		 struct carousel_class *cl, struct sk_buff *skb,
		 u64 at, u64 depart, u64 now, u64 lost)
{
	u64 delay = depart > at ? depart - at : 0;

	q->stat_catchup_lost += lost;
	carousel_delay_note(cl, now, delay);
	if (q->ce_threshold && delay > q->ce_threshold &&
	    INET_ECN_set_ce(skb))
		q->stat_ce_marks++;
}

/*
 * skb, due, of flow fl in class cl, waits its turn: at the tail of its
 * flow's FIFO, its own time kept in its cb.  A flow that starts to wait
 * with nothing else queued (`fresh': a ping, a DNS query) joins the
 * class's new flows, served first, if it is also below its share: with
 * this packet, its turns end no more than a quantum (or this packet, if
 * longer) past the class's virtual time, so that it takes no more than
 * its quantum of the current round (carousel_next_waiting()).  Any
 * other joins the old ones, with the
 * credit it has left: a bulk flow cannot pass for new by emptying its
 * FIFO, nor a sender by spreading its packets over flows that each go
 * idle between them (carousel_flow_linger()).
 */
static void carousel_wait(struct Qdisc *sch, struct carousel_class *cl,
			  struct carousel_flow *fl, struct sk_buff *skb,
			  bool fresh)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	u32 quantum, len;

	skb->next = NULL;
	if (fl->wait_head)
		fl->wait_tail->next = skb;
	else
		fl->wait_head = skb;
	fl->wait_tail = skb;
	fl->wait_bytes += qdisc_pkt_len(skb);
	cl->waiting++;
	q->nr_waiting++;
	if (!list_empty(&fl->turn))
		return;
	quantum = psched_mtu(qdisc_dev(sch));
	len = qdisc_pkt_len(skb);
	if (fresh &&
	    !carousel_vafter(fl->vfinish + ((u64)len << CAROUSEL_VSHIFT),
			     cl->vtime + ((u64)max(quantum, len) <<
					  CAROUSEL_VSHIFT))) {
		fl->deficit = quantum;
		list_add_tail(&fl->turn, &cl->new_flows);
	} else {
		list_add_tail(&fl->turn, &cl->old_flows);
	}
}

/*
 * Enqueue one admitted packet (or segment) of class cl (NULL:
 * unclassified) and flow fl, own time `at', with its charge if admission
 * computed it (ch, else NULL).  Returns NET_XMIT_SUCCESS,
 * NET_XMIT_CN (queued, but its flow is over budget) or NET_XMIT_DROP (the
 * wheel refused its time).  The caller puts the flow afterwards.
 *
 * A packet stamped for later, or behind a pending packet of its flow, is
 * pending: it waits in the wheel at its own time and is charged to its
 * class when that comes (carousel_settle()).  A due packet of a busy
 * class waits its turn (carousel_wait()).  Any other packet of a class is
 * charged now, which is the same thing, done at once.
 */
static __always_inline int
carousel_enqueue_one(struct sk_buff *skb, struct Qdisc *sch,
		     struct carousel_class *cl,
		     struct carousel_flow *fl, u64 at, u64 now,
		     const struct carousel_charge *ch,
		     struct sk_buff **to_free)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_skb_cb *cb = carousel_cb(skb);
	u32 len = qdisc_pkt_len(skb);
	struct carousel_charge c = { .depart = at };
	bool pending, wait = false, was_active;

	pending = cl && (at > now || fl->pending);
	if (cl && !pending) {
		/* admission charged it, with the same test and state */
		if (ch)
			c = *ch;
		else if (!carousel_class_busy(cl, now))
			c.depart = carousel_departure(q, cl, fl->tail, len, at,
						      now, &c.next, &c.rem,
						      &c.lost);
		else
			c.depart = 0;
		wait = !c.depart;
	}

	cb->time_to_send = wait ? at : c.depart;
	cb->fl = fl;
	cb->pending = pending;
	cb->ends = 0;
	cb->released = 0;
	cb->flowless = 0;
	if (wait) {
		carousel_wait(sch, cl, fl, skb, !fl->qlen);
		goto queued;
	}
	carousel_wheel_sync(q->wheel, now);
	if (unlikely(!carousel_wheel_insert(q->wheel, skb, c.depart)))
		return carousel_drop(skb, sch, cl, &q->stat_horizon_drops,
				     to_free);

	if (cl && !pending)
		carousel_charged(q, cl, skb, at, c.depart, now, c.lost);

queued:
	fl->qlen++;
	fl->pending += pending;
	fl->backlog += len;
	sch->q.qlen++;
	qdisc_qstats_backlog_inc(sch, skb);
	if (!cl) {
		q->stat_unclassified++;
		return NET_XMIT_SUCCESS;
	}
	if (!pending && !wait) {
		cl->time_next = c.next;
		cl->tx_rem = c.rem;
		fl->tail = c.depart;
	}
	was_active = carousel_class_active(cl);
	cl->qlen++;
	cl->pending += pending;
	carousel_class_activity(q, cl, was_active);
	cl->backlog += len;
	return carousel_over_budget(sch, fl) ? NET_XMIT_CN : NET_XMIT_SUCCESS;
}

/*
 * The due list: packets of idle classes, charged as they come and due at
 * once.  A packet of a class with nothing queued, due now (no EDT stamp
 * ahead), that its class's clock and release clock let leave now
 * (carousel_admit()), has
 * nothing to wait for and no packet of its flow or class to keep behind:
 * it goes on the due list, which dequeue serves in order of time with
 * the wheel's earliest slot (carousel_dequeue_wheel()), and it has no
 * flow object.  So the commonest packet of a host with many classes
 * under their rates, one at a time in an idle class, neither takes a
 * flow object from the table nor a slot of the wheel.  It is charged and
 * counted as any other (its class's clock, delay and counters, the
 * limit); it is no flow: it is not counted in `flows', and a packet of
 * its flow that comes while it is queued starts a flow object of its
 * own.  That packet cannot overtake it: no packet departs before it
 * came, and this one departs no later than it came.
 * Its release clock (carousel_release()) would not hold it as it comes
 * (or it takes the path of any other packet, into the wheel), nor can it
 * later: the ceiling may keep it, the release clock never does, and
 * moves on as it leaves.  Its delay is none: it departs as it comes.
 */
static void carousel_enqueue_due(struct Qdisc *sch, struct sk_buff *skb,
				 struct carousel_class *cl, u64 now,
				 const struct carousel_charge *ch)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_skb_cb *cb = carousel_cb(skb);
	u32 len = qdisc_pkt_len(skb);

	cb->time_to_send = ch->depart;
	cb->cl = cl;
	cb->pending = 0;
	cb->ends = 1;
	cb->released = 0;
	cb->flowless = 1;
	skb->next = NULL;
	if (q->due_head)
		q->due_tail->next = skb;
	else
		q->due_head = skb;
	q->due_tail = skb;
	q->nr_due++;
	q->skbs++;
	/* (at = depart = now: no delay to mark, and no catch-up lost) */
	carousel_delay_note(cl, now, 0);
	sch->q.qlen++;
	qdisc_qstats_backlog_inc(sch, skb);
	cl->time_next = ch->next;
	cl->tx_rem = ch->rem;
	cl->qlen++;
	carousel_class_activity(q, cl, false);
	cl->backlog += len;
}

/*
 * skb, queued in the wheel, is the last of what its sender handed over
 * as one packet: the qdisc and its flow count that packet against limit
 * and flow_limit until skb leaves.
 */
static void carousel_ends(struct carousel_sched_data *q, struct sk_buff *skb,
			  struct carousel_flow *fl)
{
	carousel_cb(skb)->ends = 1;
	fl->skbs++;
	q->skbs++;
}

/*
 * A GSO packet that would hold its class for more than this is split, so
 * that each segment gets its own departure time: at low rates one 64KB
 * TSO train would otherwise leave as a line-rate burst every len/rate.
 */
#define CAROUSEL_SPLIT_NS	NSEC_PER_MSEC

/* Split a GSO packet of len that would hold its class, or (unclassified)
 * the ceiling, for more than CAROUSEL_SPLIT_NS?
 */
static bool carousel_split(const struct carousel_sched_data *q,
			   const struct carousel_class *cl, u32 len)
{
	if (cl)
		return carousel_tx_ns(q, cl, len, NULL) > CAROUSEL_SPLIT_NS;
	return q->rate &&
	       div64_u64((u64)len * NSEC_PER_SEC, q->rate) > CAROUSEL_SPLIT_NS;
}

static int carousel_enqueue_segs(struct sk_buff *skb, struct Qdisc *sch,
				 struct carousel_class *cl, unsigned long key,
				 u64 at, u64 now, bool cn,
				 struct sk_buff **to_free)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	netdev_features_t features = netif_skb_features(skb);
	unsigned int len = 0, prev_len = qdisc_pkt_len(skb);
	struct sk_buff *segs, *nskb, *last = NULL;
	int nb = 0, ret = NET_XMIT_SUCCESS;
	struct carousel_charge ch;
	struct carousel_flow *fl;
	u64 *refused;

	refused = carousel_admit(sch, cl, key, prev_len, at, now, cn, false,
				 &fl, &ch);
	if (unlikely(refused)) {
		/* Counted in segments, as what is sent is (bstats). */
		u32 more = max_t(u32, skb_shinfo(skb)->gso_segs, 1) - 1;

		*refused += more;
		sch->qstats.drops += more;
		if (cl)
			cl->drops += more;
		return carousel_drop(skb, sch, cl, refused, to_free);
	}

	segs = skb_gso_segment(skb, features & ~NETIF_F_GSO_MASK);
	if (IS_ERR_OR_NULL(segs)) {
		carousel_flow_put(q, fl);
		return carousel_drop(skb, sch, cl, &q->stat_alloc_drops,
				     to_free);
	}

	skb_list_walk_safe(segs, segs, nskb) {
		unsigned int seg_len = segs->len;
		int r;

		skb_mark_not_on_list(segs);
		qdisc_skb_cb(segs)->pkt_len = seg_len;
		r = carousel_enqueue_one(segs, sch, cl, fl, at, now, NULL,
					 to_free);
		if (r == NET_XMIT_DROP)
			continue;
		last = segs;
		nb++;
		len += seg_len;
		if (r == NET_XMIT_CN)
			ret = NET_XMIT_CN;
	}
	if (!nb) {
		carousel_flow_put(q, fl);
		kfree_skb(skb);
		return NET_XMIT_DROP;
	}
	carousel_ends(q, last, fl);
	/* Our parents counted one packet of prev_len. */
	qdisc_tree_reduce_backlog(sch, 1 - nb, prev_len - len);
	consume_skb(skb);
	return ret;
}

/*
 * NET_XMIT_CN tells the sender "queued, but slow down" (TCP enters CWR).
 * A classful parent would count it as a drop, so it is only returned when
 * we are the qdisc of the transmit queue: the root, or a child of mq.
 * And only to TCP: the IP output of any other sender, fragmenting a
 * datagram, takes it for an error and drops the datagram's other
 * fragments; UDP would ignore it anyway.
 */
static bool carousel_may_notify(const struct Qdisc *sch)
{
	return rcu_access_pointer(sch->dev_queue->qdisc) == sch;
}

static int carousel_enqueue(struct sk_buff *skb, struct Qdisc *sch,
			    struct sk_buff **to_free)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_charge ch;
	struct carousel_flow *fl;
	struct carousel_class *cl;
	unsigned long key;
	u64 now, at, *refused;
	bool tcp, cn, split;
	int ret;

	if (!carousel_classify(skb, sch, &cl, &ret)) {
		if (ret & __NET_XMIT_BYPASS) {
			qdisc_qstats_drop(sch);
			q->stat_filter_drops++;
		}
		__qdisc_drop(skb, to_free);
		return ret;
	}

	split = skb_is_gso(skb) && carousel_split(q, cl, qdisc_pkt_len(skb));
	if (cl && unlikely(cl->unkeyed))
		carousel_flow_rekey(q, cl);
	key = carousel_flow_key(q, skb, cl && !cl->qlen && !split, &tcp);
	cn = tcp && carousel_may_notify(sch);
	now = carousel_clock(q);
	at = carousel_own_time(q, skb, now);
	if (split) {
		ret = carousel_enqueue_segs(skb, sch, cl, key, at, now, cn,
					    to_free);
	} else {
		refused = carousel_admit(sch, cl, key, qdisc_pkt_len(skb), at,
					 now, cn, true, &fl, &ch);
		if (unlikely(refused))
			return carousel_drop(skb, sch, cl, refused, to_free);
		if (!fl) {
			carousel_enqueue_due(sch, skb, cl, now, &ch);
			return NET_XMIT_SUCCESS;
		}
		ret = carousel_enqueue_one(skb, sch, cl, fl, at, now, &ch,
					   to_free);
		if (ret != NET_XMIT_DROP) {
			carousel_ends(q, skb, fl);
			if (key == CAROUSEL_KEY_NONE) {
				cl->unkeyed = 1;
				cl->solo = skb;
			}
		}
		carousel_flow_put(q, fl);
	}

	if (ret == NET_XMIT_CN) {
		if (!cn)
			return NET_XMIT_SUCCESS;
		q->stat_cn_returns++;
	}
	return ret;
}

/* A packet leaves the wheel, sent or dropped: undo its accounting. */
static __always_inline void
carousel_unlink(struct Qdisc *sch, struct sk_buff *skb, bool sent)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_skb_cb *cb = carousel_cb(skb);
	struct carousel_flow *fl;
	struct carousel_class *cl;
	bool was_active;

	sch->q.qlen--;
	qdisc_qstats_backlog_dec(sch, skb);
	q->skbs -= cb->ends;
	if (cb->flowless) {
		cl = cb->cl;
	} else {
		fl = cb->fl;
		cl = fl->cl;
		fl->qlen--;
		fl->skbs -= cb->ends;
		fl->pending -= cb->pending;
		fl->backlog -= qdisc_pkt_len(skb);
		carousel_flow_put(q, fl);
		if (!cl)
			return;
	}

	cl->backlog -= qdisc_pkt_len(skb);
	if (sent) {
		_bstats_update(&cl->bstats, qdisc_pkt_len(skb),
			       skb_is_gso(skb) ? skb_shinfo(skb)->gso_segs : 1);
	} else {
		cl->drops++;
	}
	was_active = carousel_class_active(cl);
	cl->qlen--;
	cl->pending -= cb->pending;
	cl->held -= cb->released;
	if (cl->dead) {
		if (!cl->qlen)
			kfree(cl);
		return;
	}
	carousel_class_activity(q, cl, was_active);
	if (unlikely(cl->rerate) && !carousel_class_charged(cl))
		carousel_clamp_clock(sch, cl, ktime_get_ns());
}

/*
 * The ceiling, a clock of its own applied when a packet is due.  Class
 * times are fixed at enqueue, with each class's share of the ceiling as
 * it was then: when another class becomes active, packets already in the
 * wheel keep their times, and the sum could run over the ceiling.  So
 * the device's rate is also enforced here, on what actually leaves, for
 * every packet, classified or not.  A due packet waits for the ceiling's
 * clock; when it leaves, the clock moves on by its transmission time from
 * the instant it could have left, max(its time, the clock), not from now:
 * the clock replays the ideal schedule, so a late watchdog costs no rate,
 * and what it releases at once is what became due meanwhile: the classes
 * under it are each held to their catch-up cap (carousel_release()), the
 * ceiling itself is not.
 */
static bool carousel_ceiling_admit(struct carousel_sched_data *q,
				   const struct sk_buff *skb, u64 now)
{
	u64 tx;

	if (!q->rate)
		return true;
	if (q->ceil_next > now)
		return false;
	/* The remainder carries over: no drift either way, at any rate and
	 * packet size (rounding each packet, 64 B at 100 Gbit would be 5 or
	 * 6 ns instead of 5.12).
	 */
	tx = div64_u64_rem((u64)qdisc_pkt_len(skb) * NSEC_PER_SEC + q->ceil_rem,
			   q->rate, &q->ceil_rem);
	q->ceil_next = max(carousel_skb_time(skb), q->ceil_next) + tx;
	return true;
}

static void carousel_arm(struct carousel_sched_data *q, u64 expiry)
{
	if (q->timer_expiry != expiry) {
		q->timer_expiry = expiry;
		q->stat_timer_arms++;
	}
	qdisc_watchdog_schedule_range_ns(&q->watchdog, expiry, q->timer_slack);
}

/*
 * The work one dequeue may do before it hands the qdisc back, in packet
 * moves of a cascade; charging a pending packet or holding a released one
 * (carousel_settle(), carousel_release(): a class update and a wheel
 * insert) counts as CAROUSEL_CHARGE_COST moves, about their cost in
 * instructions (docs/design.md, "A cascade on a budget").
 */
#define CAROUSEL_DEQUEUE_BUDGET	128
#define CAROUSEL_CHARGE_COST	4

/* Drop skb, unlinked from the wheel, in dequeue. */
static void carousel_drop_dequeued(struct Qdisc *sch, struct sk_buff *skb,
				   u64 *stat)
{
	(*stat)++;
	carousel_unlink(sch, skb, false);
	qdisc_qstats_drop(sch);
	qdisc_tree_reduce_backlog(sch, 1, qdisc_pkt_len(skb));
	kfree_skb_reason(skb, SKB_DROP_REASON_QDISC_DROP);
}

/*
 * The next packet of busy class cl to take its turn, out of its flow's
 * FIFO: deficit round robin over its flows, a quantum of one MTU each
 * round, the new flows (those that had nothing queued, below their
 * share) first, as fq_codel serves its flows.  A flow that has used its
 * quantum goes to the tail of the old flows with one more; a flow
 * leaves the lists when nothing of it waits.  Each move costs one of
 * *budget; cl->waiting is not 0, so the lists are not empty.
 *
 * Each turn also ends at a virtual time, as in fair queueing: its start
 * is the later of the class's virtual time and the end of its flow's
 * last turn, and it ends its length later.  The class's virtual time
 * moves on, at each turn, by the turn's length over its flows, those
 * with packets and those lingering ahead of it: what each would have
 * had of the turns, shared equally.  A flow served
 * no more than its share keeps the end of its turns within a quantum of
 * it; one served more, as new or old, runs ahead of it, lingers when
 * its last packet leaves (carousel_flow_linger()), and is old when it
 * comes back (carousel_wait()).
 *
 * (Unlike fq_codel, a flow emptied on the new flows does not go round the
 * old ones first, and one that is forgotten or has caught up is new
 * again: a ping 20 ms after the last one waits about one packet time,
 * not a round of the bulk flows.  design.md, "Turns".)
 */
static struct sk_buff *carousel_next_waiting(struct Qdisc *sch,
					     struct carousel_class *cl,
					     u32 *budget)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_flow *fl;
	struct list_head *head;
	struct sk_buff *skb;
	u64 start;
	u32 len;

	for (;;) {
		head = &cl->new_flows;
		if (list_empty(head))
			head = &cl->old_flows;
		fl = list_first_entry(head, struct carousel_flow, turn);
		if (fl->deficit > 0)
			break;
		fl->deficit += psched_mtu(qdisc_dev(sch));
		list_move_tail(&fl->turn, &cl->old_flows);
		if (*budget)
			(*budget)--;
	}
	skb = fl->wait_head;
	fl->wait_head = skb->next;
	skb_mark_not_on_list(skb);
	len = qdisc_pkt_len(skb);
	fl->wait_bytes -= len;
	fl->deficit -= len;
	start = carousel_vafter(fl->vfinish, cl->vtime) ? fl->vfinish :
							   cl->vtime;
	fl->vfinish = start + ((u64)len << CAROUSEL_VSHIFT);
	/* (fl has a packet queued: cl->flows >= 1) */
	cl->vtime += div_u64((u64)len << CAROUSEL_VSHIFT,
			     cl->flows + cl->lingering);
	carousel_linger_reclaim(q);
	if (!fl->wait_head)
		list_del_init(&fl->turn);
	cl->waiting--;
	q->nr_waiting--;
	return skb;
}

/*
 * Charge skb, just out of its flow's FIFO, to its class at `now' and put
 * it in the wheel at its departure.  As for any charge, its departure is
 * no earlier than its own time, kept in its cb, nor than its flow's last;
 * the delay it has waited its turn counts for ce_threshold, so marks go
 * to the flows that queue, not to the sparse ones.  False: dropped (the
 * wheel could not take its time).
 */
static bool carousel_charge_waiting(struct Qdisc *sch, struct sk_buff *skb,
				    u64 now)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_skb_cb *cb = carousel_cb(skb);
	struct carousel_flow *fl = cb->fl;
	struct carousel_class *cl = fl->cl;
	u64 at = cb->time_to_send, depart, next, lost;
	u16 rem;

	/*
	 * The clock goes on from where it stands, even if a late watchdog
	 * left it behind the packet's own time: the packet found its class
	 * busy, and with the clock not ahead of it that means others were
	 * waiting, back to one that found the clock ahead of its arrival,
	 * so packets waited all through [time_next, at) and none of it was
	 * idle.  The refill catches up within the catch-up cap, as after
	 * any late charge.  The packet leaves no earlier than its own time.
	 */
	depart = carousel_departure(q, cl, fl->tail, qdisc_pkt_len(skb),
				    min(at, cl->time_next), now, &next, &rem,
				    &lost);
	depart = max(depart, at);
	cb->time_to_send = depart;
	/* (an empty wheel's cursor may be old: the class's packet that has
	 * just left, on the due list, had no need of the wheel)
	 */
	carousel_wheel_sync(q->wheel, now);
	/* (a class whose one packet takes longer than a horizon) */
	if (unlikely(depart > now + q->horizon ||
		     !carousel_wheel_insert(q->wheel, skb, depart))) {
		carousel_drop_dequeued(sch, skb, &q->stat_horizon_drops);
		return false;
	}
	cl->time_next = next;
	cl->tx_rem = rem;
	fl->tail = depart;
	carousel_charged(q, cl, skb, at, depart, now, lost);
	return true;
}

/*
 * Give busy class cl's next turns at `now': charge waiting packets while
 * it has none charged, or while its clock lets a packet leave by now
 * (its burst, or catch-up after a late watchdog), within *budget.  Called
 * when a packet of cl has left the wheel.  It keeps the invariant that a
 * class with packets waiting has a charged packet in the wheel, whose
 * departure calls this again: the first charge is made whatever the
 * budget.  The time a turn takes is the class's: the rate, the burst
 * bound and the catch-up cap hold as for any charge.
 */
static void carousel_refill(struct Qdisc *sch, struct carousel_class *cl,
			    u64 now, u32 *budget)
{
	struct sk_buff *skb;
	bool last;

	while (cl->waiting) {
		if (carousel_class_charged(cl) &&
		    (*budget <= CAROUSEL_CHARGE_COST ||
		     carousel_class_ahead(cl, now)))
			return;
		*budget -= min_t(u32, *budget, CAROUSEL_CHARGE_COST);
		skb = carousel_next_waiting(sch, cl, budget);
		/* a drop of its last packet would free a deleted class */
		last = cl->qlen == 1;
		if (!carousel_charge_waiting(sch, skb, now) && last)
			return;
	}
}

/*
 * Take every waiting packet out of its flow's FIFO: for a rebuild, which
 * gets them as pending packets at their own time (in order within each
 * flow), appended at *tail; for a reset (tail NULL), dropped.  The flows
 * give up their turns.  A pending packet is charged, or waits its turn
 * again, when it is due (carousel_settle()); its flow's last departure
 * keeps it behind the flow's charged packets.
 */
static void carousel_unwait_all(struct Qdisc *sch, struct sk_buff ***tail)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_flow *fl;
	struct carousel_class *cl;
	struct sk_buff *skb, *next;
	struct hlist_node *tmp;
	bool was_active;
	u32 i;
	u64 t;

	for (i = 0; i < CAROUSEL_FLOWS; i++) {
		hlist_for_each_entry_safe(fl, tmp, &q->flow_hash[i], node) {
			/* (only a flow with a packet waiting has a turn; a
			 * lingering one is on q->lingering by fl->turn)
			 */
			if (!fl->wait_head)
				continue;
			cl = fl->cl;
			skb = fl->wait_head;
			fl->wait_head = NULL;
			fl->wait_bytes = 0;
			list_del_init(&fl->turn);
			/* (a reset drops its packets: it does not linger, and
			 * so forgets none of the flows this walk has still to
			 * see; carousel_reset() forgets the rest)
			 */
			if (!tail)
				fl->vfinish = 0;
			/* (cl stays: a charged packet of it is in the wheel; fl
			 * may go with its last packet here, and is not used after)
			 */
			for (t = 0; skb; skb = next) {
				next = skb->next;
				skb->next = NULL;
				cl->waiting--;
				q->nr_waiting--;
				if (!tail) {
					carousel_unlink(sch, skb, false);
					qdisc_qstats_drop(sch);
					rtnl_kfree_skbs(skb, skb);
					continue;
				}
				t = max(t, carousel_skb_time(skb));
				carousel_cb(skb)->time_to_send = t;
				carousel_cb(skb)->pending = 1;
				was_active = carousel_class_active(cl);
				cl->pending++;
				fl->pending++;
				carousel_class_activity(q, cl, was_active);
				**tail = skb;
				*tail = &skb->next;
			}
		}
	}
}

/*
 * A pending packet, the head of `slot', has reached its own time `at':
 * charge it to its class now.  It leaves at once (returns true, still
 * the head) if it may and no charged packet of its flow is still in the
 * wheel; else it goes back in at its departure, behind those (returns
 * false).  Charging in time order is Carousel's chain of timestampers:
 * the class clock only ever spends time that is present, so no EDT stamp
 * turns the class's past into a burst (docs/design.md, "The burst bound").
 */
static bool carousel_settle(struct Qdisc *sch, struct carousel_slot *slot,
			    struct sk_buff *skb, u64 now)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_skb_cb *cb = carousel_cb(skb);
	struct carousel_flow *fl = cb->fl;
	struct carousel_class *cl = fl->cl;
	u64 at = cb->time_to_send, depart, next, lost, old_next = cl->time_next;
	u64 old_tail = fl->tail;
	u16 rem, old_rem = cl->tx_rem;
	bool was_active;

	if (carousel_class_busy(cl, now)) {
		/* Its class has no time for it now: it waits its turn. */
		carousel_wheel_pop(q->wheel, slot);
		was_active = carousel_class_active(cl);
		cb->pending = 0;
		fl->pending--;
		cl->pending--;
		carousel_wait(sch, cl, fl, skb, fl->qlen == 1);
		carousel_class_activity(q, cl, was_active);
		return false;
	}
	depart = carousel_departure(q, cl, fl->tail, qdisc_pkt_len(skb), at,
				    now, &next, &rem, &lost);
	if (unlikely(depart > now + q->horizon)) {
		carousel_wheel_pop(q->wheel, slot);
		carousel_drop_dequeued(sch, skb, &q->stat_horizon_drops);
		return false;
	}
	cl->time_next = next;
	cl->tx_rem = rem;
	fl->tail = depart;
	was_active = carousel_class_active(cl);
	cb->pending = 0;
	fl->pending--;
	cl->pending--;
	carousel_class_activity(q, cl, was_active);
	cb->time_to_send = depart;

	if (depart <= now && fl->qlen - fl->pending == 1) {
		carousel_charged(q, cl, skb, at, depart, now, lost);
		return true;
	}
	carousel_wheel_pop(q->wheel, slot);
	if (unlikely(!carousel_wheel_insert(q->wheel, skb, depart))) {
		/* (a cursor lagging by a horizon): the class gets its time back */
		cl->time_next = old_next;
		cl->tx_rem = old_rem;
		fl->tail = old_tail;
		carousel_drop_dequeued(sch, skb, &q->stat_horizon_drops);
		return false;
	}
	carousel_charged(q, cl, skb, at, depart, now, lost);
	return false;
}

/* Unlink the head of a level-0 slot of the wheel, or (NULL) of the due list. */
static __always_inline void carousel_take(struct carousel_sched_data *q,
					  struct carousel_slot *slot)
{
	struct sk_buff *skb;

	if (slot) {
		carousel_wheel_pop(q->wheel, slot);
		return;
	}
	skb = q->due_head;
	q->due_head = skb->next;
	skb->next = NULL;
	q->nr_due--;
}

/*
 * The release clock of a class bounds its catch-up: a due charged packet
 * leaves at once only if the class has released no more than its burst
 * and the catch-up cap ahead of its rate; else it goes back in the wheel
 * at the instant it may leave, reserved for it.  So a watchdog late by L
 * releases at most burst + rate * min(L, catch-up) at once, not all that
 * fell due (docs/design.md, "Catch-up").  On time, it holds nothing:
 * departures are spaced at the class's rate or slower (a ceiling's share),
 * at most its burst before the class clock.  A packet that becomes due
 * while others of its class are held goes in behind the last of them
 * (the clock has passed its reserved time), so no flow is reordered.
 * After a rate change, until the packets charged at the old rate have
 * left, the clock runs at the higher of the two rates: they keep the
 * times they were given, as everywhere else.  A flowless packet (of the
 * due list, or in the wheel after a rebuild) is the first of its class to
 * leave and was not held as it came (carousel_admit()): it is never
 * held, and moves the clock on as it leaves.  Returns true if skb, the
 * head of slot (NULL: of the due list), may leave now, with in *next
 * the clock once it has (0: no change).  An old reading in *nowp
 * (!*fresh) is read afresh (carousel_clock()) before skb is held, and
 * unless skb is alone in its class.
 */
static __always_inline bool
carousel_release(struct Qdisc *sch, struct carousel_slot *slot,
		 struct sk_buff *skb, u64 *nowp, bool *fresh, u64 *next)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_skb_cb *cb = carousel_cb(skb);
	struct carousel_class *cl = carousel_skb_class(skb);
	u64 start, now;

	*next = 0;
	if (cb->released)
		return true;
	/* (an old reading only for a packet alone in its class, and no
	 * longer than the class sends in the catch-up cap: carousel_clock())
	 */
	if (cl->qlen > 1 || qdisc_pkt_len(skb) > cl->catchup_bytes)
		carousel_refresh(q, nowp, fresh);
	do {
		now = *nowp;
		start = carousel_release_start(cl, now);
		if (cb->flowless || (!cl->held && start <= now)) {
			*next = carousel_release_next(cl, start,
						      qdisc_pkt_len(skb));
			return true;
		}
	} while (carousel_refresh(q, nowp, fresh));
	/* Behind the packets held (the clock is past them), never earlier. */
	start = max(start, carousel_skb_time(skb));
	carousel_take(q, slot);
	/* (the wheel reads the time it was given from the cb, as it moves it) */
	cb->time_to_send = start;
	/* (skb may have been the last in a wheel whose cursor is old) */
	carousel_wheel_sync(q->wheel, now);
	if (unlikely(!carousel_wheel_insert(q->wheel, skb, start))) {
		u32 waiting = cl->waiting, no_budget = 0;

		carousel_drop_dequeued(sch, skb, &q->stat_horizon_drops);
		if (waiting)	/* (so cl is not freed) */
			carousel_refill(sch, cl, now, &no_budget);
		return false;
	}
	cl->release = carousel_release_next(cl, start, qdisc_pkt_len(skb));
	/* The class lost that time: what it charges next comes after. */
	if (cl->time_next < cl->release)
		cl->time_next = cl->release;
	cl->held++;
	cb->released = 1;
	if (start > now)
		q->stat_catchup_holds++;
	return false;
}

/* carousel_dequeue() of a wheel that holds packets */
static noinline struct sk_buff *carousel_dequeue_wheel(struct Qdisc *sch)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_wheel *w = q->wheel;
	u32 budget = CAROUSEL_DEQUEUE_BUDGET;
	u64 now, wake, release = 0;
	struct carousel_class *cl;
	struct carousel_slot *slot;
	bool refill, fresh = false;
	struct sk_buff *skb;

	/* (carousel_clock(): the last reading, the enqueue's in a run) */
	now = q->clock;
	if (q->timer_expiry) {
		now = carousel_clock(q);
		fresh = true;
		if (now >= q->timer_expiry) {
			u64 late = now - q->timer_expiry;

			q->stat_timer_fires++;
			q->stat_timer_latency += late;
			if (late > q->stat_timer_latency_max)
				q->stat_timer_latency_max = late;
			q->timer_expiry = 0;
		}
	}

	/*
	 * Each turn sends, stops, or charges or holds a packet (once each);
	 * before it would stop, charge or hold on the last reading it reads
	 * the clock, once a call (carousel_clock()).
	 * Charges, holds and cascade moves share one budget per call, as a
	 * qdisc run has dev_tx_weight: many packets stamped for one instant
	 * are charged and cascaded over several calls, the qdisc rescheduled
	 * in between, so that no call holds the root lock for the whole crowd.
	 */
	for (;;) {
		slot = carousel_wheel_first(w, div_u64(now, w->gran), &wake,
					    &budget);
		/* The due list's head, due, unless the wheel's is earlier. */
		skb = q->due_head;
		if (skb && slot &&
		    carousel_skb_time(slot->head) < carousel_skb_time(skb))
			skb = NULL;
		if (skb) {
			slot = NULL;
		} else if (slot) {
			skb = slot->head;
			if (carousel_skb_time(skb) > now) {
				if (carousel_refresh(q, &now, &fresh))
					continue;
				wake = carousel_skb_time(skb);
				break;
			}
			if (carousel_cb(skb)->pending) {
				if (carousel_refresh(q, &now, &fresh))
					continue;
				if (!carousel_settle(sch, slot, skb, now))
					goto charged;
			}
		} else {
			if (!w->count) {	/* settle dropped the last */
				q->timer_expiry = 0;
				return NULL;
			}
			if (wake == CAROUSEL_WHEEL_BUSY)
				goto resched;
			if (WARN_ON_ONCE(wake == ~0ULL))
				return NULL;
			if (carousel_refresh(q, &now, &fresh))
				continue;
			wake *= w->gran;
			break;
		}
		cl = carousel_skb_class(skb);
		if (cl && !carousel_release(sch, slot, skb, &now, &fresh,
					    &release))
			goto charged;
		if (!carousel_ceiling_admit(q, skb, now)) {
			if (carousel_refresh(q, &now, &fresh))
				continue;
			wake = q->ceil_next;
			break;
		}
		if (cl && release)
			cl->release = release;
		/* (cl stays: its waiting packets are queued) */
		refill = cl && cl->waiting;
		carousel_take(q, slot);
		carousel_unlink(sch, skb, true);
		if (refill) {
			carousel_refresh(q, &now, &fresh);
			carousel_refill(sch, cl, now, &budget);
		}
		qdisc_bstats_update(sch, skb);
		if (!carousel_placed(q))
			q->timer_expiry = 0;
		return skb;
charged:
		if (unlikely(budget <= CAROUSEL_CHARGE_COST))
			goto resched;
		budget -= CAROUSEL_CHARGE_COST;
	}
	sch->qstats.overlimits++;
	carousel_arm(q, wake);
	return NULL;

resched:
	/* as __qdisc_run() does when its quota is spent */
	__netif_schedule(qdisc_root(sch));
	return NULL;
}

/*
 * carousel_dequeue() of the light load: the due list's head, with no
 * wheel to be earlier, no ceiling to ask, no watchdog's lateness to time
 * and no packet of its class waiting for the turn it leaves (so it is
 * alone in its class), leaves as carousel_dequeue_wheel() would let it,
 * without that function's frame: its release clock moves on, on the
 * last reading if the packet is no longer than the class sends in the
 * catch-up cap (carousel_release(), carousel_clock()).
 */
static noinline struct sk_buff *carousel_dequeue_due(struct Qdisc *sch)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct sk_buff *skb = q->due_head;
	struct carousel_class *cl = carousel_cb(skb)->cl;
	u32 len = qdisc_pkt_len(skb);
	u64 now = q->clock;

	if (len > cl->catchup_bytes)
		now = carousel_clock(q);
	cl->release = carousel_release_next(cl, carousel_release_start(cl, now),
					    len);
	carousel_take(q, NULL);
	carousel_unlink(sch, skb, true);
	qdisc_bstats_update(sch, skb);
	return skb;
}

static struct sk_buff *carousel_dequeue(struct Qdisc *sch)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct sk_buff *skb;

	/*
	 * q.qlen may also count a packet peeked into gso_skb: ask the wheel.
	 * Every qdisc run ends with a dequeue that finds nothing, so this
	 * comes first, before the frame of the real work is built and the
	 * clock is read; an empty wheel has no timer armed.
	 */
	if (!q->wheel->count) {
		skb = q->due_head;
		if (!skb)
			return NULL;
		if (!q->rate && !q->timer_expiry &&
		    !carousel_cb(skb)->cl->waiting)
			return carousel_dequeue_due(sch);
	}
	return carousel_dequeue_wheel(sch);
}

/*
 * A charged packet dropped by a rebuild, which keeps the earliest, is later
 * than every packet of its flow and class that stays: its class gets back
 * the time it had taken, and its flow's floor comes back to it, so that
 * what the flow and class send next does not wait for packets that will
 * never leave.  The time given back is len at the class's own rate, never
 * more than it was charged (a share of a ceiling only stretches it), so
 * the clock cannot fall behind the packets kept; a class rate lowered
 * since is the exception, and a configuration change as well.
 */
static void carousel_give_back(struct sk_buff *skb)
{
	struct carousel_skb_cb *cb = carousel_cb(skb);
	struct carousel_class *cl = carousel_skb_class(skb);

	if (!cl || cb->pending)
		return;
	cl->time_next -= min(cl->time_next,
			     div64_u64((u64)qdisc_pkt_len(skb) * NSEC_PER_SEC,
				       cl->rate));
	if (!cb->flowless)
		cb->fl->tail = min(cb->fl->tail, cb->time_to_send);
}

/*
 * Move every packet, of the wheel and of the due list, into wheel w (a
 * new one, or the current one restarted) in time order, which keeps the
 * order of every flow, with the cursor at now.  The packets past the
 * first `keep' to leave (counted as handed over, as limit counts them),
 * and any the new wheel cannot hold, are dropped and counted
 * (carousel_give_back()).  Departure times do not change, so an armed
 * watchdog stays right.
 */
static void carousel_rebuild(struct Qdisc *sch, struct carousel_wheel *w,
			     u32 levels, u32 gran, u32 keep)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_wheel *old = q->wheel;
	struct sk_buff *list = NULL, **tail = &list, *skb, *due;
	unsigned int bytes = 0, pkts = 0, n = 0;
	u64 cascades = old->cascades;

	/* (the due list is in time order: its times are enqueues' clocks) */
	due = q->due_head;
	q->due_head = NULL;
	q->nr_due = 0;
	skb = carousel_wheel_pop_first(old);
	while (skb || due) {
		if (due && (!skb ||
			    carousel_skb_time(due) <= carousel_skb_time(skb))) {
			*tail = due;
			due = due->next;
		} else {
			*tail = skb;
			skb = carousel_wheel_pop_first(old);
		}
		tail = &(*tail)->next;
	}
	*tail = NULL;
	/* after the wheel's, so that a lowered limit drops them first */
	carousel_unwait_all(sch, &tail);
	carousel_wheel_init(w, levels, gran, ktime_get_ns());
	w->cascades = cascades;
	q->wheel = w;

	while (list) {
		skb = list;
		list = skb->next;
		if (n < keep &&
		    carousel_wheel_insert(w, skb, carousel_skb_time(skb))) {
			n += carousel_cb(skb)->ends;
			continue;
		}
		if (n < keep)
			q->stat_horizon_drops++;
		else
			q->stat_limit_drops++;
		bytes += qdisc_pkt_len(skb);
		pkts++;
		carousel_give_back(skb);
		carousel_unlink(sch, skb, false);
		qdisc_qstats_drop(sch);
		rtnl_kfree_skbs(skb, skb);
	}
	if (!carousel_placed(q))
		q->timer_expiry = 0;
	if (pkts)
		qdisc_tree_reduce_backlog(sch, pkts, bytes);
}

static void carousel_reset(struct Qdisc *sch)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_class *cl;
	struct sk_buff *skb;
	u32 minor;

	if (!q->wheel)
		return;
	carousel_unwait_all(sch, NULL);
	while (q->due_head) {
		skb = q->due_head;
		carousel_take(q, NULL);
		carousel_unlink(sch, skb, false);
		qdisc_qstats_drop(sch);
		rtnl_kfree_skbs(skb, skb);
	}
	while ((skb = carousel_wheel_pop_first(q->wheel))) {
		carousel_unlink(sch, skb, false);
		qdisc_qstats_drop(sch);
		rtnl_kfree_skbs(skb, skb);
	}
	carousel_forget_lingering(q, NULL);
	carousel_for_each_class(q, minor, cl) {
		cl->time_next = 0;
		cl->release = 0;
		cl->tx_rem = 0;
		cl->rerate = 0;
	}
	q->ceil_next = 0;
	q->ceil_rem = 0;
	q->timer_expiry = 0;
	qdisc_watchdog_cancel(&q->watchdog);
}

/*
 * Every option's range is in the policy, checked by the netlink core
 * before anything is applied and reported with the error
 * (NLMSGERR_ATTR_POLICY).  The core's own text for a value out of range
 * is "integer out of range": carousel_parse_nested() puts the option's
 * own message in its place.
 */
#define CAROUSEL_RANGE(name, lo, hi)					\
	static CAROUSEL_RANGE_CONST struct netlink_range_validation	\
	carousel_##name##_range = {					\
		.min = (lo), .max = (hi),				\
	}

CAROUSEL_RANGE(rate, 0, CAROUSEL_RATE_MAX);
CAROUSEL_RANGE(minor, 0, 0xffff);
CAROUSEL_RANGE(gran, 1, CAROUSEL_GRAN_MAX);
CAROUSEL_RANGE(horizon, 1, U32_MAX);
CAROUSEL_RANGE(bool, 0, 1);
CAROUSEL_RANGE(limit, 1, CAROUSEL_LIMIT_MAX);
CAROUSEL_RANGE(flow_limit, 1, U16_MAX);
CAROUSEL_RANGE(budget, 0, U16_MAX);
CAROUSEL_RANGE(budget_t, 0, CAROUSEL_BUDGET_T_MAX);
CAROUSEL_RANGE(flow_t, 0, CAROUSEL_FLOW_T_MAX);
CAROUSEL_RANGE(ce, 0, CAROUSEL_CE_MAX);
CAROUSEL_RANGE(slack, 0, CAROUSEL_SLACK_MAX);
CAROUSEL_RANGE(class_rate, 1, CAROUSEL_RATE_MAX);

static const struct nla_policy carousel_policy[TCA_CAROUSEL_MAX + 1] = {
	[TCA_CAROUSEL_RATE]	= NLA_POLICY_FULL_RANGE(NLA_U64, &carousel_rate_range),
	[TCA_CAROUSEL_DEFAULT]	= NLA_POLICY_FULL_RANGE(NLA_U32, &carousel_minor_range),
	[TCA_CAROUSEL_GRANULARITY] = NLA_POLICY_FULL_RANGE(NLA_U32, &carousel_gran_range),
	[TCA_CAROUSEL_HORIZON]	= NLA_POLICY_FULL_RANGE(NLA_U32, &carousel_horizon_range),
	[TCA_CAROUSEL_HORIZON_DROP] = NLA_POLICY_FULL_RANGE(NLA_U8, &carousel_bool_range),
	[TCA_CAROUSEL_LIMIT]	= NLA_POLICY_FULL_RANGE(NLA_U32, &carousel_limit_range),
	[TCA_CAROUSEL_FLOW_LIMIT] = NLA_POLICY_FULL_RANGE(NLA_U32, &carousel_flow_limit_range),
	[TCA_CAROUSEL_TIMER_SLACK] = NLA_POLICY_FULL_RANGE(NLA_U32, &carousel_slack_range),
	[TCA_CAROUSEL_CE_THRESHOLD] = NLA_POLICY_FULL_RANGE(NLA_U32, &carousel_ce_range),
	[TCA_CAROUSEL_FLOW_BUDGET] = NLA_POLICY_FULL_RANGE(NLA_U32, &carousel_budget_range),
	[TCA_CAROUSEL_FLOW_BUDGET_TIME] = NLA_POLICY_FULL_RANGE(NLA_U32, &carousel_budget_t_range),
	[TCA_CAROUSEL_FLOW_LIMIT_TIME] = NLA_POLICY_FULL_RANGE(NLA_U32, &carousel_flow_t_range),
};

static const struct nla_policy carousel_class_policy[TCA_CAROUSEL_CLASS_MAX + 1] = {
	[TCA_CAROUSEL_CLASS_RATE] = NLA_POLICY_FULL_RANGE(NLA_U64, &carousel_class_rate_range),
	[TCA_CAROUSEL_CLASS_BURST] = { .type = NLA_U32 },
};

/* Each option's own words for a value outside its range. */
static void carousel_range_msg(struct netlink_ext_ack *extack,
			       const struct nlattr *bad)
{
	const struct nla_policy *pol = extack->policy;

	switch (nla_type(bad)) {
	case TCA_CAROUSEL_RATE:
		NL_SET_ERR_MSG_ATTR_POL(extack, bad, pol, "carousel: rate must be at most 8.8Tbit, or 0 for none");
		break;
	case TCA_CAROUSEL_DEFAULT:
		NL_SET_ERR_MSG_ATTR_POL(extack, bad, pol, "carousel: default must be a minor 1..ffff, or 0");
		break;
	case TCA_CAROUSEL_GRANULARITY:
		NL_SET_ERR_MSG_ATTR_POL(extack, bad, pol, "carousel: granularity must be between 1ns and 1s");
		break;
	case TCA_CAROUSEL_HORIZON:
		NL_SET_ERR_MSG_ATTR_POL(extack, bad, pol, "carousel: horizon must be at least 1us");
		break;
	case TCA_CAROUSEL_HORIZON_DROP:
		NL_SET_ERR_MSG_ATTR_POL(extack, bad, pol, "carousel: horizon_drop must be 0 (cap) or 1 (drop)");
		break;
	case TCA_CAROUSEL_LIMIT:
		NL_SET_ERR_MSG_ATTR_POL(extack, bad, pol, "carousel: limit must be between 1 and 16777216 packets");
		break;
	case TCA_CAROUSEL_FLOW_LIMIT:
		NL_SET_ERR_MSG_ATTR_POL(extack, bad, pol, "carousel: flow_limit must be between 1 and 65535 packets");
		break;
	case TCA_CAROUSEL_TIMER_SLACK:
		NL_SET_ERR_MSG_ATTR_POL(extack, bad, pol, "carousel: timer_slack must be at most 1s");
		break;
	case TCA_CAROUSEL_CE_THRESHOLD:
		NL_SET_ERR_MSG_ATTR_POL(extack, bad, pol, "carousel: ce_threshold must be at most 1s, or 0 for none");
		break;
	case TCA_CAROUSEL_FLOW_BUDGET:
		NL_SET_ERR_MSG_ATTR_POL(extack, bad, pol, "carousel: flow_budget must be at most 65535 packets, or 0 for none");
		break;
	case TCA_CAROUSEL_FLOW_BUDGET_TIME:
		NL_SET_ERR_MSG_ATTR_POL(extack, bad, pol, "carousel: flow_budget_time must be at most 1s");
		break;
	case TCA_CAROUSEL_FLOW_LIMIT_TIME:
		NL_SET_ERR_MSG_ATTR_POL(extack, bad, pol, "carousel: flow_limit_time must be at most 4s, or 0 for none");
		break;
	}
}

static void carousel_class_range_msg(struct netlink_ext_ack *extack,
				     const struct nlattr *bad)
{
	if (nla_type(bad) == TCA_CAROUSEL_CLASS_RATE)
		NL_SET_ERR_MSG_ATTR_POL(extack, bad, extack->policy,
					"carousel: class rate must be 1 byte/s .. 8.8Tbit");
}

/*
 * nla_parse_nested(), with a value outside its policy's range reported in
 * the option's own words (the core's bad_attr and policy kept), as -EINVAL
 * as before the ranges moved into the policies.  Only a range check
 * returns -ERANGE there.
 */
static int carousel_parse_nested(struct nlattr **tb, int max,
				 const struct nlattr *opt,
				 const struct nla_policy *policy,
				 void (*msg)(struct netlink_ext_ack *,
					     const struct nlattr *),
				 struct netlink_ext_ack *extack)
{
	int err;

	err = nla_parse_nested(tb, max, opt, policy, extack);
	if (err != -ERANGE)
		return err;
	if (extack && extack->bad_attr)
		msg(extack, extack->bad_attr);
	return -EINVAL;
}

/* The qdisc parameters, gathered and checked before any is applied. */
struct carousel_params {
	u64	rate;
	u64	horizon;
	u32	default_minor;
	u32	granularity;
	u32	limit;
	u32	flow_limit;
	u32	flow_budget;
	u32	flow_budget_time;
	u32	flow_limit_time;
	u32	ce_threshold;
	u32	timer_slack;
	u8	horizon_drop;
};

static void carousel_parse(struct nlattr **tb, struct carousel_params *p)
{
	if (tb[TCA_CAROUSEL_RATE])
		p->rate = nla_get_u64(tb[TCA_CAROUSEL_RATE]);
	if (tb[TCA_CAROUSEL_DEFAULT])
		p->default_minor = nla_get_u32(tb[TCA_CAROUSEL_DEFAULT]);
	if (tb[TCA_CAROUSEL_GRANULARITY])
		p->granularity = nla_get_u32(tb[TCA_CAROUSEL_GRANULARITY]);
	if (tb[TCA_CAROUSEL_HORIZON])
		p->horizon = (u64)nla_get_u32(tb[TCA_CAROUSEL_HORIZON]) *
			     NSEC_PER_USEC;
	if (tb[TCA_CAROUSEL_HORIZON_DROP])
		p->horizon_drop = nla_get_u8(tb[TCA_CAROUSEL_HORIZON_DROP]);
	if (tb[TCA_CAROUSEL_LIMIT])
		p->limit = nla_get_u32(tb[TCA_CAROUSEL_LIMIT]);
	if (tb[TCA_CAROUSEL_FLOW_LIMIT])
		p->flow_limit = nla_get_u32(tb[TCA_CAROUSEL_FLOW_LIMIT]);
	if (tb[TCA_CAROUSEL_FLOW_BUDGET])
		p->flow_budget = nla_get_u32(tb[TCA_CAROUSEL_FLOW_BUDGET]);
	if (tb[TCA_CAROUSEL_FLOW_BUDGET_TIME])
		p->flow_budget_time =
			nla_get_u32(tb[TCA_CAROUSEL_FLOW_BUDGET_TIME]);
	if (tb[TCA_CAROUSEL_FLOW_LIMIT_TIME])
		p->flow_limit_time =
			nla_get_u32(tb[TCA_CAROUSEL_FLOW_LIMIT_TIME]);
	if (tb[TCA_CAROUSEL_CE_THRESHOLD])
		p->ce_threshold = nla_get_u32(tb[TCA_CAROUSEL_CE_THRESHOLD]);
	if (tb[TCA_CAROUSEL_TIMER_SLACK])
		p->timer_slack = nla_get_u32(tb[TCA_CAROUSEL_TIMER_SLACK]);
}

/* What no single option's range can say: how they fit together. */
static int carousel_params_check(const struct carousel_params *p,
				 struct netlink_ext_ack *extack)
{
	if (p->horizon < p->granularity) {
		NL_SET_ERR_MSG_MOD(extack, "horizon must not be shorter than granularity");
		return -EINVAL;
	}
	if (carousel_wheel_levels(p->granularity, p->horizon) >
	    CAROUSEL_MAX_LEVELS) {
		NL_SET_ERR_MSG_MOD(extack,
				   "horizon/granularity needs more than 4 wheel levels (64KiB): raise granularity or lower horizon");
		return -EINVAL;
	}
	return 0;
}

static int carousel_change(struct Qdisc *sch, struct nlattr *opt,
			   struct netlink_ext_ack *extack)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct nlattr *tb[TCA_CAROUSEL_MAX + 1] = { };
	struct carousel_wheel *w = NULL, *old = NULL;
	struct carousel_params p;
	u32 levels, keep;
	bool rerate;
	int err;

	if (opt) {
		err = carousel_parse_nested(tb, TCA_CAROUSEL_MAX, opt,
					    carousel_policy,
					    carousel_range_msg, extack);
		if (err < 0)
			return err;
	}

	p.rate = q->rate;
	p.horizon = q->horizon;
	p.default_minor = q->default_minor;
	p.granularity = q->wheel ? q->wheel->gran : NSEC_PER_USEC;
	p.limit = sch->limit;
	p.flow_limit = q->flow_limit;
	p.flow_budget = q->flow_budget;
	p.flow_budget_time = q->flow_budget_time;
	p.flow_limit_time = q->flow_limit_time;
	p.ce_threshold = q->ce_threshold;
	p.timer_slack = q->timer_slack;
	p.horizon_drop = q->horizon_drop;
	carousel_parse(tb, &p);
	err = carousel_params_check(&p, extack);
	if (err)
		return err;

	levels = carousel_wheel_levels(p.granularity, p.horizon);
	if (!q->wheel || q->wheel->gran != p.granularity ||
	    q->wheel->levels != levels) {
		w = kvzalloc(carousel_wheel_size(levels), GFP_KERNEL);
		if (!w)
			return -ENOMEM;
		carousel_wheel_init(w, levels, p.granularity, ktime_get_ns());
	}

	sch_tree_lock(sch);
	rerate = p.rate != q->rate;
	WRITE_ONCE(q->rate, p.rate);
	/* A new ceiling starts its clock now, and a watchdog armed for the
	 * old one is brought forward: a packet held by an old, tiny ceiling
	 * must not hold the link for hours; nor may the new clock start in
	 * the past and release the held backlog at once.  Class clocks that
	 * ran ahead under the old one are clamped (carousel_clamp_clock()).
	 */
	if (rerate) {
		u64 now = ktime_get_ns();
		struct carousel_class *cl;
		u32 minor;

		q->ceil_next = now;
		q->ceil_rem = 0;
		/* The class table is stable under the tree lock held here. */
		q->active_rate = 0;
		carousel_for_each_class(q, minor, cl) {
			if (carousel_class_active(cl))
				q->active_rate += cl->rate;
		}
		carousel_for_each_class(q, minor, cl)
			carousel_rerate(sch, cl, now);
		if (q->wheel && carousel_placed(q))
			carousel_arm(q, now);
	}
	WRITE_ONCE(q->horizon, p.horizon);
	WRITE_ONCE(q->default_minor, p.default_minor);
	WRITE_ONCE(sch->limit, p.limit);
	WRITE_ONCE(q->flow_limit, p.flow_limit);
	WRITE_ONCE(q->flow_budget, p.flow_budget);
	WRITE_ONCE(q->flow_budget_time, p.flow_budget_time);
	WRITE_ONCE(q->flow_limit_time, p.flow_limit_time);
	WRITE_ONCE(q->pacing_shift, p.flow_budget ?
		   carousel_pacing_shift(p.flow_budget_time) : 0);
	WRITE_ONCE(q->ce_threshold, p.ce_threshold);
	WRITE_ONCE(q->timer_slack, p.timer_slack);
	WRITE_ONCE(q->horizon_drop, p.horizon_drop);

	/* A packet peeked into gso_skb still counts against the limit. */
	keep = p.limit - min_t(u32, p.limit, skb_queue_len(&sch->gso_skb));
	if (w) {
		old = q->wheel;
		if (old)
			carousel_rebuild(sch, w, levels, p.granularity, keep);
		else
			q->wheel = w;
	} else if (q->skbs > keep) {
		carousel_rebuild(sch, q->wheel, levels, p.granularity, keep);
	}
	sch_tree_unlock(sch);

	kvfree(old);
	return 0;
}

/*
 * The qdisc with handle major, if it exists yet: the root, or one in the
 * device's hash (under RTNL).  Major 0, and the builtin noop root a
 * device starts with, are a root still being built: mq making its
 * default children, as net.core.default_qdisc does.
 */
static struct Qdisc *carousel_qdisc_find(struct net_device *dev, u32 major)
{
	struct Qdisc *root = rtnl_dereference(dev->qdisc), *p;

	if (!major)
		return NULL;
	if (root && !(root->flags & TCQ_F_BUILTIN) && root->handle == major)
		return root;
	hash_for_each_possible(dev->qdisc_hash, p, hash, major) {
		if (p->handle == major)
			return p;
	}
	return NULL;
}

/*
 * Parents that dequeue or peek a child only when they decide to send,
 * and take NULL for "empty": a qdisc that holds packets for later makes
 * htb warn, drr, qfq and ets stall the sibling classes, and hfsc read a
 * length of 0.  Refused anywhere above us, with an extack message, as
 * taprio and mqprio refuse other parents.  prio, multiq, tbf, netem and
 * the like ask again (our watchdog schedules the root) and are fine.
 */
static const char * const carousel_bad_parents[] = {
	"htb", "drr", "qfq", "ets", "hfsc",
};

static int carousel_check_parent(struct Qdisc *sch,
				 struct netlink_ext_ack *extack)
{
	struct net_device *dev = qdisc_dev(sch);
	u32 parent = sch->parent;
	struct Qdisc *p;
	int depth, i;

	for (depth = 0; parent != TC_H_ROOT && depth < 16; depth++) {
		p = carousel_qdisc_find(dev, TC_H_MAJ(parent));
		if (!p)
			return 0;
		for (i = 0; i < ARRAY_SIZE(carousel_bad_parents); i++) {
			if (strcmp(p->ops->id, carousel_bad_parents[i]))
				continue;
			NL_SET_ERR_MSG(extack, "carousel: cannot be below htb, drr, qfq, ets or hfsc");
			return -EOPNOTSUPP;
		}
		parent = p->parent;
	}
	return 0;
}

static int carousel_init(struct Qdisc *sch, struct nlattr *opt,
			 struct netlink_ext_ack *extack)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	int err;

	/* (destroy, which follows a failed init, needs these) */
	qdisc_watchdog_init_clockid(&q->watchdog, sch, CLOCK_MONOTONIC);
	INIT_LIST_HEAD(&q->lingering);
	err = carousel_check_parent(sch, extack);
	if (err)
		return err;
	sch->limit		= 10000;
	q->flow_limit		= 100;
	q->flow_budget		= CAROUSEL_BUDGET_DEFAULT;
	q->flow_budget_time	= CAROUSEL_BUDGET_T_DEFAULT;
	q->flow_limit_time	= CAROUSEL_FLOW_T_DEFAULT;
	q->horizon		= 10ULL * NSEC_PER_SEC;
	q->horizon_drop		= 1;
	q->timer_slack		= 10 * NSEC_PER_USEC;

	err = tcf_block_get(&q->block, &q->filter_list, sch, extack);
	if (err)
		return err;

	q->flow_hash = kvcalloc(CAROUSEL_FLOWS, sizeof(*q->flow_hash),
				GFP_KERNEL);
	if (!q->flow_hash)
		return -ENOMEM;

	return carousel_change(sch, opt, extack);
}

static void carousel_destroy(struct Qdisc *sch)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_class *cl;
	struct carousel_flow *fl;
	struct hlist_node *tmp;
	u32 minor;

	tcf_block_put(q->block);
	qdisc_watchdog_cancel(&q->watchdog);
	carousel_reset(sch);
	carousel_for_each_class(q, minor, cl) {
		gen_kill_estimator(&cl->rate_est);
		kfree(cl);
	}
	for (minor = 0; minor < CAROUSEL_CLS_PAGES; minor++)
		kfree(q->class_pages[minor]);
	kvfree(q->wheel);
	kvfree(q->flow_hash);
	hlist_for_each_entry_safe(fl, tmp, &q->flow_stash, node)
		kmem_cache_free(carousel_flow_cachep, fl);
}

static int carousel_dump(struct Qdisc *sch, struct sk_buff *skb)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct nlattr *opts;

	opts = nla_nest_start_noflag(skb, TCA_OPTIONS);
	if (!opts)
		goto nla_put_failure;

	if (nla_put_u64_64bit(skb, TCA_CAROUSEL_RATE, READ_ONCE(q->rate),
			      TCA_CAROUSEL_PAD) ||
	    nla_put_u32(skb, TCA_CAROUSEL_DEFAULT,
			READ_ONCE(q->default_minor)) ||
	    nla_put_u32(skb, TCA_CAROUSEL_GRANULARITY, q->wheel->gran) ||
	    nla_put_u32(skb, TCA_CAROUSEL_HORIZON,
			div_u64(READ_ONCE(q->horizon), NSEC_PER_USEC)) ||
	    nla_put_u8(skb, TCA_CAROUSEL_HORIZON_DROP,
		       READ_ONCE(q->horizon_drop)) ||
	    nla_put_u32(skb, TCA_CAROUSEL_LIMIT, READ_ONCE(sch->limit)) ||
	    nla_put_u32(skb, TCA_CAROUSEL_FLOW_LIMIT,
			READ_ONCE(q->flow_limit)) ||
	    nla_put_u32(skb, TCA_CAROUSEL_FLOW_BUDGET,
			READ_ONCE(q->flow_budget)) ||
	    nla_put_u32(skb, TCA_CAROUSEL_FLOW_BUDGET_TIME,
			READ_ONCE(q->flow_budget_time)) ||
	    nla_put_u32(skb, TCA_CAROUSEL_FLOW_LIMIT_TIME,
			READ_ONCE(q->flow_limit_time)) ||
	    nla_put_u32(skb, TCA_CAROUSEL_CE_THRESHOLD,
			READ_ONCE(q->ce_threshold)) ||
	    nla_put_u32(skb, TCA_CAROUSEL_TIMER_SLACK,
			READ_ONCE(q->timer_slack)))
		goto nla_put_failure;

	return nla_nest_end(skb, opts);

nla_put_failure:
	return -1;
}

/* Where each counter of the statistics nest is in its struct. */
struct carousel_xstat {
	u16	attr;
	u16	off;
	u16	size;
};

#define CAROUSEL_QDISC_XSTAT(attr, field)				\
	{ TCA_CAROUSEL_XSTATS_##attr, offsetof(struct tc_carousel_xstats, field), \
	  sizeof_field(struct tc_carousel_xstats, field) },
#define CAROUSEL_CLASS_XSTAT(attr, field)				\
	{ TCA_CAROUSEL_XSTATS_##attr,					\
	  offsetof(struct tc_carousel_class_xstats, field),		\
	  sizeof_field(struct tc_carousel_class_xstats, field) },

static const struct carousel_xstat carousel_qdisc_xstats[] = {
	TC_CAROUSEL_QDISC_XSTATS(CAROUSEL_QDISC_XSTAT)
};

static const struct carousel_xstat carousel_class_xstats[] = {
	TC_CAROUSEL_CLASS_XSTATS(CAROUSEL_CLASS_XSTAT)
};

/* TCA_STATS_APP: the kind, then each counter of st as u64 (uapi/carousel.h). */
static int carousel_put_xstats(struct gnet_dump *d, u32 kind, const void *st,
			       const struct carousel_xstat *x, unsigned int n)
{
	struct sk_buff *skb = d->skb;
	struct nlattr *nest;
	unsigned int i;
	u64 v;

	nest = nla_nest_start_noflag(skb, TCA_STATS_APP);
	if (!nest)
		return -1;
	if (nla_put_u32(skb, TCA_CAROUSEL_XSTATS_KIND, kind))
		goto cancel;
	for (i = 0; i < n; i++) {
		if (x[i].size == sizeof(u32))
			v = *(const u32 *)(st + x[i].off);
		else
			v = *(const u64 *)(st + x[i].off);
		if (nla_put_u64_64bit(skb, x[i].attr, v,
				      TCA_CAROUSEL_XSTATS_PAD))
			goto cancel;
	}
	nla_nest_end(skb, nest);
	return 0;
cancel:
	nla_nest_cancel(skb, nest);
	return -1;
}

static int carousel_dump_stats(struct Qdisc *sch, struct gnet_dump *d)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	u32 budget = CAROUSEL_DEQUEUE_BUDGET;
	struct tc_carousel_xstats st = { };
	struct carousel_wheel *w;
	u64 now = ktime_get_ns();
	struct carousel_slot *s;
	u64 wake, next;

	sch_tree_lock(sch);
	w = q->wheel;
	st.wheel_packets	= carousel_placed(q);
	st.waiting_packets	= q->nr_waiting;
	st.horizon_drops	= q->stat_horizon_drops;
	st.horizon_caps		= q->stat_horizon_caps;
	st.limit_drops		= q->stat_limit_drops;
	st.flow_limit_drops	= q->stat_flow_limit_drops;
	st.filter_drops		= q->stat_filter_drops;
	st.unclassified		= q->stat_unclassified;
	st.alloc_drops		= q->stat_alloc_drops;
	st.ce_marks		= q->stat_ce_marks;
	st.cn_returns		= q->stat_cn_returns;
	st.catchup_holds	= q->stat_catchup_holds;
	st.catchup_lost_ns	= q->stat_catchup_lost;
	st.flow_time_drops	= q->stat_flow_time_drops;
	st.flows		= q->nr_flows;
	st.timer_arms		= q->stat_timer_arms;
	st.timer_fires		= q->stat_timer_fires;
	st.timer_latency_ns	= q->stat_timer_latency;
	st.timer_latency_max_ns	= q->stat_timer_latency_max;
	st.classes		= q->nr_classes;
	st.wheel_bytes		= carousel_wheel_size(w->levels) +
				  CAROUSEL_FLOWS * sizeof(*q->flow_hash);
	st.wheel_levels		= w->levels;

	/*
	 * Peeking may cascade, which is what dequeue would do next anyway,
	 * on the same budget: a slot is only cascaded once now has reached
	 * its start, and a cascade this leaves under way is taken up by the
	 * next dequeue, at the latest when the watchdog armed for its
	 * earliest packet fires.
	 */
	s = carousel_wheel_first(w, div_u64(now, w->gran), &wake, &budget);
	next = s ? carousel_skb_time(s->head) :
	       wake == CAROUSEL_WHEEL_BUSY ? now :
	       wake == ~0ULL ? ~0ULL : wake * w->gran;
	if (q->due_head)
		next = min(next, carousel_skb_time(q->due_head));
	st.cascades = w->cascades;
	if (next != ~0ULL && q->rate)
		next = max(next, q->ceil_next);
	st.next_departure_ns = next == ~0ULL ? ~0ULL :
			       next > now ? next - now : 0;
	sch_tree_unlock(sch);

	return carousel_put_xstats(d, TC_CAROUSEL_XSTATS_QDISC, &st,
				   carousel_qdisc_xstats,
				   ARRAY_SIZE(carousel_qdisc_xstats));
}

/* Classes */

static unsigned long carousel_find(struct Qdisc *sch, u32 classid)
{
	return (unsigned long)carousel_lookup(sch, classid);
}

static int carousel_change_class(struct Qdisc *sch, u32 classid, u32 parentid,
				 struct nlattr **tca, unsigned long *arg,
				 struct netlink_ext_ack *extack)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_class *cl = (struct carousel_class *)*arg;
	struct nlattr *tb[TCA_CAROUSEL_CLASS_MAX + 1];
	struct nlattr *opt = tca[TCA_OPTIONS];
	struct carousel_class_page *page, *new_page = NULL;
	u64 rate = cl ? cl->rate : 0;
	u32 burst = cl ? cl->burst : 0;
	bool rerate;
	int err;

	if (!opt) {
		NL_SET_ERR_MSG_MOD(extack, "class options are missing: rate is required");
		return -EINVAL;
	}
	err = carousel_parse_nested(tb, TCA_CAROUSEL_CLASS_MAX, opt,
				    carousel_class_policy,
				    carousel_class_range_msg, extack);
	if (err < 0)
		return err;

	if (tb[TCA_CAROUSEL_CLASS_RATE]) {
		rate = nla_get_u64(tb[TCA_CAROUSEL_CLASS_RATE]);
	} else if (!cl) {
		NL_SET_ERR_MSG_MOD(extack, "a new class needs a rate");
		return -EINVAL;
	}
	if (tb[TCA_CAROUSEL_CLASS_BURST])
		burst = nla_get_u32(tb[TCA_CAROUSEL_CLASS_BURST]);

	if (cl) {
		if (parentid && parentid != TC_H_ROOT &&
		    parentid != sch->handle) {
			NL_SET_ERR_MSG_MOD(extack, "a class cannot change its parent");
			return -EINVAL;
		}
		/* The last step that can fail, so a failure changes nothing. */
		if (tca[TCA_RATE]) {
			err = gen_replace_estimator(&cl->bstats, NULL,
						    &cl->rate_est, NULL, true,
						    tca[TCA_RATE]);
			if (err == -EINVAL)
				NL_SET_ERR_MSG_ATTR(extack, tca[TCA_RATE],
						    "carousel: bad rate estimator");
			if (err)
				return err;
		}
		sch_tree_lock(sch);
		if (carousel_class_active(cl))
			q->active_rate += rate - cl->rate;
		rerate = rate != cl->rate;
		if (rerate)
			cl->tx_rem = 0;	/* a fraction of the old rate's ns */
		/* a new credit is measured from the class clock afresh */
		if ((rerate || burst != cl->burst) && !cl->held)
			cl->release = 0;
		/*
		 * Packets charged at the old rate keep their times: the
		 * release clock runs at the higher of the two until they have
		 * left (carousel_clamp_clock(), at once for an idle class), so
		 * it never holds them back for a rate they were not charged at.
		 */
		if (rate > cl->release_rate)
			cl->release_rate = rate;
		carousel_set_rate(cl, rate, burst);
		if (rerate)
			carousel_rerate(sch, cl, ktime_get_ns());
		sch_tree_unlock(sch);
		return 0;
	}

	if (TC_H_MAJ(classid) != sch->handle || !TC_H_MIN(classid)) {
		NL_SET_ERR_MSG_MOD(extack, "classid must be <qdisc handle>:<non-zero minor>");
		return -EINVAL;
	}
	if (parentid && parentid != TC_H_ROOT && parentid != sch->handle) {
		NL_SET_ERR_MSG_MOD(extack, "parent must be the qdisc: classes do not nest");
		return -EINVAL;
	}

	if (carousel_class_get(q, TC_H_MIN(classid))) {
		NL_SET_ERR_MSG_MOD(extack, "class already exists");
		return -EEXIST;
	}
	page = q->class_pages[CAROUSEL_CLS_PG(TC_H_MIN(classid))];
	if (!page) {
		new_page = kzalloc(sizeof(*new_page), GFP_KERNEL);
		if (!new_page)
			return -ENOMEM;
		page = new_page;
	}
	cl = kzalloc(sizeof(*cl), GFP_KERNEL);
	if (!cl) {
		kfree(new_page);
		return -ENOMEM;
	}
	cl->minor = TC_H_MIN(classid);
	carousel_set_rate(cl, rate, burst);
	cl->release_rate = rate;
	INIT_LIST_HEAD(&cl->new_flows);
	INIT_LIST_HEAD(&cl->old_flows);
	gnet_stats_basic_sync_init(&cl->bstats);
	if (tca[TCA_RATE]) {
		err = gen_new_estimator(&cl->bstats, NULL, &cl->rate_est, NULL,
					true, tca[TCA_RATE]);
		if (err == -EINVAL)
			NL_SET_ERR_MSG_ATTR(extack, tca[TCA_RATE],
					    "carousel: bad rate estimator");
		if (err) {
			kfree(cl);
			kfree(new_page);
			return err;
		}
	}

	sch_tree_lock(sch);
	if (new_page)
		q->class_pages[CAROUSEL_CLS_PG(cl->minor)] = new_page;
	page->cl[CAROUSEL_CLS_SLOT(cl->minor)] = cl;
	q->nr_classes++;
	sch_tree_unlock(sch);

	*arg = (unsigned long)cl;
	return 0;
}

static int carousel_delete_class(struct Qdisc *sch, unsigned long arg,
				 struct netlink_ext_ack *extack)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_class *cl = (struct carousel_class *)arg;
	u32 pg = CAROUSEL_CLS_PG(cl->minor);
	struct carousel_class_page *page = q->class_pages[pg];
	bool busy, empty = true;
	u32 i;

	if (cl->filter_cnt) {
		NL_SET_ERR_MSG_MOD(extack, "class is in use by a filter: delete the filter first");
		return -EBUSY;
	}

	/* Its last filter is gone, but an enqueue that found that filter
	 * before it went may still be classifying, under the root lock; the
	 * unbind cleared the filter's res.class, so it may look the class up
	 * by res.classid.  Under the root lock here, it has finished (and
	 * its packet is in the qlen read below); enqueues after this one no
	 * longer see the filter, nor the class in the table.
	 */
	for (i = 0; i < CAROUSEL_CLS_PAGE; i++) {
		if (page->cl[i] && page->cl[i] != cl) {
			empty = false;
			break;
		}
	}
	sch_tree_lock(sch);
	page->cl[CAROUSEL_CLS_SLOT(cl->minor)] = NULL;
	if (empty)
		q->class_pages[pg] = NULL;
	q->nr_classes--;
	carousel_forget_lingering(q, cl);
	busy = cl->qlen;
	if (busy) {
		/* Its packets still leave; the last one frees it. */
		if (carousel_class_active(cl))
			q->active_rate -= cl->rate;
		cl->dead = 1;
	}
	sch_tree_unlock(sch);

	gen_kill_estimator(&cl->rate_est);
	if (empty)
		kfree(page);
	if (!busy)
		kfree(cl);
	return 0;
}

static void carousel_walk(struct Qdisc *sch, struct qdisc_walker *arg)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_class *cl;
	u32 minor;

	if (arg->stop)
		return;
	carousel_for_each_class(q, minor, cl) {
		if (!tc_qdisc_stats_dump(sch, (unsigned long)cl, arg))
			break;
	}
}

static struct tcf_block *carousel_tcf_block(struct Qdisc *sch,
					    unsigned long cl,
					    struct netlink_ext_ack *extack)
{
	struct carousel_sched_data *q = qdisc_priv(sch);

	if (cl) {
		NL_SET_ERR_MSG_MOD(extack, "filters attach to the qdisc, not to a class");
		return NULL;
	}
	return q->block;
}

static unsigned long carousel_bind_tcf(struct Qdisc *sch, unsigned long parent,
				       u32 classid)
{
	struct carousel_class *cl = carousel_lookup(sch, classid);

	if (cl)
		cl->filter_cnt++;
	return (unsigned long)cl;
}

static void carousel_unbind_tcf(struct Qdisc *sch, unsigned long arg)
{
	struct carousel_class *cl = (struct carousel_class *)arg;

	cl->filter_cnt--;
}

static int carousel_graft(struct Qdisc *sch, unsigned long arg,
			  struct Qdisc *new, struct Qdisc **old,
			  struct netlink_ext_ack *extack)
{
	NL_SET_ERR_MSG_MOD(extack, "classes hold no child qdisc: packets wait in the wheel");
	return -EOPNOTSUPP;
}

static struct Qdisc *carousel_leaf(struct Qdisc *sch, unsigned long arg)
{
	return NULL;
}

static int carousel_dump_class(struct Qdisc *sch, unsigned long arg,
			       struct sk_buff *skb, struct tcmsg *tcm)
{
	struct carousel_class *cl = (struct carousel_class *)arg;
	struct nlattr *opts;

	tcm->tcm_parent = TC_H_ROOT;
	tcm->tcm_handle = TC_H_MAKE(sch->handle, cl->minor);
	tcm->tcm_info = 0;

	opts = nla_nest_start_noflag(skb, TCA_OPTIONS);
	if (!opts)
		goto nla_put_failure;
	if (nla_put_u64_64bit(skb, TCA_CAROUSEL_CLASS_RATE, READ_ONCE(cl->rate),
			      TCA_CAROUSEL_CLASS_PAD) ||
	    nla_put_u32(skb, TCA_CAROUSEL_CLASS_BURST, READ_ONCE(cl->burst)))
		goto nla_put_failure;
	return nla_nest_end(skb, opts);

nla_put_failure:
	nla_nest_cancel(skb, opts);
	return -EMSGSIZE;
}

/* The last complete interval's delay statistics of cl at `now'. */
static void carousel_delay_stats(const struct carousel_class *cl, u64 now,
				 struct tc_carousel_class_xstats *xs)
{
	u32 epoch = now >> CAROUSEL_DELAY_SHIFT;

	if (cl->delay_epoch == epoch) {
		xs->delay_mean_ns = (u64)cl->last_mean * NSEC_PER_USEC;
		xs->delay_max_ns = (u64)cl->last_max * NSEC_PER_USEC;
		xs->delay_packets = cl->last_cnt;
	} else if (cl->delay_epoch + 1 == epoch && cl->delay_cnt) {
		xs->delay_mean_ns = div_u64(div_u64(cl->delay_sum,
						    cl->delay_cnt),
					    NSEC_PER_USEC) * NSEC_PER_USEC;
		xs->delay_max_ns = (u64)cl->delay_max * NSEC_PER_USEC;
		xs->delay_packets = cl->delay_cnt;
	}
	xs->delay_interval_ns = 1ULL << CAROUSEL_DELAY_SHIFT;
}

static int carousel_dump_class_stats(struct Qdisc *sch, unsigned long arg,
				     struct gnet_dump *d)
{
	struct carousel_sched_data *q = qdisc_priv(sch);
	struct carousel_class *cl = (struct carousel_class *)arg;
	struct tc_carousel_class_xstats xs = { };
	struct gnet_stats_basic_sync bs;
	struct gnet_stats_queue qs = { };
	u64 now;
	u32 qlen;

	gnet_stats_basic_sync_init(&bs);
	sch_tree_lock(sch);
	now = ktime_get_ns();	/* under the lock: no roll-over unseen */
	u64_stats_set(&bs.bytes, u64_stats_read(&cl->bstats.bytes));
	u64_stats_set(&bs.packets, u64_stats_read(&cl->bstats.packets));
	qs.backlog = cl->backlog;
	qs.drops = cl->drops;
	qlen = cl->qlen;
	xs.lag_ns = cl->time_next > now ? cl->time_next - now : 0;
	xs.effective_rate = carousel_effective_rate(q, cl);
	xs.flows = cl->flows;
	carousel_delay_stats(cl, now, &xs);
	sch_tree_unlock(sch);

	if (gnet_stats_copy_basic(d, NULL, &bs, true) < 0 ||
	    gnet_stats_copy_rate_est(d, &cl->rate_est) < 0 ||
	    gnet_stats_copy_queue(d, NULL, &qs, qlen) < 0)
		return -1;
	return carousel_put_xstats(d, TC_CAROUSEL_XSTATS_CLASS, &xs,
				   carousel_class_xstats,
				   ARRAY_SIZE(carousel_class_xstats));
}

static const struct Qdisc_class_ops carousel_class_ops = {
	.graft		=	carousel_graft,
	.leaf		=	carousel_leaf,
	.find		=	carousel_find,
	.change		=	carousel_change_class,
	.delete		=	carousel_delete_class,
	.walk		=	carousel_walk,
	.tcf_block	=	carousel_tcf_block,
	.bind_tcf	=	carousel_bind_tcf,
	.unbind_tcf	=	carousel_unbind_tcf,
	.dump		=	carousel_dump_class,
	.dump_stats	=	carousel_dump_class_stats,
};

static struct Qdisc_ops carousel_qdisc_ops __read_mostly = {
	.id		=	"carousel",
	.priv_size	=	sizeof(struct carousel_sched_data),
	.cl_ops		=	&carousel_class_ops,
	.enqueue	=	carousel_enqueue,
	.dequeue	=	carousel_dequeue,
	.peek		=	qdisc_peek_dequeued,
	.init		=	carousel_init,
	.reset		=	carousel_reset,
	.destroy	=	carousel_destroy,
	.change		=	carousel_change,
	.dump		=	carousel_dump,
	.dump_stats	=	carousel_dump_stats,
	.owner		=	THIS_MODULE,
};

static int __init carousel_module_init(void)
{
	int err;

	BUILD_BUG_ON(offsetof(struct carousel_class, bstats) > 64);
	carousel_flow_cachep = KMEM_CACHE(carousel_flow, 0);
	if (!carousel_flow_cachep)
		return -ENOMEM;
	err = register_qdisc(&carousel_qdisc_ops);
	if (err)
		kmem_cache_destroy(carousel_flow_cachep);
	return err;
}

static void __exit carousel_module_exit(void)
{
	unregister_qdisc(&carousel_qdisc_ops);
	kmem_cache_destroy(carousel_flow_cachep);
}

module_init(carousel_module_init);
module_exit(carousel_module_exit);
MODULE_AUTHOR("sch_carousel developers");
MODULE_DESCRIPTION("Carousel: timing-wheel traffic shaper");
MODULE_LICENSE("GPL");
MODULE_ALIAS_NET_SCH("carousel");

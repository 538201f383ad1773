/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The timing wheel of the carousel qdisc, and the per-packet state (skb->cb)
 * that holds a packet's time.
 *
 * The module and the userspace unit tests, fuzzer and benchmark compile
 * this very code.  In the kernel, the skb->cb part below gives the wheel
 * carousel_skb_time(); in userspace, tools/include/kshim.h gives it instead,
 * with struct sk_buff and the few kernel helpers the wheel uses, and
 * defines CAROUSEL_WHEEL_USER: include kshim.h first.
 */
#ifndef _CAROUSEL_WHEEL_H
#define _CAROUSEL_WHEEL_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/bitops.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/skbuff.h>
#include <linux/string.h>
#include <net/sch_generic.h>

struct carousel_flow;

struct carousel_class;

/*
 * Per-packet state, in the qdisc's 20 bytes of skb->cb (packed: all of
 * them).  A pending packet waits in the wheel at its own time, its EDT
 * stamp, and is charged to its class when that time comes; a charged
 * packet's time is its departure.  A packet with no flow (sch_carousel.c,
 * carousel_enqueue_due()) names its class directly.
 */
struct carousel_skb_cb {
	u64			time_to_send;	/* ns, CLOCK_MONOTONIC */
	union {
		struct carousel_flow	*fl;	/* its flow, which names its
						 * class
						 */
		struct carousel_class	*cl;	/* if flowless */
	};
	u8			pending;	/* not yet charged to its class */
	u8			ends;		/* last of a packet as handed over */
	u8			released;	/* held by, and past, the release
						 * clock (carousel_release())
						 */
	u8			flowless;	/* no flow: cl, not fl */
} __packed __aligned(4);

static inline struct carousel_skb_cb *carousel_cb(struct sk_buff *skb)
{
	qdisc_cb_private_validate(skb, sizeof(struct carousel_skb_cb));
	return (struct carousel_skb_cb *)qdisc_skb_cb(skb)->data;
}

static inline u64 carousel_skb_time(const struct sk_buff *skb)
{
	return carousel_cb((struct sk_buff *)skb)->time_to_send;
}

/* The same, read to look, not to move the packet (the tests tell apart) */
static inline u64 carousel_skb_peek_time(const struct sk_buff *skb)
{
	return carousel_skb_time(skb);
}
#elif !defined(CAROUSEL_WHEEL_USER)
#error "the wheel in userspace needs kshim.h (tools/include) first"
#endif /* __KERNEL__ */

/*
 * The timing wheel.
 *
 * Time is cut into ticks of `gran' ns.  The wheel has `levels' levels of
 * 1024 slots each; a slot of level L spans 1024^L ticks, so level 0 holds
 * single ticks and each level up is 1024 times coarser.  The cursor `cur'
 * is a tick no later than now and no later than any packet in the wheel.
 * A dequeue never moves it back: one whose reading of now is older than
 * the one that last moved it (sch_carousel.c, carousel_clock()) finds it
 * where it is.
 *
 * A packet at tick t sits on the level of the highest 10-bit digit in
 * which t and cur differ, in the slot that digit names.  So level 0 holds
 * the ticks left in cur's current level-1 slot, level 1 the rest of cur's
 * level-2 slot, and so on; the top level is a ring.  When the cursor
 * enters a new level-L slot, that slot is emptied into the levels below
 * ("cascade").  Each packet is moved at most levels - 1 times, so enqueue
 * and dequeue are O(1) amortised.
 *
 * A cascade is done in steps: carousel_wheel_first() moves at most a
 * budget of packets per call, so that no call holds the qdisc lock for
 * the whole of a slot that a million packets share.  While the slot is
 * being emptied (casc_level, casc_idx), nothing is taken from the wheel,
 * and a packet inserted with a time inside that slot joins the slot's
 * tail rather than a level below; so each slot's list stays in insertion
 * order, and the packets of a flow with non-decreasing times never
 * overtake each other.
 *
 * Each level has a 1024-bit map of non-empty slots and a 16-bit summary of
 * non-empty map words, so the next non-empty slot is found with two bit
 * scans per level, never by walking empty slots.
 *
 * The top level must cover the horizon twice over (so that a lagging
 * cursor never lets the ring wrap onto itself): carousel_wheel_levels()
 * picks the number of levels from granularity and horizon.  A packet
 * that would still wrap it (a cursor lagging by more than the horizon,
 * as when a device is stalled with packets queued) is refused by insert.
 *
 * The wheel reads a packet's departure time in ns with carousel_skb_time()
 * and links packets through skb->next.
 */
#define CAROUSEL_LVL_BITS	10
#define CAROUSEL_LVL_SLOTS	BIT(CAROUSEL_LVL_BITS)
#define CAROUSEL_LVL_MASK	(CAROUSEL_LVL_SLOTS - 1)
#define CAROUSEL_MAP_WORDS	(CAROUSEL_LVL_SLOTS / 64)
#define CAROUSEL_MAX_LEVELS	4

struct carousel_slot {
	struct sk_buff		*head;
	struct sk_buff		*tail;
};

struct carousel_level {
	u64			summary;	/* bit w set: map[w] != 0 */
	u64			map[CAROUSEL_MAP_WORDS];
	struct carousel_slot	slot[CAROUSEL_LVL_SLOTS];
};

struct carousel_wheel {
	u64			cur;		/* cursor, in ticks */
	u32			gran;		/* ns per tick */
	u32			levels;
	u32			count;		/* packets in the wheel */
	u16			casc_level;	/* the slot being cascaded (it */
	u16			casc_idx;	/* starts at cur); level 0: none */
	u64			cascades;	/* packets moved down a level */
	struct carousel_level	lvl[];
};

/* carousel_wheel_first()'s *wake when its budget ran out in a cascade. */
#define CAROUSEL_WHEEL_BUSY	0ULL

static inline size_t carousel_wheel_size(u32 levels)
{
	return sizeof(struct carousel_wheel) +
	       levels * sizeof(struct carousel_level);
}

static inline void carousel_wheel_init(struct carousel_wheel *w, u32 levels,
				       u32 gran, u64 now)
{
	memset(w, 0, carousel_wheel_size(levels));
	w->levels = levels;
	w->gran = gran;
	w->cur = div_u64(now, gran);
}

static inline u32 carousel_shift(u32 level)
{
	return level * CAROUSEL_LVL_BITS;
}

/*
 * Levels needed so that insert() accepts a packet at the horizon even
 * from a cursor lagging by the horizon: it takes up to 1023 top-level
 * slots ahead of the cursor, so 1023 * 1024^(levels-1) >= 2 * horizon
 * ticks.  At least two levels, so that level 0 is never the ring.
 */
static inline u32 carousel_wheel_levels(u32 gran, u64 horizon_ns)
{
	u64 ticks = div_u64(horizon_ns, gran) + 1;
	u32 levels = 2;

	while (((u64)CAROUSEL_LVL_MASK << carousel_shift(levels - 1)) <
	       2 * ticks && levels <= CAROUSEL_MAX_LEVELS)
		levels++;
	return levels;
}

static inline void carousel_slot_append(struct carousel_wheel *w, u32 level,
					u32 idx, struct sk_buff *skb)
{
	struct carousel_level *l = &w->lvl[level];
	struct carousel_slot *s = &l->slot[idx];

	skb->next = NULL;
	if (s->head) {
		s->tail->next = skb;
	} else {
		s->head = skb;
		l->map[idx / 64] |= 1ULL << (idx % 64);
		l->summary |= 1ULL << (idx / 64);
	}
	s->tail = skb;
}

/* Link skb into the slot for `tick' (>= cur), on the level the highest
 * differing digit of tick and cur names.
 */
static inline void carousel_wheel_place(struct carousel_wheel *w,
					struct sk_buff *skb, u64 tick)
{
	u64 diff = tick ^ w->cur;
	u32 level = diff ? (fls64(diff) - 1) / CAROUSEL_LVL_BITS : 0;

	if (level >= w->levels)
		level = w->levels - 1;
	carousel_slot_append(w, level,
			     (tick >> carousel_shift(level)) & CAROUSEL_LVL_MASK,
			     skb);
}

/* An empty wheel restarts its cursor at now: nothing constrains it. */
static inline void carousel_wheel_sync(struct carousel_wheel *w, u64 now)
{
	if (!w->count)
		w->cur = div_u64(now, w->gran);
}

/*
 * Put skb in the slot for `time' (ns), inline: it is on every packet's
 * path.  A time before the cursor is due and goes to the cursor's slot.
 * Returns false, without linking skb, if the time lies beyond what the
 * ring can tell apart from the cursor; that needs a cursor lagging by more
 * than the horizon (a device stalled with packets queued), and the caller
 * drops the packet.
 */
static __always_inline bool carousel_wheel_insert(struct carousel_wheel *w,
						  struct sk_buff *skb, u64 time)
{
	u64 tick = div_u64(time, w->gran);
	u64 top = 1ULL << carousel_shift(w->levels - 1);

	if (tick < w->cur)
		tick = w->cur;
	else if (tick - w->cur >= (top << CAROUSEL_LVL_BITS) - top)
		return false;
	if (unlikely(w->casc_level) &&
	    tick - w->cur < 1ULL << carousel_shift(w->casc_level))
		carousel_slot_append(w, w->casc_level, w->casc_idx, skb);
	else
		carousel_wheel_place(w, skb, tick);
	w->count++;
	return true;
}

/*
 * Class time of len bytes at rate bytes/s, in ns, with the remainder of
 * the division carried in *rem from one packet to the next, so that a
 * class clock drifts neither way at any rate and size: 64 B at 100 Gbit
 * is 5.12 ns, not 5; 1000 B at 8.8 Tbit 0.909 ns, not 0.  The remainder
 * (< rate <= 2^40) is kept in 16 bits, scaled down by `shift' and rounded
 * up, so that the scaling can only slow the clock, by less than
 * 2^shift / rate <= 2^-14 ns a packet, never speed it up.  A rate change
 * must zero *rem (it is a fraction of the old rate).
 */
static inline u64 carousel_tx_rem(u32 len, u64 rate, u16 *rem)
{
	int shift = fls64(rate) - 15;
	u64 ns, r;

	if (shift < 0)
		shift = 0;
	ns = div64_u64_rem((u64)len * NSEC_PER_SEC + ((u64)*rem << shift),
			   rate, &r);
	/* r < rate < 2^(shift + 15): rounded up, it still fits */
	*rem = (r + (1ULL << shift) - 1) >> shift;
	return ns;
}

/* First set bit of a level's map at or after `from', or -1. */
static inline int carousel_level_find(const struct carousel_level *l, u32 from)
{
	u32 word = from / 64;
	u64 bits, sum;

	if (from >= CAROUSEL_LVL_SLOTS)
		return -1;
	bits = l->map[word] & (~0ULL << (from % 64));
	if (bits)
		return word * 64 + __ffs64(bits);
	if (word + 1 >= CAROUSEL_MAP_WORDS)
		return -1;
	sum = l->summary & (~0ULL << (word + 1));
	if (!sum)
		return -1;
	word = __ffs64(sum);
	return word * 64 + __ffs64(l->map[word]);
}

/*
 * Move packets of the slot being cascaded to the levels below, at most
 * *budget of them (all if budget is NULL).  Returns true once the slot is
 * empty and the cascade done.
 */
static inline bool carousel_cascade(struct carousel_wheel *w, u32 *budget)
{
	struct carousel_level *l = &w->lvl[w->casc_level];
	u32 idx = w->casc_idx;
	struct carousel_slot *s = &l->slot[idx];

	while (s->head) {
		struct sk_buff *skb = s->head;

		if (budget) {
			if (!*budget)
				return false;
			(*budget)--;
		}
		s->head = skb->next;
		/* a packet that joined the slot due is due at the cursor */
		carousel_wheel_place(w, skb,
				     max(div_u64(carousel_skb_time(skb), w->gran),
					 w->cur));
		w->cascades++;
	}
	s->tail = NULL;
	l->map[idx / 64] &= ~(1ULL << (idx % 64));
	if (!l->map[idx / 64])
		l->summary &= ~(1ULL << (idx / 64));
	w->casc_level = 0;
	return true;
}

/*
 * How many packets of a coarser slot carousel_slot_wake() reads: enough
 * for the few paced packets of a slot of a lightly loaded wheel, and a
 * bound on what every call that stops at a crowded slot reads in vain
 * (a line each, next to the time in the cb) before it falls back to the
 * slot's start.
 */
#define CAROUSEL_WAKE_PEEK	8

/*
 * The tick at which to come back for coarser slot s, starting at tick
 * start, later than now: its earliest packet's, if it holds no more than
 * CAROUSEL_WAKE_PEEK packets, else its start.  Woken at the start, a
 * dequeue would cascade the slot and sleep again until the packet: two
 * timer fires for every packet paced more than a level-0 span (1 ms at
 * the default 1 us granularity) after the one before, as a TCP flow's
 * are below 12 Mbit.  The slot is cascaded once its earliest packet is
 * due, and the cascade places the others as it would have at the start.
 */
static inline u64 carousel_slot_wake(const struct carousel_wheel *w,
				     const struct carousel_slot *s, u64 start)
{
	const struct sk_buff *skb;
	u64 first = ~0ULL;
	u32 n = 0;

	for (skb = s->head; skb; skb = skb->next) {
		if (++n > CAROUSEL_WAKE_PEEK)
			return start;
		first = min(first,
			    div_u64(carousel_skb_peek_time(skb), w->gran));
	}
	return max(first, start);
}

/*
 * The level-0 slot holding the earliest packets, cascading every coarser
 * slot the cursor enters on the way, but never moving the cursor past
 * now_tick.  Returns NULL if the wheel is empty (*wake = ~0), if the
 * earliest packets sit in a coarser slot that starts after now_tick
 * (*wake: the tick of its earliest packet, or of its start if it holds
 * many (carousel_slot_wake()): come back then), or if a cascade
 * has used up *budget packet moves (*wake = CAROUSEL_WHEEL_BUSY: come
 * back at once; the next call goes on where this one stopped).  A NULL
 * budget is no bound.
 */
static __always_inline struct carousel_slot *
carousel_wheel_first(struct carousel_wheel *w, u64 now_tick, u64 *wake,
		     u32 *budget)
{
	*wake = ~0ULL;
	while (w->count) {
		u64 base, start;
		u32 level;
		int idx;

		if (w->casc_level) {
			if (!carousel_cascade(w, budget)) {
				*wake = CAROUSEL_WHEEL_BUSY;
				return NULL;
			}
			continue;
		}

		/* The slot at the cursor, where a packet due now goes, is the
		 * first the scan below would find: no need to scan.
		 */
		idx = w->cur & CAROUSEL_LVL_MASK;
		if (w->lvl[0].slot[idx].head)
			return &w->lvl[0].slot[idx];
		idx = carousel_level_find(&w->lvl[0], idx);
		if (idx < 0 && w->levels == 1)	/* level 0 is the ring */
			idx = carousel_level_find(&w->lvl[0], 0);
		if (idx >= 0) {
			u64 tick = w->cur + ((idx - w->cur) & CAROUSEL_LVL_MASK);

			w->cur = tick < now_tick ? tick : max(w->cur, now_tick);
			return &w->lvl[0].slot[idx];
		}

		for (level = 1; level < w->levels; level++) {
			base = w->cur >> carousel_shift(level);
			idx = carousel_level_find(&w->lvl[level],
						  (base & CAROUSEL_LVL_MASK) + 1);
			if (idx < 0 && level == w->levels - 1)
				idx = carousel_level_find(&w->lvl[level], 0);
			if (idx >= 0)
				break;
		}
		if (WARN_ON_ONCE(idx < 0))
			return NULL;

		start = (base + ((idx - base) & CAROUSEL_LVL_MASK)) <<
			carousel_shift(level);
		if (start > now_tick) {
			if (now_tick > w->cur)
				w->cur = now_tick;
			*wake = carousel_slot_wake(w, &w->lvl[level].slot[idx],
						   start);
			return NULL;
		}
		w->cur = start;
		w->casc_level = level;
		w->casc_idx = idx;
	}
	return NULL;
}

/* Unlink and return the head of a level-0 slot from carousel_wheel_first. */
static inline struct sk_buff *carousel_wheel_pop(struct carousel_wheel *w,
						 struct carousel_slot *s)
{
	struct carousel_level *l = &w->lvl[0];
	struct sk_buff *skb = s->head;
	u32 idx = s - l->slot;

	s->head = skb->next;
	skb->next = NULL;
	if (!s->head) {
		s->tail = NULL;
		l->map[idx / 64] &= ~(1ULL << (idx % 64));
		if (!l->map[idx / 64])
			l->summary &= ~(1ULL << (idx / 64));
	}
	w->count--;
	return skb;
}

/*
 * Unlink and return the earliest packet, due or not.  This may move the
 * cursor past now: only for emptying the wheel (purge, rebuild).
 */
static inline struct sk_buff *carousel_wheel_pop_first(struct carousel_wheel *w)
{
	struct carousel_slot *s;
	u64 wake;

	s = carousel_wheel_first(w, ~0ULL, &wake, NULL);
	return s ? carousel_wheel_pop(w, s) : NULL;
}

#endif /* _CAROUSEL_WHEEL_H */

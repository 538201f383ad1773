/* SPDX-License-Identifier: GPL-2.0 */
/*
 * model.h - the reference model of the timing wheel of carousel_wheel.h,
 * taken from its design comment rather than from its code, for the
 * programs that check the wheel against it: selftests/unit/wheel_test.c
 * and selftests/fuzz/fuzz_wheel.c.
 *
 * The wheel must behave as a priority queue ordered by (effective tick,
 * insertion order), where a packet's effective tick is
 * max(time / gran, cursor at insertion): a time before the cursor is due
 * and goes to the cursor's slot.  A queued packet sits on the level of the
 * highest 10-bit digit in which its effective tick and the cursor differ
 * (at most the top level), in the slot that digit names.  insert() refuses
 * a packet model_span() or more ticks ahead of the cursor.
 *
 * The includer includes kshim.h and carousel_wheel.h first, and defines
 * MODEL_CHECK(cond, fmt, ...), a statement that reports a false cond and
 * then returns false from the function it is in, or ends the program.
 */
#ifndef _CAROUSEL_MODEL_H
#define _CAROUSEL_MODEL_H

#ifndef MODEL_CHECK
#error "define MODEL_CHECK(cond, fmt, ...) before including model.h"
#endif

/* Effective tick of a packet at `time' ns inserted with the cursor at cur. */
static inline u64 model_eff(u64 time, u32 gran, u64 cur)
{
	u64 tick = time / gran;

	return tick > cur ? tick : cur;
}

/* Level the design comment assigns to effective tick eff for cursor cur. */
static inline u32 model_level(u32 levels, u64 eff, u64 cur)
{
	u64 diff = eff ^ cur;
	u32 level = diff ? (fls64(diff) - 1) / CAROUSEL_LVL_BITS : 0;

	return level < levels ? level : levels - 1;
}

/* Slot of effective tick eff on `level'. */
static inline u32 model_slot(u64 eff, u32 level)
{
	return (eff >> (CAROUSEL_LVL_BITS * level)) & CAROUSEL_LVL_MASK;
}

/* Ticks ahead of the cursor from which insert() refuses a packet. */
static inline u64 model_span(u32 levels)
{
	u64 top = 1ULL << (CAROUSEL_LVL_BITS * (levels - 1));

	return (top << CAROUSEL_LVL_BITS) - top;
}

/*
 * The queue: a binary heap of packet ids, ordered by the includer's
 * less(ctx, a, b), a strict total order (so its top is unique), passed to
 * every call (a constant there, so that it inlines).  With pos (pos[id]:
 * where id is in the heap), any packet can be deleted.
 */
struct model_heap {
	u32		*id;
	u32		*pos;
	u32		n;
};

typedef bool (*model_less_fn)(const void *ctx, u32 a, u32 b);

static inline void model_heap_set(struct model_heap *h, u32 i, u32 id)
{
	h->id[i] = id;
	if (h->pos)
		h->pos[id] = i;
}

static inline void model_heap_up(struct model_heap *h, u32 i,
				 model_less_fn less, const void *ctx)
{
	u32 id = h->id[i];

	while (i) {
		u32 p = (i - 1) / 2;

		if (!less(ctx, id, h->id[p]))
			break;
		model_heap_set(h, i, h->id[p]);
		i = p;
	}
	model_heap_set(h, i, id);
}

static inline void model_heap_down(struct model_heap *h, u32 i,
				   model_less_fn less, const void *ctx)
{
	u32 n = h->n, id = h->id[i];

	for (;;) {
		u32 c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && less(ctx, h->id[c + 1], h->id[c]))
			c++;
		if (!less(ctx, h->id[c], id))
			break;
		model_heap_set(h, i, h->id[c]);
		i = c;
	}
	model_heap_set(h, i, id);
}

static inline void model_heap_push(struct model_heap *h, u32 id,
				   model_less_fn less, const void *ctx)
{
	u32 i = h->n++;

	model_heap_set(h, i, id);
	model_heap_up(h, i, less, ctx);
}

/* Remove and return the top. */
static inline u32 model_heap_pop(struct model_heap *h, model_less_fn less,
				  const void *ctx)
{
	u32 top = h->id[0];

	if (--h->n) {
		model_heap_set(h, 0, h->id[h->n]);
		model_heap_down(h, 0, less, ctx);
	}
	return top;
}

/* Remove packet id, wherever it is (needs pos). */
static inline void model_heap_del(struct model_heap *h, u32 id,
				  model_less_fn less, const void *ctx)
{
	u32 i = h->pos[id], last = h->id[--h->n];

	if (i == h->n)
		return;
	model_heap_set(h, i, last);
	model_heap_up(h, i, less, ctx);
	model_heap_down(h, h->pos[last], less, ctx);
}

/*
 * Walk the whole wheel and check its structure against the model: no
 * stray summary bits, each summary bit set iff its map word is non-zero,
 * each map bit set iff its slot has packets, each slot's tail its last
 * packet, and each packet on the level and in the slot model_level() and
 * model_slot() give its effective tick.  visit() is called on each packet
 * in list order, with the one before it in the slot (NULL for the head):
 * it checks what only the includer knows (the packet is one of its own,
 * queued, after prev in insertion order; no list is longer than the queue)
 * and sets *eff to its effective tick, or returns false.  Returns false
 * on a failed check if MODEL_CHECK() returns.
 */
typedef bool (*model_visit_fn)(void *ctx, const struct sk_buff *skb,
			       const struct sk_buff *prev, u32 lv, u32 idx,
			       u64 *eff);

static inline bool model_walk(const struct carousel_wheel *w,
			      model_visit_fn visit, void *ctx)
{
	for (u32 lv = 0; lv < w->levels; lv++) {
		const struct carousel_level *l = &w->lvl[lv];

		MODEL_CHECK(!(l->summary >> (CAROUSEL_MAP_WORDS - 1) >> 1),
			    "level %u: stray summary bits %llx", lv, l->summary);
		for (u32 wd = 0; wd < CAROUSEL_MAP_WORDS; wd++)
			MODEL_CHECK(!!(l->summary & (1ULL << wd)) == !!l->map[wd],
				    "level %u: summary bit %u does not match its map word",
				    lv, wd);
		for (u32 idx = 0; idx < CAROUSEL_LVL_SLOTS; idx++) {
			const struct carousel_slot *sl = &l->slot[idx];
			bool bit = l->map[idx / 64] & (1ULL << (idx % 64));
			const struct sk_buff *b, *last = NULL;
			/* the slot being cascaded: the cursor is its start */
			bool casc = w->casc_level && lv == w->casc_level &&
				    idx == w->casc_idx;

			if (casc)
				MODEL_CHECK(lv < w->levels &&
					    !(w->cur & ((1ULL << (lv * CAROUSEL_LVL_BITS)) - 1)) &&
					    model_slot(w->cur, lv) == idx && sl->head,
					    "slot being cascaded: level %u slot %u (casc_level %u), cursor %llu not its start, or empty",
					    lv, idx, w->casc_level, w->cur);

			MODEL_CHECK(bit == !!sl->head,
				    "level %u slot %u: map bit %d, head %p",
				    lv, idx, bit, (void *)sl->head);
			for (b = sl->head; b; b = b->next) {
				u32 want;
				u64 eff;

				if (!visit(ctx, b, last, lv, idx, &eff))
					return false;
				/* packets in the slot being cascaded wait there */
				want = casc ? w->casc_level :
					      model_level(w->levels, eff, w->cur);

				MODEL_CHECK(want == lv && model_slot(eff, lv) == idx &&
					    (!casc || (eff >= w->cur &&
						       eff - w->cur < 1ULL << (lv * CAROUSEL_LVL_BITS))),
					    "packet %u (eff tick %llu) on level %u slot %u%s; cursor %llu puts it on level %u",
					    b->id, eff, lv, idx,
					    casc ? " (being cascaded)" : "", w->cur,
					    model_level(w->levels, eff, w->cur));
				last = b;
			}
			MODEL_CHECK(sl->tail == last,
				    "level %u slot %u: bad tail", lv, idx);
		}
	}
	return true;
}

#endif /* _CAROUSEL_MODEL_H */

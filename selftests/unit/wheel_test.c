// SPDX-License-Identifier: GPL-2.0
/*
 * wheel_test.c - userspace unit tests of the carousel timing wheel.
 *
 * Compiles the wheel of ../../carousel_wheel.h (the very code the module
 * uses) against kshim.h and checks it against the reference model of
 * ../lib/model.h.  Output
 * is KTAP; the last line is "N passed, N failed"; the exit status is 1 if
 * anything failed.
 *
 *   ./wheel_test [name-substring]   run all tests, or only matching ones
 *   WHEEL_SEED=n                    base seed of the random tests (default 1)
 *   WHEEL_SCALE=n                   multiply the number of random seeds
 *   WHEEL_TIMEOUT=s                 per-test watchdog (default 30 s, 0 = off)
 *
 * The reference model.  The wheel must behave as a priority queue ordered
 * by (effective tick, insertion order), where a packet's effective tick is
 * max(time / gran, cursor at insertion): a time before the cursor is due
 * and goes to the cursor's slot.  The model keeps the pending packets in
 * two of its heaps, one by time and one by (effective tick, id); ids are
 * handed out in insertion order.  On top of that every dequeue loop
 * (the qdisc's: first(), release the head while it is due) is checked for:
 *
 *  - order: every head first() returns is the model's minimum by
 *    (effective tick, id), which also gives FIFO within a tick and per-flow
 *    order for flows with non-decreasing times;
 *  - nothing early: a released packet has time <= now;
 *  - nothing late: when the loop stops on a head H that is not due, every
 *    packet that is due and still queued is in H's level-0 slot, and that
 *    slot's tick is now's tick (H->time < (now_tick + 1) * gran).  So a
 *    packet is released at the first dequeue at which it is due, except
 *    that it may wait behind a not-yet-due packet of the same tick, i.e. at
 *    most until H->time, less than one granule after now;
 *  - when first() returns NULL: nothing is due, the wake tick is > now's
 *    tick (no busy polling) and <= the earliest pending packet's tick (or
 *    ~0 for an empty wheel);
 *  - count matches the model; nothing lost or duplicated; the cursor never
 *    passes now;
 *  - every packet is cascaded at most (level it was inserted on) <= levels-1
 *    times, and the sum of the moves equals w->cascades;
 *  - the structure (maps, summaries, tails, FIFO lists, each packet on the
 *    level/slot the design comment assigns it) is verified periodically;
 *  - insert() refuses only packets >= 1023 * 1024^(levels-1) ticks ahead of
 *    the cursor, and accepts only packets the top ring can tell apart;
 *  - the wheel never WARNs.
 */
#include "kshim.h"
#include "carousel_wheel.h"

#include <signal.h>
#include <stdarg.h>
#include <time.h>
#include <unistd.h>

#ifndef WHEEL_BUILD
#define WHEEL_BUILD "plain"
#endif

unsigned long kshim_warns;
unsigned long kshim_ffs_zero;

#define NS_PER_MS	1000000ULL
#define NS_PER_S	1000000000ULL
#define NONE		(~0ULL)
#define POISON		((struct sk_buff *)0x5a5a5a5a5a5a5a5aULL)

/* ------------------------------------------------------------------ */
/* KTAP harness                                                        */

static unsigned int t_fail;		/* failed checks in the current test */
static char t_ctx[160];			/* what is being exercised, for diags */
static u64 base_seed = 1;
static unsigned int seed_scale = 1;

static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
}

static bool check_fail(int line, const char *expr, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static bool check_fail(int line, const char *expr, const char *fmt, ...)
{
	va_list ap;

	if (++t_fail <= 6) {
		printf("# FAIL [%s] line %d: %s: ", t_ctx, line, expr);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		fputc('\n', stdout);
	} else if (t_fail == 7) {
		diag("(further failures of this test not shown)");
	}
	return false;
}

/* Evaluates to the condition; a false one is reported and counted. */
#define CHECK(cond, ...) ((cond) ? true : check_fail(__LINE__, #cond, __VA_ARGS__))
/* In functions returning bool: report and return false. */
#define REQUIRE(cond, ...) do { if (!CHECK(cond, __VA_ARGS__)) return false; } while (0)

/* The model's checks report and return as ours do. */
#define MODEL_CHECK REQUIRE
#include "../lib/model.h"

static void ctx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ctx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t_ctx, sizeof(t_ctx), fmt, ap);
	va_end(ap);
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ */
/* PRNG: xoshiro256** seeded by splitmix64                             */

struct rng {
	u64 s[4];
};

static u64 splitmix64(u64 *x)
{
	u64 z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, u64 seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static inline u64 rotl(u64 x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static u64 rnd(struct rng *r)
{
	u64 *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

/* Uniform in [0, n), 0 for n == 0. */
static u64 rnd_below(struct rng *r, u64 n)
{
	return (u64)(((unsigned __int128)rnd(r) * n) >> 64);
}

static bool chance(struct rng *r, unsigned int pct)
{
	return rnd_below(r, 100) < pct;
}

/* ------------------------------------------------------------------ */
/* Configurations                                                      */

struct cfg {
	u32 gran;
	u64 horizon;
};

static const u32 grans[] = { 1, 7, 1000, 2000, 65536 };
static const u64 horizons[] = {
	1 * NS_PER_MS, 33 * NS_PER_MS, 1 * NS_PER_S, 10 * NS_PER_S,
	100 * NS_PER_S,
};
#define N_GRANS		(sizeof(grans) / sizeof(grans[0]))
#define N_HORIZONS	(sizeof(horizons) / sizeof(horizons[0]))
#define N_MATRIX	(N_GRANS * N_HORIZONS)

static struct cfg matrix[N_MATRIX];

static const char *fmt_ns(u64 ns, char *buf, size_t len)
{
	if (ns && ns % NS_PER_S == 0)
		snprintf(buf, len, "%llus", ns / NS_PER_S);
	else if (ns && ns % NS_PER_MS == 0)
		snprintf(buf, len, "%llums", ns / NS_PER_MS);
	else if (ns && ns % 1000 == 0)
		snprintf(buf, len, "%lluus", ns / 1000);
	else
		snprintf(buf, len, "%lluns", ns);
	return buf;
}

static void cfg_ctx(const struct cfg *c, const char *what)
{
	char h[32];

	ctx("%s gran=%uns horizon=%s levels=%u", what, c->gran,
	    fmt_ns(c->horizon, h, sizeof(h)),
	    carousel_wheel_levels(c->gran, c->horizon));
}

static u64 pow1024(u32 k)
{
	return 1ULL << (CAROUSEL_LVL_BITS * k);
}

/* ------------------------------------------------------------------ */
/* The simulation: a wheel, its packets and the reference model        */

enum { P_FREE, P_PENDING, P_RELEASED, P_REFUSED };

struct pinfo {
	u64	eff;		/* effective tick: max(tick, cursor at insert) */
	u64	rel_now;	/* now of the dequeue that released it */
	u32	seq;		/* rank among the accepted packets of its flow */
	u32	mark;
	u8	state;
	u8	level;		/* level it was inserted on */
};

struct flow {
	u64	last;		/* last time enqueued (monotone flows) */
	u32	next_seq;
	u32	rel_seq;	/* next seq expected out */
	bool	mono;		/* times non-decreasing in enqueue order */
};

struct sim {
	u32			gran, levels;
	u64			horizon;
	u64			top;	/* ticks per top-level slot */
	u64			span;	/* insert() refuses tick - cur >= span */
	struct carousel_wheel	*w;

	struct sk_buff		*skb;	/* pool, indexed by id */
	struct pinfo		*pi;
	u32			cap, used;
	struct model_heap	heap[2];	/* 0: by time, 1: by (eff, id) */
	struct flow		*fl;
	u32			nflows;

	u64			now;
	u64			wait;	/* when the qdisc would come back */
	u64			recent[16];
	u32			gen;
	unsigned long		warns0;
	struct rng		rng;

	/* statistics */
	u64			accepted, refused, lag_refused, released;
	u64			calls, blocked_stops, blocked_pkts, max_blocked;
	u64			max_lag;
};

/* The model's orders: heap[0] by time, heap[1] by effective tick; ties by id. */
static bool by_time(const void *ctx, u32 a, u32 b)
{
	const struct sim *s = ctx;
	u64 ka = s->skb[a].time, kb = s->skb[b].time;

	return ka < kb || (ka == kb && a < b);
}

static bool by_eff(const void *ctx, u32 a, u32 b)
{
	const struct sim *s = ctx;
	u64 ka = s->pi[a].eff, kb = s->pi[b].eff;

	return ka < kb || (ka == kb && a < b);
}

static struct carousel_wheel *wheel_alloc(u32 levels, u32 gran, u64 now)
{
	size_t sz = carousel_wheel_size(levels);
	struct carousel_wheel *w = malloc(sz);

	if (!w)
		abort();
	memset(w, 0xa5, sz);	/* init must clear everything */
	carousel_wheel_init(w, levels, gran, now);
	return w;
}

/* A wheel with `levels' levels (0: as carousel_wheel_levels() says). */
static void sim_init_levels(struct sim *s, u32 gran, u64 horizon, u32 levels,
			    u64 now, u32 cap, u32 nflows, u64 seed)
{
	memset(s, 0, sizeof(*s));
	s->gran = gran;
	s->horizon = horizon;
	s->levels = levels ? levels : carousel_wheel_levels(gran, horizon);
	s->top = pow1024(s->levels - 1);
	s->span = model_span(s->levels);
	s->w = wheel_alloc(s->levels, gran, now);
	s->cap = cap;
	s->skb = calloc(cap, sizeof(*s->skb));
	s->pi = calloc(cap, sizeof(*s->pi));
	for (int h = 0; h < 2; h++) {
		s->heap[h].id = calloc(cap, sizeof(u32));
		s->heap[h].pos = calloc(cap, sizeof(u32));
		if (!s->heap[h].id || !s->heap[h].pos)
			abort();
	}
	s->nflows = nflows;
	s->fl = calloc(nflows, sizeof(*s->fl));
	if (!s->skb || !s->pi || !s->fl)
		abort();
	s->now = now;
	s->wait = NONE;
	s->warns0 = kshim_warns + kshim_ffs_zero;
	rng_seed(&s->rng, seed);
}

static void sim_init(struct sim *s, const struct cfg *c, u64 now, u32 cap,
		     u32 nflows, u64 seed)
{
	sim_init_levels(s, c->gran, c->horizon, 0, now, cap, nflows, seed);
}

static void sim_free(struct sim *s)
{
	free(s->w);
	free(s->skb);
	free(s->pi);
	for (int h = 0; h < 2; h++) {
		free(s->heap[h].id);
		free(s->heap[h].pos);
	}
	free(s->fl);
}

static bool no_warn(const struct sim *s)
{
	return kshim_warns + kshim_ffs_zero == s->warns0;
}

/*
 * Insert a packet with time t in flow f, as the qdisc would (the caller
 * decides about carousel_wheel_sync()).  Returns its id, -1 if insert()
 * refused it, -2 if a check failed.
 */
static long sim_insert(struct sim *s, u64 t, u32 f)
{
	struct carousel_wheel *w = s->w;
	u64 cur = w->cur, tick = t / s->gran, eff = model_eff(t, s->gran, cur);
	u32 count = w->count, id, sh = CAROUSEL_LVL_BITS * (s->levels - 1);
	struct sk_buff *b;
	struct pinfo *p;
	bool ok;

	if (s->used >= s->cap)
		abort();
	id = s->used++;
	b = &s->skb[id];
	p = &s->pi[id];
	b->next = POISON;
	b->time = t;
	b->id = id;
	b->flow = f;
	b->moves = 0;

	ok = carousel_wheel_insert(w, b, t);
	if (!CHECK(no_warn(s), "insert(%llu) WARNed", t))
		return -2;
	if (!ok) {
		if (!CHECK(tick > cur && tick - cur >= s->span,
			   "insert refused time %llu: tick %llu is only %llu ticks ahead of cursor %llu (span %llu)",
			   t, tick, tick - cur, cur, s->span) ||
		    !CHECK(b->next == POISON, "refused packet %u was linked", id) ||
		    !CHECK(w->count == count, "count %u after a refusal, was %u",
			   w->count, count) ||
		    !CHECK(w->cur == cur, "refusal moved the cursor"))
			return -2;
		p->state = P_REFUSED;
		s->refused++;
		/* the header's promise: refusals need a lag > horizon */
		if (s->now >= cur * s->gran && s->now - cur * s->gran <= s->horizon &&
		    t <= s->now + s->horizon)
			s->lag_refused++;
		return -1;
	}
	if (!CHECK(w->count == count + 1, "count %u after insert, was %u", w->count, count) ||
	    !CHECK(w->cur == cur, "insert moved the cursor from %llu to %llu", cur, w->cur) ||
	    !CHECK((eff >> sh) - (cur >> sh) < CAROUSEL_LVL_SLOTS,
		   "accepted tick %llu, %llu ahead of cursor %llu: the top ring wraps onto the cursor's slot",
		   eff, eff - cur, cur))
		return -2;
	p->state = P_PENDING;
	p->eff = eff;
	p->level = model_level(s->levels, eff, cur);
	p->seq = s->fl[f].next_seq++;
	model_heap_push(&s->heap[0], id, by_time, s);
	model_heap_push(&s->heap[1], id, by_eff, s);
	s->accepted++;
	return id;
}

/* Model side of a packet leaving the wheel. */
static bool sim_release(struct sim *s, struct sk_buff *b, bool forced)
{
	u32 id = b->id;
	struct pinfo *p;
	struct flow *fl;

	REQUIRE(id < s->used && b == &s->skb[id], "wheel returned a foreign skb %p", (void *)b);
	p = &s->pi[id];
	REQUIRE(p->state == P_PENDING, "packet %u released but its state is %d (duplicate?)",
		id, p->state);
	REQUIRE(forced || b->time <= s->now, "packet %u released at %llu before its time %llu",
		id, s->now, b->time);
	REQUIRE(b->moves <= p->level,
		"packet %u cascaded %u times, but was inserted on level %u (levels %u)",
		id, b->moves, p->level, s->levels);
	fl = &s->fl[b->flow];
	REQUIRE(!fl->mono || p->seq == fl->rel_seq,
		"flow %u (non-decreasing times): packet seq %u left before seq %u",
		b->flow, p->seq, fl->rel_seq);
	fl->rel_seq = p->seq + 1;
	model_heap_del(&s->heap[0], id, by_time, s);
	model_heap_del(&s->heap[1], id, by_eff, s);
	p->state = P_RELEASED;
	p->rel_now = s->now;
	s->released++;
	return true;
}

/* Packets with time <= now in the subtree of heap[0] at i must be marked. */
static bool due_walk(struct sim *s, u32 i, u64 now, u64 *n, const struct sk_buff *h)
{
	u32 id;

	if (i >= s->heap[0].n)
		return true;
	id = s->heap[0].id[i];
	if (s->skb[id].time > now)
		return true;
	(*n)++;
	REQUIRE(s->pi[id].mark == s->gen,
		"packet %u (time %llu, tick %llu, eff tick %llu) is due at now %llu but was not released, and is not in the slot of the not-due head %u (time %llu, eff tick %llu)",
		id, s->skb[id].time, s->skb[id].time / s->gran, s->pi[id].eff, now,
		h->id, h->time, s->pi[h->id].eff);
	return due_walk(s, 2 * i + 1, now, n, h) && due_walk(s, 2 * i + 2, now, n, h);
}

/*
 * One run of the qdisc's dequeue loop at s->now, fully checked against
 * the model.  Sets s->wait to when the qdisc would come back.
 */
static bool sim_dequeue(struct sim *s)
{
	struct carousel_wheel *w = s->w;
	u64 now = s->now, nt = now / s->gran;

	s->calls++;
	if (nt > w->cur && nt - w->cur > s->max_lag)
		s->max_lag = nt - w->cur;
	for (;;) {
		struct carousel_slot *sl;
		struct sk_buff *h, *p, *last = NULL;
		u64 wake = 0x1234, n = 0, due = 0;
		u32 prev = 0;

		sl = carousel_wheel_first(w, nt, &wake, NULL);
		REQUIRE(no_warn(s), "first(now_tick %llu) WARNed; count %u cursor %llu",
			nt, w->count, w->cur);
		REQUIRE(w->count == s->heap[0].n, "count %u, model %u", w->count, s->heap[0].n);
		REQUIRE(w->cur <= nt, "cursor %llu passed now's tick %llu", w->cur, nt);
		if (!sl) {
			u32 m;

			if (!s->heap[0].n) {
				REQUIRE(wake == NONE, "empty wheel: wake %llu, not ~0", wake);
				s->wait = NONE;
				return true;
			}
			m = s->heap[0].id[0];
			REQUIRE(s->skb[m].time > now,
				"first() returned NULL (wake %llu) but packet %u (time %llu) is due at %llu",
				wake, m, s->skb[m].time, now);
			REQUIRE(wake > nt, "wake tick %llu is not after now's tick %llu (busy polling)",
				wake, nt);
			REQUIRE(wake <= s->skb[m].time / s->gran,
				"wake tick %llu is after the earliest packet's tick %llu",
				wake, s->skb[m].time / s->gran);
			s->wait = wake * s->gran;
			return true;
		}
		REQUIRE(sl >= &w->lvl[0].slot[0] && sl < &w->lvl[0].slot[CAROUSEL_LVL_SLOTS],
			"first() returned a slot outside level 0");
		h = sl->head;
		REQUIRE(h, "first() returned an empty slot");
		REQUIRE(h->id < s->used && h == &s->skb[h->id], "foreign skb in slot");
		REQUIRE(s->heap[1].n && h->id == s->heap[1].id[0],
			"first()'s head is packet %u (time %llu, eff tick %llu) but the earliest by (eff tick, insertion) is %u (time %llu, eff tick %llu)",
			h->id, h->time, s->pi[h->id].eff, s->heap[1].id[0],
			s->skb[s->heap[1].id[0]].time, s->pi[s->heap[1].id[0]].eff);
		if (h->time <= now) {
			p = carousel_wheel_pop(w, sl);
			REQUIRE(p == h, "pop() returned %p, not the head %p", (void *)p, (void *)h);
			REQUIRE(p->next == NULL, "popped skb still linked");
			if (!sim_release(s, p, false))
				return false;
			continue;
		}

		/* The loop stops on a not-due head: check its slot ... */
		s->gen++;
		for (p = h; p; p = p->next) {
			REQUIRE(p->id < s->used && p == &s->skb[p->id], "foreign skb in slot");
			REQUIRE(s->pi[p->id].state == P_PENDING && s->pi[p->id].eff == s->pi[h->id].eff,
				"slot of head %u (eff tick %llu) holds packet %u (state %d, eff tick %llu)",
				h->id, s->pi[h->id].eff, p->id, s->pi[p->id].state,
				s->pi[p->id].eff);
			REQUIRE(p == h || p->id > prev, "slot not in insertion order");
			REQUIRE(++n <= s->heap[0].n, "slot list longer than the wheel (loop?)");
			prev = p->id;
			s->pi[p->id].mark = s->gen;
			last = p;
		}
		REQUIRE(sl->tail == last, "slot tail is not its last packet");
		/* ... and that whatever is due and left is in it, within a tick */
		if (!due_walk(s, 0, now, &due, h))
			return false;
		if (due) {
			REQUIRE(s->pi[h->id].eff == nt && h->time / s->gran == nt,
				"%llu due packets held behind head %u (time %llu, eff tick %llu) beyond now's tick %llu",
				due, h->id, h->time, s->pi[h->id].eff, nt);
			s->blocked_stops++;
			s->blocked_pkts += due;
			if (due > s->max_blocked)
				s->max_blocked = due;
		}
		s->wait = h->time;
		return true;
	}
}

/* The walk's visit: our own, pending, in insertion order, not looping. */
struct walk {
	struct sim	*s;
	u64		total;
};

static bool sim_visit(void *ctx, const struct sk_buff *p,
		      const struct sk_buff *last, u32 lv, u32 idx, u64 *eff)
{
	struct walk *wk = ctx;
	struct sim *s = wk->s;
	const struct pinfo *pi;

	REQUIRE(p->id < s->used && p == &s->skb[p->id],
		"level %u slot %u: foreign skb", lv, idx);
	pi = &s->pi[p->id];
	REQUIRE(pi->state == P_PENDING, "level %u slot %u: packet %u not pending",
		lv, idx, p->id);
	REQUIRE(!last || last->id < p->id,
		"level %u slot %u: not in insertion order", lv, idx);
	REQUIRE(++wk->total <= s->heap[0].n, "more packets linked than queued");
	*eff = pi->eff;
	return true;
}

/* Walk the whole wheel and check its structure against the model. */
static bool sim_verify(struct sim *s)
{
	struct carousel_wheel *w = s->w;
	struct walk wk = { .s = s };

	REQUIRE(w->levels == s->levels && w->gran == s->gran, "levels/gran changed");
	REQUIRE(!s->heap[1].n || w->cur <= s->pi[s->heap[1].id[0]].eff,
		"cursor %llu is after the earliest packet's tick %llu",
		w->cur, s->pi[s->heap[1].id[0]].eff);
	if (!model_walk(w, sim_visit, &wk))
		return false;
	REQUIRE(wk.total == s->heap[0].n && w->count == wk.total,
		"%llu packets linked, count %u, model %u", wk.total, w->count, s->heap[0].n);
	return true;
}

/* Follow the qdisc's timer until `until' (or the wheel is empty). */
static bool sim_follow(struct sim *s, u64 until, u32 *waits)
{
	for (;;) {
		if (!sim_dequeue(s))
			return false;
		if (s->wait == NONE || s->wait > until)
			return true;
		REQUIRE(s->wait > s->now, "wait %llu not after now %llu", s->wait, s->now);
		s->now = s->wait;
		if (waits)
			(*waits)++;
	}
}

/* Drain with pop_first(): must come out by (eff tick, insertion). */
static bool sim_drain_pop_first(struct sim *s)
{
	struct carousel_wheel *w = s->w;

	while (s->heap[1].n) {
		u32 want = s->heap[1].id[0];
		struct sk_buff *b = carousel_wheel_pop_first(w);

		REQUIRE(no_warn(s), "pop_first WARNed (count %u, cursor %llu)", w->count, w->cur);
		REQUIRE(b, "pop_first returned NULL with count %u, model %u", w->count, s->heap[1].n);
		REQUIRE(b->id == want,
			"pop_first gave packet %u (time %llu, eff tick %llu), expected %u (time %llu, eff tick %llu)",
			b->id, b->time, s->pi[b->id].eff, want, s->skb[want].time,
			s->pi[want].eff);
		if (!sim_release(s, b, true))
			return false;
		REQUIRE(w->count == s->heap[0].n, "count %u, model %u", w->count, s->heap[0].n);
	}
	REQUIRE(!carousel_wheel_pop_first(w), "pop_first on an empty wheel returned a packet");
	REQUIRE(no_warn(s), "pop_first on an empty wheel WARNed");
	return true;
}

/* End of a run: everything out exactly once, moves add up. */
static bool sim_finish(struct sim *s)
{
	u64 moves = 0;

	REQUIRE(s->w->count == 0 && s->heap[0].n == 0, "wheel not empty: count %u, model %u",
		s->w->count, s->heap[0].n);
	REQUIRE(s->released == s->accepted, "%llu accepted, %llu released",
		s->accepted, s->released);
	for (u32 id = 0; id < s->used; id++) {
		REQUIRE(s->pi[id].state == P_RELEASED || s->pi[id].state == P_REFUSED,
			"packet %u lost (state %d)", id, s->pi[id].state);
		moves += s->skb[id].moves;
	}
	REQUIRE(moves == s->w->cascades, "per-packet moves add up to %llu, w->cascades %llu",
		moves, s->w->cascades);
	REQUIRE(no_warn(s), "WARN");
	return true;
}

/* ------------------------------------------------------------------ */
/* Random simulation                                                   */

static u64 gen_time(struct sim *s)
{
	struct rng *r = &s->rng;
	u64 now = s->now, H = s->horizon, g = s->gran, t, nt = now / g;
	u64 past = now < 2 * H ? now : 2 * H;
	u32 pick = rnd_below(r, 100);

	if (pick < 10) {			/* in the past */
		t = now - rnd_below(r, past + 1);
	} else if (pick < 18) {			/* now */
		t = now;
	} else if (pick < 35) {			/* next few ticks */
		t = now + rnd_below(r, 4ULL * g);
	} else if (pick < 45) {			/* tick edges */
		t = (nt + rnd_below(r, 8)) * g + (chance(r, 50) ? g - 1 : 0);
	} else if (pick < 58) {			/* within two level-1 slots */
		t = now + rnd_below(r, (2048ULL * g < H ? 2048ULL * g : H) + 1);
	} else if (pick < 75) {			/* anywhere up to the horizon */
		t = now + rnd_below(r, H + 1);
	} else if (pick < 80) {			/* exactly the horizon */
		t = now + H;
	} else if (pick < 90) {			/* a time used before */
		t = s->recent[rnd_below(r, 16)];
		if (!t)
			t = now;
	} else {				/* around a level boundary */
		u32 k = 1 + rnd_below(r, s->levels);
		u64 unit = pow1024(k);
		u64 b = ((nt >> (CAROUSEL_LVL_BITS * k)) + 1 + rnd_below(r, 2)) * unit;

		t = (b + rnd_below(r, 3) - 1) * g + (chance(r, 50) ? g - 1 : 0);
	}
	if (t > now + H)			/* the qdisc caps at the horizon */
		t = now + H;
	s->recent[rnd_below(r, 16)] = t;
	return t;
}

static u64 gen_step(struct sim *s)
{
	struct rng *r = &s->rng;
	u64 H = s->horizon, g = s->gran, d;
	u32 pick = rnd_below(r, 100);

	if (pick < 20) {
		d = rnd_below(r, 2);
	} else if (pick < 45) {
		d = rnd_below(r, 3 * g + 1);
	} else if (pick < 60 && s->wait != NONE && s->wait > s->now) {
		d = s->wait - s->now;		/* the qdisc's timer, exactly */
	} else if (pick < 75) {
		d = rnd_below(r, 1024 * g + 1);
	} else if (pick < 90 && s->levels > 1) {
		/* several spans of some level */
		u64 span = pow1024(1 + rnd_below(r, s->levels - 1)) * g;

		d = span * (1 + rnd_below(r, 5)) + rnd_below(r, span);
		if (d > 4 * H)
			d = rnd_below(r, 4 * H + 1);
	} else if (pick < 95) {
		d = H + rnd_below(r, 2 * H);	/* everything due */
	} else {
		d = rnd_below(r, H / 8 + 1);
	}
	return d;
}

struct simstats {
	u64 seeds, accepted, refused, lag_refused, blocked_stops, blocked_pkts;
	u64 max_blocked, max_lag, cascades, calls, past63;
};

static bool sim_run(const struct cfg *c, u64 now0, u64 seed, u32 steps,
		    struct simstats *st)
{
	struct sim s;
	u32 cap = steps * 4 + 1024, lag_left = 0, pending_cap = 6000;
	bool ok = false;
	struct rng r;

	rng_seed(&r, seed ^ 0xc0ffee);
	sim_init(&s, c, now0, cap, 1 + rnd_below(&r, 40), seed);
	for (u32 f = 0; f < s.nflows; f++)	/* half the flows: non-decreasing times */
		s.fl[f].mono = f % 2 == 0;
	for (u32 step = 0; step < steps; step++) {
		u32 pick = rnd_below(&s.rng, 100), n;

		n = pick < 30 ? 0 : pick < 70 ? 1 : pick < 94 ? 2 + rnd_below(&s.rng, 6) :
		    10 + rnd_below(&s.rng, 50);
		for (u32 i = 0; i < n && s.used < s.cap && s.heap[0].n < pending_cap; i++) {
			u32 f = rnd_below(&s.rng, s.nflows);
			u64 t = gen_time(&s);

			if (s.fl[f].mono) {
				if (t < s.fl[f].last)
					t = s.fl[f].last;
				s.fl[f].last = t;
			}
			/* the qdisc resyncs an idle wheel on enqueue (mostly) */
			if (!chance(&s.rng, 10))
				carousel_wheel_sync(s.w, s.now);
			if (sim_insert(&s, t, f) < -1)
				goto out;
		}

		s.now += gen_step(&s);

		if (lag_left) {
			lag_left--;		/* no dequeue: the cursor lags */
		} else if (chance(&s.rng, 85)) {
			if (!sim_dequeue(&s))
				goto out;
		}
		if (!lag_left && chance(&s.rng, 1))
			lag_left = rnd_below(&s.rng, 100);
		if (step % 64 == 63 && !sim_verify(&s))
			goto out;
		if (t_fail)
			goto out;
	}
	if (!sim_verify(&s))
		goto out;
	if (chance(&s.rng, 50)) {
		/* the qdisc's way: time passes, the loop drains all */
		u64 last = s.heap[0].n ? s.skb[s.heap[0].id[0]].time : s.now;

		for (u32 i = 0; i < s.heap[0].n; i++)
			if (s.skb[s.heap[0].id[i]].time > last)
				last = s.skb[s.heap[0].id[i]].time;
		if (!sim_follow(&s, last, NULL))
			goto out;
		if (s.heap[0].n) {
			if (!CHECK(s.now < last, "%u packets left at %llu after all were due",
				   s.heap[0].n, s.now))
				goto out;
			s.now = last;
			if (!sim_dequeue(&s))
				goto out;
		}
	} else if (!sim_drain_pop_first(&s)) {
		goto out;
	}
	ok = sim_finish(&s);
out:
	if (!ok)
		diag("reproduce: WHEEL_SEED=%llu (run seed 0x%llx) now0=%llu: now=%llu count=%u cursor=%llu",
		     (unsigned long long)base_seed, seed, now0, s.now, s.w->count, s.w->cur);
	st->seeds++;
	st->accepted += s.accepted;
	st->refused += s.refused;
	st->lag_refused += s.lag_refused;
	st->blocked_stops += s.blocked_stops;
	st->blocked_pkts += s.blocked_pkts;
	if (s.max_blocked > st->max_blocked)
		st->max_blocked = s.max_blocked;
	if (s.max_lag > st->max_lag)
		st->max_lag = s.max_lag;
	st->cascades += s.w->cascades;
	st->calls += s.calls;
	st->past63 += s.now >= 1ULL << 63;
	sim_free(&s);
	return ok;
}

static void sim_report(const struct cfg *c, const struct simstats *st)
{
	char h[32];

	diag("gran=%uns horizon=%s levels=%u: %llu seeds, %llu packets, %llu dequeue loops, %llu refused (%llu with cursor lag <= horizon), %llu loops stopped with %llu due packets behind a same-tick head (max %llu), max cursor lag %llu ticks, %.3f moves/packet",
	     c->gran, fmt_ns(c->horizon, h, sizeof(h)),
	     carousel_wheel_levels(c->gran, c->horizon), st->seeds, st->accepted,
	     st->calls, st->refused, st->lag_refused, st->blocked_stops,
	     st->blocked_pkts, st->max_blocked, st->max_lag,
	     st->accepted ? (double)st->cascades / st->accepted : 0.0);
}

struct simcase {
	struct cfg cfg;
	u32 seeds, steps;
	bool near63;
};

static void t_sim(const void *arg)
{
	const struct simcase *sc = arg;
	struct simstats st = { 0 };
	u64 seed0 = base_seed * 0x100000001b3ULL + sc->cfg.gran * 131 + sc->cfg.horizon +
		    sc->near63;

	cfg_ctx(&sc->cfg, "sim");
	for (u32 i = 0; i < sc->seeds * seed_scale; i++) {
		u64 seed = seed0 + i * 0x9e3779b97f4a7c15ULL;
		struct rng r;
		u64 now0;

		rng_seed(&r, seed);
		if (sc->near63)		/* cross 2^63 early in the run */
			now0 = (1ULL << 63) - sc->cfg.horizon - rnd_below(&r, 2 * sc->cfg.horizon);
		else
			now0 = rnd_below(&r, 4) ? rnd_below(&r, 1ULL << 52) : rnd_below(&r, 1000);
		if (!sim_run(&sc->cfg, now0, seed, sc->steps, &st))
			break;
	}
	sim_report(&sc->cfg, &st);
	if (sc->near63 && !t_fail)
		CHECK(st.past63 == st.seeds, "only %llu of %llu runs got past 2^63 ns",
		      st.past63, st.seeds);
}

/* ------------------------------------------------------------------ */
/* Edge cases                                                          */

static void t_empty(const void *arg)
{
	(void)arg;
	for (u32 i = 0; i < N_MATRIX; i++) {
		const struct cfg *c = &matrix[i];
		u32 L = carousel_wheel_levels(c->gran, c->horizon);
		u64 now = 123456789012ULL, wake = 0;
		struct carousel_wheel *w = wheel_alloc(L, c->gran, now);
		struct carousel_slot *sl;

		cfg_ctx(c, "empty");
		CHECK(w->count == 0 && w->cur == now / c->gran && w->cascades == 0,
		      "init: count %u cursor %llu cascades %llu", w->count, w->cur, w->cascades);
		for (u32 lv = 0; lv < L; lv++)
			CHECK(!w->lvl[lv].summary, "init left level %u summary set", lv);
		sl = carousel_wheel_first(w, now / c->gran, &wake, NULL);
		CHECK(!sl && wake == NONE, "first: slot %p wake %llu", (void *)sl, wake);
		wake = 0;
		sl = carousel_wheel_first(w, NONE, &wake, NULL);
		CHECK(!sl && wake == NONE, "first(~0): slot %p wake %llu", (void *)sl, wake);
		CHECK(!carousel_wheel_pop_first(w), "pop_first returned a packet");
		CHECK(w->count == 0 && w->cur == now / c->gran,
		      "empty wheel changed: count %u cursor %llu", w->count, w->cur);
		carousel_wheel_sync(w, now + 5 * NS_PER_S);
		CHECK(w->cur == (now + 5 * NS_PER_S) / c->gran, "sync on empty: cursor %llu", w->cur);
		free(w);
	}
}

/* now0 choices: random, and just before a boundary of each level */
static u64 edge_now(struct rng *r, const struct cfg *c, u32 v)
{
	u32 L = carousel_wheel_levels(c->gran, c->horizon);
	u32 k = v % (L + 1);

	if (k == 0)
		return 2 * NS_PER_S + rnd_below(r, 1ULL << 50);
	return ((1 + rnd_below(r, 5)) * pow1024(k) - 1) * c->gran + c->gran - 1;
}

static void single_packet(const char *what, s64 offset_from_now, bool to_horizon)
{
	struct rng r;

	rng_seed(&r, base_seed + 7);
	for (u32 i = 0; i < N_MATRIX; i++) {
		const struct cfg *c = &matrix[i];
		u32 L = carousel_wheel_levels(c->gran, c->horizon);

		cfg_ctx(c, what);
		for (u32 v = 0; v < 2 * (L + 1); v++) {
			struct sim s;
			u64 now0 = edge_now(&r, c, v), t;
			u32 waits = 0;
			long id;

			sim_init(&s, c, now0, 4, 1, v);
			if (to_horizon)
				t = now0 + c->horizon;
			else if (offset_from_now < 0 && now0 < (u64)-offset_from_now)
				t = 0;
			else
				t = now0 + offset_from_now;
			id = sim_insert(&s, t, 0);
			if (!CHECK(id == 0, "insert(%llu) at now %llu refused", t, now0)) {
				sim_free(&s);
				return;
			}
			if (sim_follow(&s, NONE, &waits)) {
				CHECK(s.pi[0].state == P_RELEASED && s.pi[0].rel_now == (t > now0 ? t : now0),
				      "packet time %llu, now0 %llu: state %d released at %llu",
				      t, now0, s.pi[0].state, s.pi[0].rel_now);
				/* one wake for the packet's tick (carousel_slot_wake(),
				 * not one per level it cascades through), and one for
				 * its time within that tick
				 */
				CHECK(waits <= (to_horizon ? 2 : 0),
				      "%u timer wakeups to release one packet (levels %u)", waits, L);
				sim_finish(&s);
			}
			sim_free(&s);
			if (t_fail)
				return;
		}
	}
}

static void t_single_now(const void *arg)
{
	(void)arg;
	single_packet("single at now", 0, false);
}

static void t_single_past(const void *arg)
{
	(void)arg;
	single_packet("single 1s in the past", -(s64)NS_PER_S, false);
}

static void t_single_horizon(const void *arg)
{
	(void)arg;
	single_packet("single at now+horizon", 0, true);
}

/* Idle wheel: the cursor stays behind until sync() restarts it at now. */
static void t_sync_idle(const void *arg)
{
	struct rng r;

	(void)arg;
	rng_seed(&r, base_seed + 11);
	for (u32 i = 0; i < N_MATRIX; i++) {
		const struct cfg *c = &matrix[i];
		struct sim s;
		u64 now0 = rnd_below(&r, 1ULL << 40), cur, t, ring;
		long id;

		cfg_ctx(c, "sync after idle");
		sim_init(&s, c, now0, 16, 1, i);
		ring = s.top << CAROUSEL_LVL_BITS;
		if (sim_insert(&s, now0 + 5 * c->gran, 0) != 0 || !sim_follow(&s, NONE, NULL))
			goto out;
		CHECK(s.pi[0].state == P_RELEASED, "first packet not released");
		/* idle for three ring spans, no dequeue, no sync */
		s.now += 3 * ring * c->gran + rnd_below(&r, c->gran);
		t = s.now + c->horizon / 2;
		cur = s.w->cur;
		id = sim_insert(&s, t, 0);
		CHECK(id == -1, "insert %llu ticks ahead of a stale cursor %llu was %s",
		      t / c->gran - cur, cur, id >= 0 ? "accepted" : "a failure");
		/* sync on an empty wheel restarts the cursor at now */
		carousel_wheel_sync(s.w, s.now);
		CHECK(s.w->cur == s.now / c->gran, "sync: cursor %llu, now's tick %llu",
		      s.w->cur, s.now / c->gran);
		id = sim_insert(&s, t, 0);
		if (!CHECK(id == 2, "insert after sync: %ld", id))
			goto out;
		/* sync on a non-empty wheel leaves the cursor alone */
		cur = s.w->cur;
		carousel_wheel_sync(s.w, s.now + c->horizon);
		CHECK(s.w->cur == cur, "sync on a non-empty wheel moved the cursor %llu -> %llu",
		      cur, s.w->cur);
		if (!sim_follow(&s, NONE, NULL))
			goto out;
		CHECK(s.pi[2].state == P_RELEASED && s.pi[2].rel_now == t,
		      "after sync: packet at %llu released at %llu (state %d)",
		      t, s.pi[2].rel_now, s.pi[2].state);
		sim_finish(&s);
out:
		sim_free(&s);
		if (t_fail)
			return;
	}
}

/*
 * The exact refusal boundary: 1023 * 1024^(levels-1) ticks ahead of the
 * cursor, whatever the cursor's offset in its top-level slot; then drain
 * with pop_first in order.
 */
static void t_span_boundary(const void *arg)
{
	u32 L = *(const u32 *)arg;
	static const u32 gr[] = { 1, 1000 };
	struct rng r;

	rng_seed(&r, base_seed + 13 + L);
	for (u32 gi = 0; gi < 2; gi++) {
		u32 g = gr[gi];
		u64 top = pow1024(L - 1), span = 1023 * top;
		u64 offs[] = { 0, 1, top / 2, top - 1 };

		ctx("span boundary levels=%u gran=%uns span=%llu ticks", L, g, span);
		for (u32 oi = 0; oi < 4; oi++) {
			for (u32 v = 0; v < 6; v++) {
				struct sim s;
				u64 base = v == 0 ? 1023 : v == 1 ? 1024 : rnd_below(&r, 5000);
				u64 cur = base * top + offs[oi], now0 = cur * g + rnd_below(&r, g);
				long a, b;

				sim_init_levels(&s, g, 0, L, now0, 16, 1, v);
				if (!CHECK(s.w->cur == cur, "init cursor %llu", s.w->cur))
					goto out;
				a = sim_insert(&s, (cur + span - 1) * g + g - 1, 0);
				b = sim_insert(&s, (cur + span) * g, 0);
				CHECK(a == 0, "tick cursor+span-1 (cursor %llu) refused", cur);
				CHECK(b == -1, "tick cursor+span (cursor %llu) accepted", cur);
				if (a < 0 || b != -1)
					goto out;
				if (sim_insert(&s, (cur + span / 2) * g, 0) < 0 ||
				    sim_insert(&s, cur >= 3 ? (cur - 3) * g : 0, 0) < 0 ||
				    sim_insert(&s, now0, 0) < 0 ||
				    sim_insert(&s, (cur + span - 1) * g, 0) < 0)
					goto out;
				if (sim_verify(&s) && sim_drain_pop_first(&s))
					sim_finish(&s);
out:
				sim_free(&s);
				if (t_fail)
					return;
			}
		}
	}
}

/*
 * The header's promise: a refusal "needs a cursor lagging by more than the
 * horizon".  Cursor lagging by exactly the horizon, packet at now +
 * horizon: must be accepted.
 */
static bool lag_accepts(u32 g, u64 H, struct rng *r, u64 *ahead, u64 *limit)
{
	u32 L = carousel_wheel_levels(g, H);
	u64 cur = rnd_below(r, 1ULL << 30), now = cur * g + H, t = now + H;
	struct carousel_wheel *w = wheel_alloc(L, g, cur * g);
	struct sk_buff b = { .time = t };
	bool ok = carousel_wheel_insert(w, &b, t);

	*ahead = t / g - cur;
	*limit = 1023 * pow1024(L - 1);
	CHECK(!ok || w->count == 1, "count %u", w->count);
	free(w);
	return ok;
}

static void t_lag_matrix(const void *arg)
{
	struct rng r;

	(void)arg;
	rng_seed(&r, base_seed + 17);
	for (u32 i = 0; i < N_MATRIX; i++) {
		u64 ahead, limit;

		cfg_ctx(&matrix[i], "lag == horizon");
		CHECK(lag_accepts(matrix[i].gran, matrix[i].horizon, &r, &ahead, &limit),
		      "packet at now+horizon refused with the cursor lagging by the horizon: %llu ticks ahead, refusal at %llu",
		      ahead, limit);
	}
}

/*
 * The worst case of each levels band: the largest horizon for which
 * carousel_wheel_levels() still picks L levels (found by bisection, so
 * whatever the formula), up to the largest netlink horizon (u32 us).
 */
static void t_lag_level_edges(const void *arg)
{
	static const u32 gr[] = { 1, 7, 1000, 2000, 65536 };
	const u64 hmax = 0xffffffffULL * 1000;
	struct rng r;

	(void)arg;
	rng_seed(&r, base_seed + 19);
	for (u32 gi = 0; gi < sizeof(gr) / sizeof(gr[0]); gi++) {
		u32 g = gr[gi];

		for (u32 L = 1; L <= CAROUSEL_MAX_LEVELS; L++) {
			u64 lo = 0, hi = hmax, ahead, limit;
			char hb[32];

			/* largest H <= hmax with levels(g, H) <= L */
			if (carousel_wheel_levels(g, 0) > L)
				continue;
			if (carousel_wheel_levels(g, hmax) <= L) {
				lo = hmax;
			} else {
				while (hi - lo > 1) {
					u64 mid = lo + (hi - lo) / 2;

					if (carousel_wheel_levels(g, mid) <= L)
						lo = mid;
					else
						hi = mid;
				}
			}
			if (carousel_wheel_levels(g, lo) != L)
				continue;
			ctx("lag == horizon, top of the levels=%u band: gran=%uns horizon=%s",
			    L, g, fmt_ns(lo, hb, sizeof(hb)));
			CHECK(lag_accepts(g, lo, &r, &ahead, &limit),
			      "packet at now+horizon refused with the cursor lagging by the horizon: %llu ticks ahead, refusal at %llu",
			      ahead, limit);
		}
	}
}

/* pop_first drains by (eff tick, insertion) over the whole accepted span. */
static void t_pop_first(const void *arg)
{
	struct rng r;

	(void)arg;
	rng_seed(&r, base_seed + 23);
	for (u32 i = 0; i < N_MATRIX; i++) {
		const struct cfg *c = &matrix[i];
		struct sim s;
		u32 n = 3000;
		u64 prev = 0;

		cfg_ctx(c, "pop_first order");
		sim_init(&s, c, rnd_below(&r, 1ULL << 50), 2 * n + 8, 1, i);
		for (u32 round = 0; round < 2; round++) {
			for (u32 k = 0; k < n; k++) {
				u64 cur = s.w->cur, t;
				u32 pick = rnd_below(&r, 10);

				if (pick < 1)
					t = cur * c->gran - rnd_below(&r, cur * c->gran < NS_PER_S ? cur * c->gran + 1 : NS_PER_S);
				else if (pick < 3 && k)
					t = s.skb[s.used - 1 - rnd_below(&r, k)].time;
				else if (pick < 6)
					t = (cur + rnd_below(&r, s.span)) * c->gran + rnd_below(&r, c->gran);
				else
					t = cur * c->gran + rnd_below(&r, c->horizon + 1);
				if (t / c->gran >= cur + s.span)
					t = (cur + s.span - 1) * c->gran;
				if (sim_insert(&s, t, 0) < 0)
					goto out;
			}
			if (!sim_verify(&s))
				goto out;
			/* first round: pop half, then insert more behind the moved cursor */
			for (u32 k = 0; k < (round ? 0 : n / 2); k++) {
				u32 want = s.heap[1].id[0];
				struct sk_buff *b = carousel_wheel_pop_first(s.w);

				if (!CHECK(b && b->id == want,
					   "pop_first gave %d, expected packet %u (eff tick %llu)",
					   b ? (int)b->id : -1, want, s.pi[want].eff) ||
				    !CHECK(s.pi[want].eff >= prev, "eff tick went back") ||
				    !CHECK(no_warn(&s), "WARN") || !sim_release(&s, b, true))
					goto out;
				prev = s.pi[want].eff;
			}
		}
		if (sim_drain_pop_first(&s))
			sim_finish(&s);
out:
		sim_free(&s);
		if (t_fail)
			return;
	}
}

/*
 * Packets straddling m * 1024^k ticks for every k up to levels (k == levels
 * is the wrap of the top ring), from cursors just before the boundary, one
 * lower-level slot before it and a whole slot before it.  Dequeues happen
 * at each packet's time - 1 and time and at every timer the qdisc would
 * arm; each packet must leave exactly at its time.
 */
static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

static void t_cascade_boundaries(const void *arg)
{
	struct rng r;

	(void)arg;
	rng_seed(&r, base_seed + 29);
	for (u32 i = 0; i < N_MATRIX; i++) {
		const struct cfg *c = &matrix[i];
		u32 L = carousel_wheel_levels(c->gran, c->horizon);
		u64 g = c->gran;

		for (u32 k = 1; k <= L; k++) {
			u64 unit = pow1024(k);

			ctx("cascade across m*1024^%u ticks, gran=%uns levels=%u", k, c->gran, L);
			for (u32 v = 0; v < 3; v++) {
				u64 B = (1 + rnd_below(&r, 6)) * unit;
				u64 c0 = v == 0 ? B - 1 : v == 1 ? B - pow1024(k - 1) - 1 : B - unit + 1;
				u64 ticks[64], times[160];
				u32 nt = 0, ntimes = 0, calls = 0;
				struct sim s;

				sim_init(&s, c, c0 * g, 128, 1, v);
				ticks[nt++] = B - 1;
				ticks[nt++] = B;
				ticks[nt++] = B + 1;
				ticks[nt++] = B;	/* twice: FIFO */
				ticks[nt++] = B + 1;
				for (u32 j = 0; j < k; j++) {
					ticks[nt++] = B + pow1024(j) - 1;
					ticks[nt++] = B + pow1024(j);
					ticks[nt++] = B + pow1024(j) + 1;
				}
				ticks[nt++] = B + unit - 1;
				ticks[nt++] = B + unit;
				ticks[nt++] = B + unit + 1;
				ticks[nt++] = c0;
				ticks[nt++] = c0 + s.span - 1;
				ticks[nt++] = c0 + s.span / 2;
				/* insert in random order */
				for (u32 j = nt - 1; j > 0; j--) {
					u32 x = rnd_below(&r, j + 1);
					u64 tmp = ticks[j];

					ticks[j] = ticks[x];
					ticks[x] = tmp;
				}
				for (u32 j = 0; j < nt; j++) {
					if (ticks[j] < c0 || ticks[j] - c0 >= s.span)
						continue;
					if (sim_insert(&s, ticks[j] * g, 0) < 0)
						goto out;
					times[ntimes++] = ticks[j] * g;
					if (ticks[j] * g > c0 * g)
						times[ntimes++] = ticks[j] * g - 1;
				}
				if (!sim_verify(&s))
					goto out;
				qsort(times, ntimes, sizeof(times[0]), cmp_u64);
				if (!sim_dequeue(&s) || !sim_verify(&s))	/* at now0 */
					goto out;
				for (u32 j = 0; s.heap[0].n; calls++) {
					u64 next = s.wait;

					while (j < ntimes && times[j] <= s.now)
						j++;
					if (j < ntimes && times[j] < next)
						next = times[j];
					if (!CHECK(next != NONE && calls < 1000,
						   "%u packets never released", s.heap[0].n))
						goto out;
					s.now = next;
					if (!sim_dequeue(&s) || !sim_verify(&s))
						goto out;
				}
				for (u32 id = 0; id < s.used; id++)
					if (!CHECK(s.pi[id].rel_now == s.skb[id].time,
						   "packet at tick %llu (cursor was %llu, boundary %llu) released at %llu, not %llu",
						   s.skb[id].time / g, c0, B, s.pi[id].rel_now,
						   s.skb[id].time))
						goto out;
				sim_finish(&s);
out:
				sim_free(&s);
				if (t_fail)
					return;
			}
		}
	}
}

/*
 * Minimal reproducer: a one-level wheel (carousel_wheel_levels() returns
 * 1 when horizon/gran < 511, e.g. gran 2 us, horizon 1 ms).  Its only
 * level is the top ring, but first() scans level 0 only from the cursor
 * up, never wrapping.
 */
static void t_one_level_ring(const void *arg)
{
	u32 g = 2000;
	unsigned long warns = kshim_warns;
	struct carousel_wheel *w;
	struct carousel_slot *sl;
	struct sk_buff a = { .time = 1030ULL * 2000 };
	u64 wake = 0;

	(void)arg;
	ctx("1-level wheel (levels(2000ns, 1ms) = %u), gran 2000, cursor at tick 1000, packet at tick 1030",
	    carousel_wheel_levels(g, NS_PER_MS));
	w = wheel_alloc(1, g, 1000ULL * g);
	CHECK(carousel_wheel_insert(w, &a, a.time), "insert refused");
	sl = carousel_wheel_first(w, 1000, &wake, NULL);
	CHECK(kshim_warns == warns, "first(now_tick 1000) WARNed");
	CHECK((sl && sl->head == &a) || (!sl && wake > 1000 && wake <= 1030),
	      "first(now_tick 1000): slot %p, wake %llu (want the packet's slot, or NULL and 1000 < wake <= 1030)",
	      (void *)sl, wake);
	warns = kshim_warns;
	sl = carousel_wheel_first(w, 1030, &wake, NULL);
	CHECK(kshim_warns == warns, "first(now_tick 1030) WARNed");
	CHECK(sl && sl->head == &a, "first(now_tick 1030): slot %p wake %llu count %u (want the packet)",
	      (void *)sl, wake, w->count);
	free(w);
}

/* ------------------------------------------------------------------ */
/* Sizes and levels                                                    */

static void t_memory(const void *arg)
{
	u32 L = carousel_wheel_levels(1000, 10 * NS_PER_S);
	size_t sz = carousel_wheel_size(L);

	(void)arg;
	ctx("memory at defaults");
	diag("carousel_wheel_size(carousel_wheel_levels(1000 ns, 10 s)) = %zu bytes (%.1f KiB), %u levels of %zu bytes",
	     sz, sz / 1024.0, L, sizeof(struct carousel_level));
	CHECK(sz <= 256 * 1024, "%zu bytes > 256 KiB", sz);
	CHECK(sz == sizeof(struct carousel_wheel) + L * sizeof(struct carousel_level),
	      "size formula");
	for (u32 gi = 0; gi < N_GRANS; gi++) {
		char line[256];
		int n = snprintf(line, sizeof(line), "gran %5uns:", grans[gi]);

		for (u32 hi = 0; hi < N_HORIZONS; hi++) {
			char h[32];
			u32 l = carousel_wheel_levels(grans[gi], horizons[hi]);

			n += snprintf(line + n, sizeof(line) - n, " %s=%uL/%zuK",
				      fmt_ns(horizons[hi], h, sizeof(h)), l,
				      carousel_wheel_size(l) / 1024);
		}
		diag("%s", line);
	}
}

static bool levels_ok(u32 g, u64 H)
{
	u32 L = carousel_wheel_levels(g, H);
	u64 ticks = H / g + 1;

	if (!CHECK(L >= 1 && L <= CAROUSEL_MAX_LEVELS, "levels(%u, %llu) = %u", g, H, L))
		return false;
	/* top ring spans at least twice the horizon; at most one level more
	 * than that needs (memory)
	 */
	return CHECK(pow1024(L) > 2 * ticks, "levels(%u, %llu) = %u: ring %llu ticks, horizon %llu",
		     g, H, L, pow1024(L), ticks) &&
	       CHECK(L <= 2 || pow1024(L - 2) <= 2 * ticks, "levels(%u, %llu) = %u: two too many",
		     g, H, L);
}

static void t_levels(const void *arg)
{
	struct rng r;

	(void)arg;
	rng_seed(&r, base_seed + 31);
	ctx("carousel_wheel_levels");
	for (u32 i = 0; i < N_MATRIX; i++)
		levels_ok(matrix[i].gran, matrix[i].horizon);
	for (u32 i = 0; i < 100000 && !t_fail; i++)
		levels_ok(1 + rnd_below(&r, 1 << 20), rnd_below(&r, 100 * NS_PER_S + 1));
	diag("largest netlink horizon (u32 us = %llu ns) at gran 1 ns needs %u levels (CAROUSEL_MAX_LEVELS %u)",
	     0xffffffffULL * 1000, carousel_wheel_levels(1, 0xffffffffULL * 1000),
	     CAROUSEL_MAX_LEVELS);
}

/* ------------------------------------------------------------------ */
/* Cost: cascades per packet in steady state                           */

static void t_cost(const void *arg)
{
	u32 N = *(const u32 *)arg, g = 1000;
	u64 H = 10 * NS_PER_S, now = 1000 * NS_PER_S, dt = H / N;
	u32 L = carousel_wheel_levels(g, H);
	u64 t_meas = now + H, t_meas_end = now + 2 * H, t_end = now + 3 * H;
	u64 sum = 0, tracked = 0, tagged = 0, max_moves = 0, casc0 = 0, casc1 = 0;
	u64 rel_window = 0, total_moves = 0;
	bool in0 = false, in1 = false;
	struct carousel_wheel *w = wheel_alloc(L, g, now);
	struct sk_buff *pool = calloc(N, sizeof(*pool));
	unsigned long warns = kshim_warns;
	double t0 = mono_s();
	struct rng r;

	ctx("steady state N=%u gran=1us horizon=10s levels=%u", N, L);
	rng_seed(&r, base_seed + N);
	for (u32 i = 0; i < N; i++) {
		pool[i].id = i;
		pool[i].time = now + rnd_below(&r, H + 1);
		if (!CHECK(carousel_wheel_insert(w, &pool[i], pool[i].time), "fill refused"))
			goto out;
	}
	while (now < t_end) {
		u64 nt, wake;

		now += 1 + rnd_below(&r, 2 * dt);
		nt = now / g;
		for (;;) {
			struct carousel_slot *sl = carousel_wheel_first(w, nt, &wake, NULL);
			struct sk_buff *b;

			if (!sl) {
				if (!CHECK(wake > nt && wake != NONE, "wake %llu at now tick %llu, count %u",
					   wake, nt, w->count))
					goto out;
				break;
			}
			if (sl->head->time > now)
				break;
			b = carousel_wheel_pop(w, sl);
			if (!CHECK(b->time <= now, "early"))
				goto out;
			total_moves += b->moves;
			if (b->flow) {		/* inserted during the window */
				sum += b->moves;
				tracked++;
				if (b->moves > max_moves)
					max_moves = b->moves;
			}
			if (now >= t_meas && now < t_meas_end)
				rel_window++;
			b->moves = 0;
			b->flow = now >= t_meas && now < t_meas_end;
			tagged += b->flow;
			b->time = now + rnd_below(&r, H + 1);
			if (!CHECK(carousel_wheel_insert(w, b, b->time), "refill refused"))
				goto out;
		}
		if (!in0 && now >= t_meas) {
			in0 = true;
			casc0 = w->cascades;
		}
		if (!in1 && now >= t_meas_end) {
			in1 = true;
			casc1 = w->cascades;
		}
		if (!CHECK(kshim_warns == warns && w->count == N, "WARN or count %u", w->count))
			goto out;
	}
	for (u32 i = 0; i < N; i++)
		total_moves += pool[i].moves;
	diag("N=%u levels=%u: mean %.3f moves/packet over %llu packets enqueued in the window (max %llu); cascades/release in the window %.3f; bound levels-1 = %u; %.2f s",
	     N, L, tracked ? (double)sum / tracked : 0.0, tracked, max_moves,
	     rel_window ? (double)(casc1 - casc0) / rel_window : 0.0, L - 1, mono_s() - t0);
	CHECK(tracked == tagged && tracked > N / 2, "tracked %llu of %llu", tracked, tagged);
	CHECK(tracked && sum <= (u64)(L - 1) * tracked, "mean moves %.3f > %u",
	      (double)sum / tracked, L - 1);
	CHECK(max_moves <= L - 1, "a packet moved %llu times", max_moves);
	CHECK(rel_window && casc1 - casc0 <= (u64)(L - 1) * rel_window,
	      "cascades/release %.3f > %u", (double)(casc1 - casc0) / rel_window, L - 1);
	CHECK(total_moves == w->cascades, "moves %llu != cascades %llu", total_moves, w->cascades);
out:
	free(pool);
	free(w);
}

/*
 * A cascade on a budget: a million packets stamped for one instant sit in
 * one top-level slot; the cursor reaches it, and each call of first()
 * moves at most the budget.  Packets inserted meanwhile, due ones and
 * ones inside the slot's span before, at and after the crowd's instant,
 * come out in (tick, insertion) order with the rest: one at the crowd's
 * instant after all of the crowd, which it would overtake if it went
 * straight to a level below.
 */
static void t_bounded_cascade(const void *arg)
{
	const u32 N = 1 << 20, B = 128, extra = 4 * 64;
	u32 g = 1000, L = carousel_wheel_levels(g, 10 * NS_PER_S), top = L - 1;
	u64 now = 1000 * NS_PER_S, nt = now / g, start, T, last_tick = 0;
	u64 calls = 0, busy = 0, max_moves = 0, last_seq = 0, out = 0, seq = 0;
	struct carousel_wheel *w = wheel_alloc(L, g, now);
	struct sk_buff *pool = calloc(N + extra, sizeof(*pool));
	u32 added = 0;

	(void)arg;
	ctx("bounded cascade N=%u budget=%u levels=%u", N, B, L);
	/* two top-level slots on: the crowd lands on the top level */
	start = ((nt >> carousel_shift(top)) + 2) << carousel_shift(top);
	T = (start + 12345) * g;
	for (u32 i = 0; i < N; i++) {
		pool[i].id = i;
		pool[i].flow = seq++;
		pool[i].time = T;
		if (!CHECK(carousel_wheel_insert(w, &pool[i], T), "fill refused"))
			goto out;
	}
	now = T + NS_PER_S;
	nt = now / g;
	while (w->count) {
		u64 c0 = w->cascades, wake, tick;
		u32 budget = B;
		struct carousel_slot *sl = carousel_wheel_first(w, nt, &wake, &budget);
		struct sk_buff *b;

		calls++;
		if (w->cascades - c0 > max_moves)
			max_moves = w->cascades - c0;
		if (!CHECK(w->cascades - c0 <= B, "one call moved %llu", w->cascades - c0))
			goto out;
		if (!sl) {
			if (!CHECK(wake == CAROUSEL_WHEEL_BUSY && w->casc_level && !budget,
				   "NULL with wake %llu (now's tick %llu, cursor %llu), count %u",
				   wake, nt, w->cur, w->count))
				goto out;
			busy++;
			/*
			 * Now and then, one due, one early, one at the
			 * crowd's own instant (it must leave after the whole
			 * crowd) and one late in the slot.
			 */
			if (busy % 2048 == 1 && added + 4 <= extra) {
				u64 t[4] = { now - NS_PER_S * 100, T - 5000 * g, T, T + 7 * g };

				for (u32 k = 0; k < 4; k++, added++) {
					struct sk_buff *x = &pool[N + added];

					x->id = N + added;
					x->flow = seq++;
					x->time = t[k];
					if (!CHECK(carousel_wheel_insert(w, x, t[k]), "insert refused"))
						goto out;
				}
			}
			continue;
		}
		b = carousel_wheel_pop(w, sl);
		tick = max(b->time / g, w->cur);
		if (!CHECK(out == 0 || tick > last_tick ||
			   (tick == last_tick && b->flow > last_seq),
			   "packet %u (tick %llu seq %u) after tick %llu seq %llu",
			   b->id, tick, b->flow, last_tick, last_seq))
			goto out;
		last_tick = tick;
		last_seq = b->flow;
		out++;
	}
	diag("%u + %u packets: %llu calls, %llu on a spent budget, at most %llu moves a call, %llu moves in all",
	     N, added, calls, busy, max_moves, w->cascades);
	CHECK(out == N + added && added > 0, "%llu packets out of %u", out, N + added);
	CHECK(busy >= (u64)N / B, "only %llu calls on a spent budget", busy);
	CHECK(max_moves == B, "at most %llu moves a call", max_moves);
out:
	free(pool);
	free(w);
}

/* ------------------------------------------------------------------ */
/* Departure arithmetic: carousel_tx_rem()                             */

struct txcase {
	const char	*what;
	u64		rate;		/* bytes/s */
	u32		len;
	u64		n;		/* packets */
};

static const struct txcase txcases[] = {
	{ "64 B at 100 Gbit", 12500000000ULL, 64, 1000000 },
	{ "1500 B at 8 bit/s", 1, 1500, 1000 },
	{ "1000 B at 8.8 Tbit", 1ULL << 40, 1000, 1000000 },
	{ "9000 B at 8.8 Tbit", 1ULL << 40, 9000, 1000000 },
	{ "65535 B at 8.8 Tbit", 1ULL << 40, 65535, 100000 },
	{ "1514 B at 10 Mbit", 1250000, 1514, 100000 },
	{ "1 B at 3 B/s", 3, 1, 1000 },
	{ "262144 B at 1 B/s", 1, 262144, 10 },
	{ "1514 B at 2^40 - 1 B/s", (1ULL << 40) - 1, 1514, 100000 },
};

/* n packets of len through one class clock: the sum is the exact total,
 * len * n * 1e9 / rate, less at most the final truncation, more at most
 * what rounding the scaled remainder up may add (under 2^-14 ns a packet):
 * never faster than the rate.
 */
static void t_tx_rem(const void *arg)
{
	const struct txcase *c = arg;
	unsigned __int128 exact = (unsigned __int128)c->len * c->n * NSEC_PER_SEC / c->rate;
	u64 sum = 0, prev = 0;
	u16 rem = 0;

	ctx("%s, %llu packets", c->what, c->n);
	for (u64 i = 0; i < c->n; i++) {
		u64 ns = carousel_tx_rem(c->len, c->rate, &rem);

		sum += ns;
		if (i && !CHECK(ns + 1 >= prev && ns <= prev + 1,
				"packet %llu: %llu ns after %llu (steps differ by more than 1)",
				i, ns, prev))
			return;
		prev = ns;
	}
	CHECK(sum + 1 >= exact && sum <= exact + 1 + c->n / 16384,
	      "sum %llu ns, exact %llu ns", sum, (u64)exact);
	diag("%s: %llu packets, %llu ns (exact %llu; truncating each packet: %llu), last %llu ns each",
	     c->what, c->n, sum, (u64)exact,
	     (u64)c->len * NSEC_PER_SEC / c->rate * c->n, prev);
}

/*
 * A rate change with a backlog: the clock runs at the old rate, the
 * remainder is zeroed at the change (as carousel_change_class() does),
 * and the sum after it is exact at the new rate: the change costs less
 * than 1 ns, and nothing of the old rate's remainder leaks into the new.
 */
static void t_tx_rem_rate_change(const void *arg)
{
	static const u64 rates[] = { 12500000000ULL, 1, 1ULL << 40, 1250000, 3 };
	u64 sum = 0;
	u16 rem = 0;

	(void)arg;
	for (u32 k = 0; k < sizeof(rates) / sizeof(rates[0]); k++) {
		u64 part = 0, n = rates[k] < 1000 ? 100 : 100000;
		unsigned __int128 exact = (unsigned __int128)1514 * n * NSEC_PER_SEC / rates[k];

		ctx("rate %llu B/s after a change", rates[k]);
		rem = 0;
		for (u64 i = 0; i < n; i++)
			part += carousel_tx_rem(1514, rates[k], &rem);
		CHECK(part + 1 >= exact && part <= exact + 1 + n / 16384,
		      "%llu ns, exact %llu ns", part, (u64)exact);
		sum += part;
	}
	diag("5 rates in turn: %llu ns in all", sum);
}

/* ------------------------------------------------------------------ */

struct test {
	char name[64];
	void (*fn)(const void *arg);
	const void *arg;
};

#define MAX_TESTS 96
static struct test tests[MAX_TESTS];
static u32 ntests;

static void add(void (*fn)(const void *), const void *arg, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void add(void (*fn)(const void *), const void *arg, const char *fmt, ...)
{
	va_list ap;

	if (ntests >= MAX_TESTS)
		abort();
	va_start(ap, fmt);
	vsnprintf(tests[ntests].name, sizeof(tests[ntests].name), fmt, ap);
	va_end(ap);
	tests[ntests].fn = fn;
	tests[ntests].arg = arg;
	ntests++;
}

/*
 * A wheel bug can also crash or loop inside the wheel's own code.  Then
 * report the test that died, the rest as not run, and the summary line
 * (best effort: stdio from a signal handler, but the process is dying).
 * Sanitizer builds leave SIGSEGV & co. to the sanitizer, which reports
 * and aborts.
 */
static volatile sig_atomic_t running = -1;
static u32 passed, failed;

static void on_fatal(int sig)
{
	printf("# FATAL: %s in test %d\n",
	       sig == SIGALRM ? "timeout (a loop in the wheel?)" : strsignal(sig), running + 1);
	for (u32 i = running < 0 ? 0 : running; i < ntests; i++) {
		printf("not ok %u %s%s\n", i + 1, tests[i].name,
		       (int)i == running ? "" : " # not run");
		failed++;
	}
	printf("%u passed, %u failed\n", passed, failed);
	fflush(stdout);
	_exit(1);
}

static void catch_fatal(void)
{
	static const int sigs[] = { SIGALRM, SIGABRT,
#ifndef WHEEL_SAN
		SIGSEGV, SIGBUS, SIGFPE, SIGILL,
#endif
	};
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_RESETHAND;
	for (u32 i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

static const u32 level_args[] = { 1, 2, 3, 4 };
static const u32 cost_n[] = { 1000, 1000000 };
static struct simcase simcases[N_MATRIX + 4];

int main(int argc, char **argv)
{
	const char *filter = argc > 1 ? argv[1] : NULL;
	u32 skipped = 0, nsc = 0, timeout = 30;
	double start = mono_s();

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (getenv("WHEEL_SEED"))
		base_seed = strtoull(getenv("WHEEL_SEED"), NULL, 0);
	if (getenv("WHEEL_SCALE"))
		seed_scale = strtoul(getenv("WHEEL_SCALE"), NULL, 0) ?: 1;
	if (getenv("WHEEL_TIMEOUT"))	/* seconds per test, 0 = none */
		timeout = strtoul(getenv("WHEEL_TIMEOUT"), NULL, 0);

	for (u32 gi = 0; gi < N_GRANS; gi++)
		for (u32 hi = 0; hi < N_HORIZONS; hi++)
			matrix[gi * N_HORIZONS + hi] = (struct cfg){ grans[gi], horizons[hi] };

	add(t_empty, NULL, "empty_wheel");
	add(t_memory, NULL, "memory_default_le_256KiB");
	add(t_levels, NULL, "levels_cover_twice_horizon");
	add(t_single_now, NULL, "single_packet_at_now");
	add(t_single_past, NULL, "single_packet_1s_in_past");
	add(t_single_horizon, NULL, "single_packet_at_horizon");
	add(t_sync_idle, NULL, "sync_restarts_cursor_after_idle");
	for (u32 i = 0; i < 4; i++)
		add(t_span_boundary, &level_args[i], "insert_span_boundary_levels%u", level_args[i]);
	add(t_lag_matrix, NULL, "insert_accepts_with_lag_le_horizon");
	add(t_lag_level_edges, NULL, "insert_accepts_with_lag_le_horizon_level_edges");
	add(t_pop_first, NULL, "pop_first_drains_in_tick_order");
	add(t_cascade_boundaries, NULL, "cascade_across_level_boundaries");
	add(t_one_level_ring, NULL, "one_level_wheel_ring_wrap");
	for (u32 i = 0; i < sizeof(txcases) / sizeof(txcases[0]); i++)
		add(t_tx_rem, &txcases[i], "tx_rem_exact_%u", i);
	add(t_tx_rem_rate_change, NULL, "tx_rem_rate_change_mid_backlog");
	for (u32 i = 0; i < N_MATRIX; i++) {
		struct simcase *sc = &simcases[nsc++];
		char h[32];

		*sc = (struct simcase){ matrix[i], 40, 3000, false };
		add(t_sim, sc, "sim_gran%u_horizon%s", sc->cfg.gran,
		    fmt_ns(sc->cfg.horizon, h, sizeof(h)));
	}
	{
		static const struct cfg near[] = {
			{ 1, 10 * NS_PER_MS }, { 7, NS_PER_S }, { 1000, 10 * NS_PER_S },
			{ 65536, 100 * NS_PER_S },
		};

		for (u32 i = 0; i < 4; i++) {
			struct simcase *sc = &simcases[nsc++];
			char h[32];

			*sc = (struct simcase){ near[i], 16, 3000, true };
			add(t_sim, sc, "sim_near_2pow63_gran%u_horizon%s", sc->cfg.gran,
			    fmt_ns(sc->cfg.horizon, h, sizeof(h)));
		}
	}
	for (u32 i = 0; i < 2; i++)
		add(t_cost, &cost_n[i], "cascades_per_packet_steady_%s",
		    cost_n[i] == 1000 ? "1K" : "1M");
	add(t_bounded_cascade, NULL, "cascade_budget_1M_in_one_slot");

	catch_fatal();
	printf("TAP version 13\n1..%u\n", ntests);
	diag("carousel wheel unit tests (%s build), WHEEL_SEED=%llu WHEEL_SCALE=%u",
	     WHEEL_BUILD, (unsigned long long)base_seed, seed_scale);
	for (u32 i = 0; i < ntests; i++) {
		unsigned long w0 = kshim_warns, f0 = kshim_ffs_zero;
		double t0 = mono_s();

		if (filter && !strstr(tests[i].name, filter)) {
			printf("ok %u %s # SKIP not selected\n", i + 1, tests[i].name);
			skipped++;
			continue;
		}
		t_fail = 0;
		t_ctx[0] = 0;
		running = i;
		alarm(timeout * seed_scale);
		tests[i].fn(tests[i].arg);
		alarm(0);
		if (kshim_warns != w0)
			check_fail(__LINE__, "no WARN", "%lu WARN_ON_ONCE hits", kshim_warns - w0);
		if (kshim_ffs_zero != f0)
			check_fail(__LINE__, "no __ffs64(0)", "%lu calls", kshim_ffs_zero - f0);
		if (mono_s() - t0 > 0.5)
			diag("%.2f s", mono_s() - t0);
		if (t_fail) {
			printf("not ok %u %s\n", i + 1, tests[i].name);
			failed++;
		} else {
			printf("ok %u %s\n", i + 1, tests[i].name);
			passed++;
		}
	}
	diag("total %.2f s%s", mono_s() - start, skipped ? ", some tests skipped" : "");
	printf("%u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_wheel.c - libFuzzer harness for the carousel timing wheel.
 *
 * Compiles the wheel of ../../carousel_wheel.h (the very code the module
 * uses) against tools/include/kshim.h, drives it the way sch_carousel.c
 * does and checks every step against a reference model.  Build and run
 * with run.sh (or `make fuzz` at the top).
 *
 * Input.  A few header bytes pick the configuration (granularity, horizon,
 * start time, limits, flows, classes); the rest is a stream of operations.
 * When the input runs out, the stream goes on from a PRNG seeded with a
 * hash of the input, up to FUZZ_WHEEL_OPS operations (default 4096), so
 * every input, however short, runs thousands of operations.  Operations:
 *
 *   enqueue   a packet of a flow and a class (or none) with an EDT stamp;
 *             departure as carousel_enqueue_one(): limit and flow_limit,
 *             EDT beyond now + horizon dropped or capped, class timestamp
 *             start = max(next, now) less the burst credit, departure
 *             beyond now + horizon dropped, carousel_wheel_sync(), insert
 *             (a refusal is a drop), then next = start + len / rate
 *             (stretched by the ceiling as carousel_tx_ns() does);
 *   dequeue   one to many carousel_dequeue() calls: first(now's tick),
 *             pop the head if its time <= now, else note the watchdog time;
 *   advance   time moves by 0 or 1 ns, a few ticks, to the armed watchdog
 *             (and one off it), level spans, beyond the horizon, and whole
 *             ring spans (a stalled device: the cursor lags);
 *   rate      a class's rate and burst change;
 *   params    granularity and horizon change: the new pair is validated as
 *             carousel_parse() does; if granularity or levels change the
 *             wheel is rebuilt as carousel_rebuild() does (pop_first all,
 *             init a new wheel at now, reinsert in order, refusals and
 *             packets past `limit' dropped), else only the horizon changes;
 *   limit     limit changes; below the backlog, the wheel is rebuilt in
 *             place, dropping the latest packets.
 *
 * A header byte also picks the mix of operations (balanced, filling, full
 * with tiny time steps, draining, stalled).  At the end of an input the
 * wheel is emptied, either by following the watchdog (time jumps to every
 * armed expiry, dequeue) or with pop_first() as purge does.
 *
 * One op, as counted and reported, is one enqueue attempt, one dequeue
 * call (first() and maybe pop()), one time step or one config change.
 *
 * The model (../lib/model.h, as in ../unit/wheel_test.c): the wheel must
 * behave as a priority queue ordered by (effective tick, insertion order),
 * where a packet's effective tick is max(time / gran, cursor at
 * insertion): a time before the cursor is due and goes to the cursor's
 * slot (header comment: "A time before the cursor is due and goes to the
 * cursor's slot").  The model keeps the pending packets in a heap by that
 * key.  Checked:
 *
 *  - order: every head first() returns, and every packet pop_first()
 *    returns, is the model's minimum.  A due packet has an effective tick
 *    <= now's tick, so this also means nothing is released late, except
 *    behind a not-yet-due packet of now's own tick (less than a granule);
 *  - nothing early: a packet released by dequeue has time <= now;
 *  - nothing lost or duplicated: wheel count == model count after every
 *    operation, every popped packet is pending in the model, and at the end
 *    every packet ever enqueued was sent or dropped exactly once, and
 *    sent + dropped == enqueued;
 *  - per-flow order, checked on its own: while a flow's pending packets
 *    have non-decreasing times in enqueue order, they leave in enqueue
 *    order;
 *  - first() returning NULL: the wheel is not empty, the wake tick is after
 *    now's tick (no busy polling) and no later than the earliest packet;
 *  - insert() refuses exactly the packets >= 1023 * 1024^(levels-1) ticks
 *    ahead of the cursor; on enqueue that needs a cursor lagging by more
 *    than the horizon, as the header promises;
 *  - the cursor is never after now's tick nor after the earliest packet;
 *  - a packet is cascaded at most levels - 1 times between insert and
 *    release, and the moves add up to w->cascades;
 *  - periodically and at the end, the whole structure: maps, summaries,
 *    tails, FIFO order of every slot, each packet on the level and slot
 *    the header comment assigns it;
 *  - the wheel never WARNs nor calls __ffs64(0).
 *
 * A violation prints "fuzz_wheel: VIOLATION ..." and traps; libFuzzer then
 * saves the input (rerun it: ./fuzz_wheel crash-<sha1>).
 *
 * Environment:
 *   FUZZ_WHEEL_OPS=n          operations per input (default 4096)
 *   FUZZ_WHEEL_WRITE_SEEDS=d  write the seed inputs into d and exit
 *   FUZZ_WHEEL_VERBOSE=1      print the configuration of every input
 *
 * At exit: "fuzz_wheel: stats ops=N seconds=S ..." on stderr.
 */
#include "kshim.h"
#include "carousel_wheel.h"

#include <stdarg.h>
#include <time.h>

unsigned long kshim_warns;
unsigned long kshim_ffs_zero;

#define NS_PER_US	1000ULL
#define NS_PER_MS	1000000ULL
#define NS_PER_S	1000000000ULL
#define NONE		(~0ULL)
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* The qdisc's limits (sch_carousel.c) */
#define GRAN_MAX	NS_PER_S
#define RATE_MAX	(1ULL << 40)
#define TX_MAX		(1ULL << 53)
#define HORIZON_MAX	(0xffffffffULL * NS_PER_US)

/* The fuzzer's own */
#define MAX_PENDING	2048		/* largest limit it sets */
#define MAX_FLOWS	32
#define MAX_CLASSES	6
#define NOW_MAX		((1ULL << 63) + (1ULL << 60))
#define VERIFY_EVERY	256		/* ops between structure walks */
#define DEFAULT_OPS	4096

/* A failed check prints what failed and traps (violation(), below). */
static void __attribute__((noreturn, format(printf, 2, 3)))
violation(int line, const char *fmt, ...);

#define CHECK(cond, ...) do {					\
	if (__builtin_expect(!(cond), 0))			\
		violation(__LINE__, __VA_ARGS__);		\
} while (0)

/* The model's checks fail as ours do. */
#define MODEL_CHECK CHECK
#include "../lib/model.h"

enum { P_PENDING = 1, P_SENT, P_DROPPED };

/* Model side of pool[id]. */
struct pkt {
	u64	eff;		/* effective tick in the current wheel */
	u64	seq;		/* insertion order in the current wheel */
	u32	fseq;		/* rank in its flow's enqueue order */
	u32	len;
	u32	mark;		/* structure walk generation */
	u8	flow;
	u8	cls;		/* 0: unclassified */
	u8	state;
};

struct flow {
	u64	last;		/* latest departure of the pending packets */
	u32	next_fseq;
	u32	rel_fseq;	/* fseq + 1 of the last one released */
	u32	pending;
	bool	mono;		/* pending times non-decreasing in order */
};

struct cls {
	u64	rate;		/* bytes/s */
	u64	next;		/* ns */
	u32	burst;		/* bytes */
	u32	qlen;
};

/* The input: its bytes, then a PRNG seeded with their hash. */
struct src {
	const u8	*d;
	size_t		n, pos;
	u64		rng, buf;
	u32		nbuf;
};

struct fz {
	struct src		in;
	struct carousel_wheel	*w;
	u64			now, horizon, span, ceiling, active_rate;
	u64			wait;	/* the armed watchdog, NONE if none */
	u64			seq, moves;
	u32			gran, levels, limit, flow_limit;
	u32			nflows, nclasses, npkts, gen;
	u32			p_enq, p_deq;	/* op mix, percent */
	u32			p_adv;	/* 100: any time step, less: small */
	u32			p_cfg;	/* rate, params and limit changes */
	u8			horizon_drop;
	const char		*op;
	u64			opno;
	struct model_heap	q;	/* the pending packets, in heap[] */
	u32			heap[MAX_PENDING];
	struct flow		fl[MAX_FLOWS];
	struct cls		cl[MAX_CLASSES + 1];
	u64			recent[16];
};

static struct sk_buff *pool;
static struct pkt *pk;
static u32 pool_cap;
static u32 ops_per_input = DEFAULT_OPS;
static bool verbose;
static struct fz F;

/* Statistics, printed at exit. */
static struct {
	u64	ops, inputs, enq, sent, purged, rebuilds, cascades;
	u64	drop_limit, drop_flow, drop_horizon, drop_class, caps;
	u64	refused_enq, refused_rebuild, drop_rebuild_limit;
	u64	wake_null, wake_head, busy, max_pending;
	double	t0;
} st;

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ */
/* Failing                                                             */

static void print_stats(void);

static void __attribute__((noreturn, format(printf, 2, 3)))
violation(int line, const char *fmt, ...)
{
	struct fz *f = &F;
	va_list ap;

	fprintf(stderr, "fuzz_wheel: VIOLATION (line %d) in op %llu (%s): ",
		line, f->opno, f->op);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr,
		"\nfuzz_wheel: now %llu (tick %llu) gran %u horizon %llu levels %u cursor %llu count %u model %u limit %u\n",
		f->now, f->gran ? f->now / f->gran : 0, f->gran, f->horizon,
		f->levels, f->w ? f->w->cur : 0, f->w ? f->w->count : 0,
		f->q.n, f->limit);
	print_stats();
	__builtin_trap();
}


static void check_quiet(void)
{
	CHECK(!kshim_warns, "the wheel hit WARN_ON_ONCE (%lu times)",
	      kshim_warns);
	CHECK(!kshim_ffs_zero, "the wheel called __ffs64(0) (%lu times)",
	      kshim_ffs_zero);
}

/* ------------------------------------------------------------------ */
/* Input                                                               */

static u64 splitmix64(u64 *x)
{
	u64 z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void src_init(struct src *s, const u8 *d, size_t n)
{
	u64 h = 0xcbf29ce484222325ULL;	/* FNV-1a */

	for (size_t i = 0; i < n; i++)
		h = (h ^ d[i]) * 0x100000001b3ULL;
	s->d = d;
	s->n = n;
	s->pos = 0;
	s->rng = h ^ n;
	s->nbuf = 0;
}

static u8 src_u8(struct src *s)
{
	u8 b;

	if (s->pos < s->n)
		return s->d[s->pos++];
	if (!s->nbuf) {
		s->buf = splitmix64(&s->rng);
		s->nbuf = 8;
	}
	b = s->buf;
	s->buf >>= 8;
	s->nbuf--;
	return b;
}

/* Uniform enough in [0, n), 0 for n <= 1; reads as few bytes as n needs. */
static u64 src_below(struct src *s, u64 n)
{
	u64 v = 0, m = n - 1;

	if (n <= 1)
		return 0;
	do {
		v = (v << 8) | src_u8(s);
		m >>= 8;
	} while (m);
	return v % n;
}

static u64 src_u64(struct src *s)
{
	u64 v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | src_u8(s);
	return v;
}

static bool src_chance(struct src *s, u32 pct)
{
	return src_below(s, 100) < pct;
}

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

static u64 sat_add(u64 a, u64 b)
{
	return a + b < a ? NONE : a + b;
}

static u64 sat_mul(u64 a, u64 b)
{
	unsigned __int128 p = (unsigned __int128)a * b;

	return p >> 64 ? NONE : (u64)p;
}

static u64 pow1024(u32 k)
{
	return k >= 6 ? NONE : 1ULL << (CAROUSEL_LVL_BITS * k);
}

static u64 min_u64(u64 a, u64 b)
{
	return a < b ? a : b;
}

/* ------------------------------------------------------------------ */
/* The model's order: (effective tick, insertion order)                */

static bool before(const void *ctx, u32 a, u32 b)
{
	(void)ctx;
	return pk[a].eff < pk[b].eff ||
	       (pk[a].eff == pk[b].eff && pk[a].seq < pk[b].seq);
}

/* ------------------------------------------------------------------ */
/* Classes: the qdisc's GCRA (carousel_enqueue_one, carousel_tx_ns)    */

static u64 class_tx_ns(struct fz *f, const struct cls *c, u32 len)
{
	u64 ns = (u64)len * NS_PER_S / c->rate;
	u64 active = f->active_rate + (c->qlen ? 0 : c->rate);

	if (f->ceiling && active > f->ceiling) {
		unsigned __int128 p = (unsigned __int128)ns * active /
				      f->ceiling;

		ns = p > TX_MAX ? TX_MAX : (u64)p;
	}
	return min_u64(ns, TX_MAX);
}

static u64 gen_rate(struct src *s)
{
	static const u64 rates[] = {
		1000, 125000, 12500000, 125000000, 1250000000, 12500000000,
		RATE_MAX,
	};
	u32 pick = src_below(s, 10);

	if (pick < 7)
		return rates[pick];
	return 1 + src_below(s, pick == 7 ? 100000 : RATE_MAX);
}

static u32 gen_burst(struct src *s)
{
	u32 pick = src_below(s, 10);

	if (pick < 6)
		return 0;
	if (pick < 9)
		return src_below(s, 200000);
	return src_u64(s);
}

/* ------------------------------------------------------------------ */
/* Release and checks                                                  */

/* A packet leaves the model: sent by dequeue, or dropped. */
static void model_leave(struct fz *f, u32 id, u8 how)
{
	struct pkt *p = &pk[id];
	struct flow *fl = &f->fl[p->flow];

	CHECK(p->state == P_PENDING, "packet %u leaves twice (state %d)",
	      id, p->state);
	p->state = how;
	if (how == P_SENT && fl->mono) {
		CHECK(p->fseq >= fl->rel_fseq,
		      "flow %u (times non-decreasing) reordered: packet %u (rank %u, time %llu) after rank %u",
		      p->flow, id, p->fseq, pool[id].time, fl->rel_fseq - 1);
	}
	if (how == P_SENT && p->fseq + 1 > fl->rel_fseq)
		fl->rel_fseq = p->fseq + 1;
	if (!--fl->pending) {
		fl->mono = true;	/* a new run starts */
		fl->last = 0;
	}
	if (p->cls) {
		struct cls *c = &f->cl[p->cls];

		if (!--c->qlen)
			f->active_rate -= c->rate;
	}
}

/* Account the cascades of a packet that leaves the wheel. */
static void wheel_leave(struct fz *f, struct sk_buff *b)
{
	CHECK(b->moves <= f->levels - 1,
	      "packet %u cascaded %u times (levels %u)", b->id, b->moves,
	      f->levels);
	f->moves += b->moves;
	b->moves = 0;
}

static void check_cursor(struct fz *f)
{
	struct carousel_wheel *w = f->w;

	CHECK(w->count == f->q.n, "wheel count %u, model %u",
	      w->count, f->q.n);
	CHECK(w->cur <= f->now / f->gran, "cursor %llu after now's tick %llu",
	      w->cur, f->now / f->gran);
	CHECK(!f->q.n || w->cur <= pk[f->q.id[0]].eff,
	      "cursor %llu after the earliest packet's tick %llu", w->cur,
	      pk[f->q.id[0]].eff);
}

/* The walk's visit: our own packet, pending, seen once, in insertion order. */
struct walk {
	struct fz	*f;
	u32		total, gen;
};

static bool visit(void *ctx, const struct sk_buff *b,
		  const struct sk_buff *last, u32 lv, u32 idx, u64 *eff)
{
	struct walk *wk = ctx;
	struct pkt *p;

	CHECK(b >= pool && b < pool + wk->f->npkts && b == &pool[b->id],
	      "level %u slot %u: foreign skb %p", lv, idx, (void *)b);
	p = &pk[b->id];
	CHECK(p->state == P_PENDING && p->mark != wk->gen,
	      "level %u slot %u: packet %u %s", lv, idx, b->id,
	      p->mark == wk->gen ? "linked twice" : "not pending");
	p->mark = wk->gen;
	CHECK(!last || pk[last->id].seq < p->seq,
	      "level %u slot %u: packet %u not in insertion order",
	      lv, idx, b->id);
	wk->total++;
	*eff = p->eff;
	return true;
}

/* Walk the whole wheel and check its structure against the model. */
static void verify(struct fz *f)
{
	struct carousel_wheel *w = f->w;
	struct walk wk = { .f = f, .gen = ++f->gen };

	CHECK(w->levels == f->levels && w->gran == f->gran,
	      "wheel levels %u gran %u changed", w->levels, w->gran);
	check_cursor(f);
	model_walk(w, visit, &wk);
	CHECK(wk.total == f->q.n, "%u packets linked, model %u", wk.total,
	      f->q.n);
}

/* ------------------------------------------------------------------ */
/* Operations                                                          */

static u64 gen_edt(struct fz *f, struct flow *fl)
{
	struct src *s = &f->in;
	u64 now = f->now, H = f->horizon, g = f->gran, nt = now / g, t;
	u32 pick = src_below(s, 100);

	if (pick < 10) {			/* no stamp: "now" */
		t = 0;
	} else if (pick < 20) {			/* in the past */
		t = now - src_below(s, min_u64(now, 2 * H) + 1);
	} else if (pick < 33) {			/* next few ticks */
		t = now + src_below(s, 4 * g);
	} else if (pick < 43) {			/* tick edges */
		t = (nt + src_below(s, 8)) * g +
		    (src_chance(s, 50) ? g - 1 : 0);
	} else if (pick < 53) {			/* within two level-1 slots */
		t = now + src_below(s, min_u64(2048 * g, H) + 1);
	} else if (pick < 66) {			/* up to the horizon */
		t = now + src_below(s, H + 1);
	} else if (pick < 71) {			/* at and just past it */
		t = now + H + src_below(s, 2);
	} else if (pick < 74) {			/* beyond it */
		t = now + H + 1 + src_below(s, H);
	} else if (pick < 82) {			/* a time used before */
		t = f->recent[src_below(s, 16)];
	} else if (pick < 91) {			/* around a level boundary */
		u32 k = 1 + src_below(s, f->levels);
		u64 unit = pow1024(k), b;

		/* k == levels: the wrap of the top ring */
		b = sat_mul((nt >> (CAROUSEL_LVL_BITS * k)) + 1 +
			    src_below(s, 2), unit);
		t = sat_add(sat_mul(b + src_below(s, 3) - 1, g),
			    src_chance(s, 50) ? g - 1 : 0);
	} else {				/* paced: after the flow's last */
		t = (fl->last > now ? fl->last : now) + src_below(s, 64 * g);
	}
	f->recent[src_below(s, 16)] = t;
	return t;
}

static void op_enqueue(struct fz *f)
{
	struct src *s = &f->in;
	u32 fi = src_below(s, f->nflows), ci = 0;
	u32 id = f->npkts++, len;
	struct flow *fl = &f->fl[fi];
	struct cls *c;
	struct sk_buff *b = &pool[id];
	struct pkt *p = &pk[id];
	u64 depart, start = 0, tick, cur;
	bool ok, refuse;

	f->op = "enqueue";
	if (f->nclasses && src_chance(s, 60))
		ci = 1 + src_below(s, f->nclasses);
	c = ci ? &f->cl[ci] : NULL;
	len = src_chance(s, 50) ? 1514 : 60 + src_below(s, 65536 - 60);
	memset(b, 0, sizeof(*b));
	b->id = id;
	b->flow = fi;
	memset(p, 0, sizeof(*p));
	p->flow = fi;
	p->cls = ci;
	p->len = len;
	p->state = P_DROPPED;
	st.enq++;

	depart = gen_edt(f, fl);
	if (f->q.n >= f->limit) {
		st.drop_limit++;
		return;
	}
	if (fl->pending >= f->flow_limit) {
		st.drop_flow++;
		return;
	}
	if (depart > f->now + f->horizon) {
		if (f->horizon_drop) {
			st.drop_horizon++;
			return;
		}
		st.caps++;
		depart = f->now + f->horizon;
	}
	if (c) {
		u64 credit = c->burst ? (u64)c->burst * NS_PER_S / c->rate : 0;

		start = c->next > f->now ? c->next : f->now;
		if (start > credit && start - credit > depart)
			depart = start - credit;
		if (depart > f->now + f->horizon) {
			st.drop_class++;
			return;
		}
	}

	b->time = depart;
	carousel_wheel_sync(f->w, f->now);
	cur = f->w->cur;
	tick = depart / f->gran;
	refuse = tick >= cur && tick - cur >= f->span;
	ok = carousel_wheel_insert(f->w, b, depart);
	check_quiet();
	CHECK(ok != refuse,
	      "insert of tick %llu with the cursor at %llu (span %llu): %s",
	      tick, cur, f->span, ok ? "accepted, should be refused" :
	      "refused, should be accepted");
	if (!ok) {
		/* "that needs a cursor lagging by more than the horizon" */
		CHECK((f->now / f->gran - cur) * f->gran > f->horizon,
		      "insert refused with the cursor lagging by only %llu ticks (horizon %llu ns)",
		      f->now / f->gran - cur, f->horizon);
		st.refused_enq++;
		return;
	}

	if (c) {
		c->next = start + class_tx_ns(f, c, len);
		if (!c->qlen++)
			f->active_rate += c->rate;
	}
	if (!fl->pending)
		fl->mono = true;
	if (depart < fl->last)
		fl->mono = false;
	else
		fl->last = depart;
	fl->pending++;
	p->fseq = fl->next_fseq++;
	p->eff = model_eff(depart, f->gran, cur);
	p->seq = f->seq++;
	p->state = P_PENDING;
	model_heap_push(&f->q, id, before, NULL);
	if (f->q.n > st.max_pending)
		st.max_pending = f->q.n;
	check_cursor(f);
}

/* One carousel_dequeue(); false when it returned nothing. */
static bool dequeue_one(struct fz *f)
{
	struct carousel_wheel *w = f->w;
	u64 nt = f->now / f->gran, wake = 0, moves;
	u32 m, budget = 0, want;
	struct carousel_slot *sl;
	struct sk_buff *h, *b;
	bool bounded = false;

	st.ops++;
	if (!w->count) {
		CHECK(!f->q.n, "wheel empty, model has %u packets",
		      f->q.n);
		f->wait = NONE;
		return false;
	}
	/* a cascade's budget: none, or a few moves, as the qdisc's */
	if (src_chance(&f->in, 50)) {
		budget = 1 + src_below(&f->in, 8);
		bounded = true;
	}
	want = budget;
	moves = w->cascades;
	sl = carousel_wheel_first(w, nt, &wake, bounded ? &budget : NULL);
	check_quiet();
	CHECK(f->q.n, "wheel count %u, model empty", w->count);
	CHECK(!bounded || w->cascades - moves <= want,
	      "first() moved %llu packets on a budget of %u",
	      w->cascades - moves, want);
	m = f->q.id[0];
	if (!sl && wake == CAROUSEL_WHEEL_BUSY) {
		CHECK(bounded && !budget && w->casc_level,
		      "first() busy with budget %u left, %s cascade",
		      budget, w->casc_level ? "in a" : "no");
		f->wait = f->now;	/* the qdisc reschedules at once */
		st.busy++;
		check_cursor(f);
		return false;
	}
	if (!sl) {
		CHECK(wake != NONE, "first() gave NULL and no wake with %u packets",
		      w->count);
		CHECK(wake > nt, "wake tick %llu not after now's tick %llu (busy polling)",
		      wake, nt);
		CHECK(wake <= pk[m].eff,
		      "wake tick %llu after the earliest packet %u (tick %llu)",
		      wake, m, pk[m].eff);
		f->wait = wake * f->gran;
		st.wake_null++;
		check_cursor(f);
		return false;
	}
	CHECK(sl >= &w->lvl[0].slot[0] &&
	      sl < &w->lvl[0].slot[CAROUSEL_LVL_SLOTS],
	      "first() returned a slot outside level 0");
	h = sl->head;
	CHECK(h, "first() returned an empty slot");
	CHECK(h >= pool && h < pool + f->npkts && h == &pool[h->id],
	      "foreign skb %p in slot", (void *)h);
	CHECK(h->id == m,
	      "first()'s head is packet %u (time %llu, eff tick %llu, seq %llu) but the earliest by (eff tick, insertion) is %u (time %llu, eff tick %llu, seq %llu)",
	      h->id, h->time, pk[h->id].eff, pk[h->id].seq, m, pool[m].time,
	      pk[m].eff, pk[m].seq);
	if (h->time > f->now) {
		f->wait = h->time;
		st.wake_head++;
		check_cursor(f);
		return false;
	}
	b = carousel_wheel_pop(w, sl);
	check_quiet();
	CHECK(b == h, "pop() returned %p, not the head %p", (void *)b,
	      (void *)h);
	CHECK(!b->next, "popped skb still linked");
	CHECK(b->time <= f->now, "packet %u released early: time %llu > now %llu",
	      b->id, b->time, f->now);
	model_heap_pop(&f->q, before, NULL);
	wheel_leave(f, b);
	model_leave(f, b->id, P_SENT);
	st.sent++;
	if (!w->count)
		f->wait = NONE;
	check_cursor(f);
	return true;
}

static void op_dequeue(struct fz *f)
{
	struct src *s = &f->in;
	u32 pick = src_below(s, 10), n;

	f->op = "dequeue";
	n = pick < 4 ? 1 : pick < 8 ? 2 + src_below(s, 8) : ~0U;
	while (n-- && dequeue_one(f))
		;
}

static void op_advance(struct fz *f)
{
	struct src *s = &f->in;
	u64 H = f->horizon, g = f->gran, d;
	u32 pick = src_below(s, f->p_adv);

	f->op = "advance";
	st.ops++;
	if (pick < 18) {
		d = src_below(s, 2);
	} else if (pick < 40) {
		d = src_below(s, 3 * g + 1);
	} else if (pick < 58 && f->wait != NONE && f->wait > f->now) {
		/* the watchdog: exactly, or one ns either side */
		d = f->wait - f->now;
		if (pick >= 54)
			d += pick & 1 ? 1 : -1;
	} else if (pick < 72) {
		d = src_below(s, 1024 * g + 1);
	} else if (pick < 86) {			/* several spans of a level */
		u64 span = sat_mul(pow1024(1 + src_below(s, f->levels)), g);

		d = sat_add(sat_mul(span, 1 + src_below(s, 3)),
			    src_below(s, span));
	} else if (pick < 92) {			/* beyond the horizon */
		d = H + src_below(s, 2 * H);
	} else if (pick < 95) {			/* a stall: ring spans */
		d = sat_mul(sat_mul(pow1024(f->levels), g),
			    1 + src_below(s, 3));
	} else {
		d = src_below(s, H / 8 + 1);
	}
	f->now = min_u64(sat_add(f->now, d), NOW_MAX);
}

static void op_rate(struct fz *f)
{
	struct src *s = &f->in;
	struct cls *c;
	u64 rate;

	f->op = "rate";
	st.ops++;
	if (!f->nclasses)
		return;
	c = &f->cl[1 + src_below(s, f->nclasses)];
	rate = gen_rate(s);
	if (c->qlen)
		f->active_rate += rate - c->rate;
	c->rate = rate;
	c->burst = gen_burst(s);
	if (src_chance(s, 20))
		f->ceiling = src_chance(s, 50) ? 0 : gen_rate(s);
}

/*
 * carousel_rebuild(): every packet into wheel nw (a new one, or the
 * current one restarted) in the order pop_first() gives, with the cursor
 * at now; packets past the first `keep' accepted, and those the new wheel
 * refuses, are dropped.
 */
static void rebuild(struct fz *f, struct carousel_wheel *nw, u32 levels,
		    u32 gran, u64 horizon, u32 keep)
{
	static u32 list[MAX_PENDING];
	struct carousel_wheel *old = f->w;
	u32 n = 0, kept = 0, total = f->q.n;
	struct sk_buff *b;
	u64 cascades, cur;

	while ((b = carousel_wheel_pop_first(old))) {
		u32 m;

		check_quiet();
		CHECK(f->q.n,
		      "pop_first returned a packet, the model has none");
		m = f->q.id[0];
		CHECK(b >= pool && b < pool + f->npkts && b == &pool[b->id],
		      "pop_first returned a foreign skb %p", (void *)b);
		CHECK(b->id == m,
		      "pop_first gave packet %u (time %llu, eff tick %llu, seq %llu), expected %u (time %llu, eff tick %llu, seq %llu)",
		      b->id, b->time, pk[b->id].eff, pk[b->id].seq, m,
		      pool[m].time, pk[m].eff, pk[m].seq);
		CHECK(!b->next, "pop_first returned a linked skb");
		model_heap_pop(&f->q, before, NULL);
		wheel_leave(f, b);
		list[n++] = m;
		CHECK(old->count == f->q.n, "count %u, model %u after pop_first",
		      old->count, f->q.n);
	}
	check_quiet();
	CHECK(n == total && !old->count,
	      "pop_first drained %u packets of %u (count left %u)", n, total,
	      old->count);

	cascades = old->cascades;
	carousel_wheel_init(nw, levels, gran, f->now);
	nw->cascades = cascades;
	f->w = nw;
	f->levels = levels;
	f->gran = gran;
	f->horizon = horizon;
	f->span = model_span(levels);
	f->seq = 0;
	cur = nw->cur;
	CHECK(cur == f->now / gran, "init: cursor %llu, now's tick %llu", cur,
	      f->now / gran);

	for (u32 i = 0; i < n; i++) {
		u32 id = list[i];
		u64 tick = pool[id].time / gran;
		bool refuse = tick >= cur && tick - cur >= f->span, ok;

		if (kept < keep) {
			ok = carousel_wheel_insert(nw, &pool[id], pool[id].time);
			check_quiet();
			CHECK(ok != refuse,
			      "reinsert of tick %llu with the cursor at %llu (span %llu): %s",
			      tick, cur, f->span, ok ? "accepted, should be refused" :
			      "refused, should be accepted");
			if (ok) {
				pk[id].eff = model_eff(pool[id].time, gran, cur);
				pk[id].seq = f->seq++;
				model_heap_push(&f->q, id, before, NULL);
				kept++;
				continue;
			}
			st.refused_rebuild++;
		} else {
			st.drop_rebuild_limit++;
		}
		model_leave(f, id, P_DROPPED);
	}
	if (!nw->count)
		f->wait = NONE;
	verify(f);
}

/* Granularity and horizon as carousel_parse() accepts them, or false. */
static bool params_valid(u32 gran, u64 horizon)
{
	return gran >= 1 && gran <= GRAN_MAX && horizon >= NS_PER_US &&
	       horizon <= HORIZON_MAX && horizon % NS_PER_US == 0 &&
	       horizon >= gran &&
	       carousel_wheel_levels(gran, horizon) <= CAROUSEL_MAX_LEVELS;
}

static u32 gen_gran(struct src *s)
{
	static const u32 grans[] = {
		1, 2, 7, 64, 100, 1000, 1000, 1000, 2000, 4096, 65536,
		1000000, 1000000000,
	};
	u32 pick = src_below(s, 16);

	if (pick < 13)
		return grans[pick];
	if (pick < 15)
		return 1 + src_below(s, 10000);
	return 1 + src_below(s, GRAN_MAX);
}

static u64 gen_horizon(struct src *s)
{
	static const u64 hs[] = {
		NS_PER_US, 10 * NS_PER_US, NS_PER_MS, 33 * NS_PER_MS,
		NS_PER_S, 10 * NS_PER_S, 10 * NS_PER_S, 100 * NS_PER_S,
		1000 * NS_PER_S, HORIZON_MAX,
	};
	u32 pick = src_below(s, 13);

	if (pick < 10)
		return hs[pick];
	if (pick < 12)
		return (1 + src_below(s, 100000)) * NS_PER_US;
	return (1 + src_below(s, 0xffffffffULL)) * NS_PER_US;
}

static struct carousel_wheel *wheel_alloc(u32 levels)
{
	size_t sz = carousel_wheel_size(levels);
	struct carousel_wheel *w = malloc(sz);

	if (!w)
		abort();
	memset(w, 0xa5, sz);	/* init must clear everything */
	return w;
}

static void op_params(struct fz *f)
{
	struct src *s = &f->in;
	u32 gran = src_chance(s, 30) ? f->gran : gen_gran(s), levels;
	u64 horizon = src_chance(s, 30) ? f->horizon : gen_horizon(s);
	struct carousel_wheel *old = f->w;

	f->op = "params";
	st.ops++;
	if (!params_valid(gran, horizon))
		return;			/* -EINVAL: nothing changes */
	levels = carousel_wheel_levels(gran, horizon);
	if (gran == f->gran && levels == f->levels) {
		f->horizon = horizon;	/* same wheel */
		return;
	}
	st.rebuilds++;
	rebuild(f, wheel_alloc(levels), levels, gran, horizon, f->limit);
	free(old);
}

static void op_limit(struct fz *f)
{
	struct src *s = &f->in;
	u32 limit = 1 + src_below(s, src_chance(s, 20) ? 64 : MAX_PENDING);

	f->op = "limit";
	st.ops++;
	f->limit = limit;
	if (f->w->count > limit) {
		st.rebuilds++;
		rebuild(f, f->w, f->levels, f->gran, f->horizon, limit);
	}
}

/* ------------------------------------------------------------------ */
/* One input                                                           */

/*
 * Op mixes, in percent: enqueue, dequeue, time steps allowed (100: all,
 * less: only the smaller ones), config changes (rate, params, limit); the
 * rest advances time.
 */
static const struct {
	u32	enq, deq, adv, cfg;
} mixes[] = {
	{ 42, 30, 100, 3 },	/* balanced */
	{ 60, 15, 86, 3 },	/* filling */
	{ 60, 20, 40, 0 },	/* full: tiny time steps, fixed config */
	{ 30, 40, 100, 3 },	/* draining */
	{ 72, 6, 72, 3 },	/* stalled: the cursor lags, inserts refused */
};

static void setup(struct fz *f, const u8 *data, size_t size)
{
	struct src *s = &f->in;
	u32 pick;
	u64 g, H;

	memset(f, 0, offsetof(struct fz, heap));
	f->q.id = f->heap;
	memset(f->fl, 0, sizeof(f->fl));
	memset(f->recent, 0, sizeof(f->recent));
	src_init(s, data, size);
	f->op = "setup";

	g = gen_gran(s);
	H = gen_horizon(s);
	if (!params_valid(g, H)) {
		g = NS_PER_US;		/* the defaults */
		H = 10 * NS_PER_S;
	}
	f->gran = g;
	f->horizon = H;
	f->levels = carousel_wheel_levels(g, H);
	f->span = model_span(f->levels);

	pick = src_below(s, 8);
	if (pick < 2)
		f->now = src_below(s, 1000);
	else if (pick < 6)
		f->now = src_below(s, 1ULL << 52);
	else if (pick < 7)		/* cross 2^63 early */
		f->now = (1ULL << 63) - src_below(s, 4 * H + 1);
	else				/* just before a level boundary */
		f->now = min_u64(sat_mul(sat_mul(1 + src_below(s, 5),
				 pow1024(1 + src_below(s, f->levels))), g),
				 NOW_MAX) - 1 - src_below(s, g);
	f->wait = NONE;
	f->limit = src_chance(s, 20) ? 1 + src_below(s, 64) :
		   MAX_PENDING - src_below(s, MAX_PENDING / 2);
	f->flow_limit = src_chance(s, 80) ? 0xffff : 1 + src_below(s, 100);
	f->nflows = 1 + src_below(s, MAX_FLOWS);
	f->nclasses = src_below(s, MAX_CLASSES + 1);
	for (u32 i = 1; i <= f->nclasses; i++) {
		f->cl[i] = (struct cls){ 0 };
		f->cl[i].rate = gen_rate(s);
		f->cl[i].burst = gen_burst(s);
	}
	f->ceiling = src_chance(s, 70) ? 0 : gen_rate(s);
	f->horizon_drop = src_chance(s, 80);
	pick = src_below(s, ARRAY_SIZE(mixes));
	f->p_enq = mixes[pick].enq;
	f->p_deq = mixes[pick].enq + mixes[pick].deq;
	f->p_adv = mixes[pick].adv;
	f->p_cfg = mixes[pick].cfg;
	for (u32 i = 0; i < f->nflows; i++)
		f->fl[i].mono = true;

	f->w = wheel_alloc(f->levels);
	carousel_wheel_init(f->w, f->levels, g, f->now);
	if (verbose)
		fprintf(stderr,
			"fuzz_wheel: input %llu: gran %u horizon %llu levels %u now %llu limit %u flows %u classes %u mix %u/%u/%u\n",
			st.inputs, f->gran, f->horizon, f->levels, f->now,
			f->limit, f->nflows, f->nclasses, f->p_enq,
			f->p_deq - f->p_enq, f->p_adv);
}

/* Empty the wheel: follow the watchdog, or purge with pop_first(). */
static void finish(struct fz *f)
{
	struct carousel_wheel *w = f->w;
	u32 sent = 0, dropped = 0;

	f->op = "finish";
	if (verbose)
		fprintf(stderr,
			"fuzz_wheel: input %llu: %u packets, %u pending at the end, limit %u, now %llu, cursor %llu\n",
			st.inputs, f->npkts, f->q.n, f->limit, f->now,
			w->cur);
	if (src_chance(&f->in, 50)) {
		u64 guard = (u64)f->q.n * (f->levels + 2) + 8;
		u64 busy = (u64)f->q.n * f->levels + 8;

		while (f->q.n) {
			while (dequeue_one(f))
				;
			if (!f->q.n)
				break;
			if (f->wait == f->now && f->w->casc_level) {
				/* a cascade on its budget: each step moves */
				CHECK(busy--, "a cascade never ends");
				continue;
			}
			CHECK(f->wait != NONE && f->wait > f->now,
			      "%u packets left, watchdog at %llu, now %llu",
			      f->q.n, f->wait, f->now);
			CHECK(guard--, "%u packets never released", f->q.n);
			f->now = f->wait;
		}
	} else {
		u32 n = f->q.n;

		rebuild(f, w, f->levels, f->gran, f->horizon, 0);
		st.purged += n;
		w = f->w;
	}
	check_quiet();
	CHECK(!w->count && !f->q.n, "not empty: count %u, model %u",
	      w->count, f->q.n);
	CHECK(!carousel_wheel_pop_first(w),
	      "pop_first on an empty wheel returned a packet");
	check_quiet();
	verify(f);
	for (u32 id = 0; id < f->npkts; id++) {
		CHECK(pk[id].state == P_SENT || pk[id].state == P_DROPPED,
		      "packet %u lost (state %d)", id, pk[id].state);
		sent += pk[id].state == P_SENT;
		dropped += pk[id].state == P_DROPPED;
	}
	CHECK(sent + dropped == f->npkts, "enqueued %u != sent %u + dropped %u",
	      f->npkts, sent, dropped);
	CHECK(f->moves == w->cascades, "packets moved %llu times, w->cascades %llu",
	      f->moves, w->cascades);
	st.cascades += w->cascades;
	for (u32 i = 1; i <= f->nclasses; i++)
		CHECK(!f->cl[i].qlen, "class %u qlen %u", i, f->cl[i].qlen);
	CHECK(!f->active_rate, "active rate %llu", f->active_rate);
	free(w);
	f->w = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz *f = &F;
	u64 start = st.ops, next_verify = VERIFY_EVERY;

	st.inputs++;
	setup(f, data, size);
	while (st.ops - start < ops_per_input) {
		u32 pick = src_below(&f->in, 100);

		f->opno = st.ops - start;
		if (pick < f->p_enq) {
			st.ops++;
			op_enqueue(f);
		} else if (pick < f->p_deq) {
			op_dequeue(f);
		} else if (pick < 100 - f->p_cfg) {
			op_advance(f);
		} else if (pick < 99) {
			op_rate(f);
		} else if (src_chance(&f->in, 50)) {
			op_params(f);
		} else {
			op_limit(f);
		}
		if (st.ops - start >= next_verify) {
			verify(f);
			next_verify += VERIFY_EVERY;
		}
	}
	finish(f);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Setup, seeds, statistics                                            */

static void print_stats(void)
{
	double t = mono_s() - st.t0;

	fprintf(stderr,
		"fuzz_wheel: stats ops=%llu seconds=%.1f ops_per_s=%.0f inputs=%llu\n",
		st.ops, t, t > 0 ? st.ops / t : 0.0, st.inputs);
	fprintf(stderr,
		"fuzz_wheel: packets enqueued=%llu sent=%llu purged=%llu max_pending=%llu cascades=%llu rebuilds=%llu\n",
		st.enq, st.sent, st.purged, st.max_pending, st.cascades,
		st.rebuilds);
	fprintf(stderr,
		"fuzz_wheel: drops limit=%llu flow_limit=%llu horizon=%llu class_horizon=%llu insert_refused=%llu rebuild_refused=%llu rebuild_limit=%llu; caps=%llu\n",
		st.drop_limit, st.drop_flow, st.drop_horizon, st.drop_class,
		st.refused_enq, st.refused_rebuild, st.drop_rebuild_limit,
		st.caps);
	fprintf(stderr,
		"fuzz_wheel: dequeue stops: wake at a coarser slot=%llu, at a not-due head=%llu, cascade budget spent=%llu\n",
		st.wake_null, st.wake_head, st.busy);
}

/*
 * Seeds: the header bytes pick, in order, granularity, horizon, start
 * time, limit, flow_limit, flows, classes (rate, burst each), ceiling,
 * horizon_drop and the op mix (see setup()); what follows is operations.
 * These pin a few configurations; the PRNG tail does the rest.
 */
static void write_seeds(const char *dir)
{
	static const struct {
		const char	*name;
		u8		bytes[8];
	} seeds[] = {
		{ "default-1us-10s", { 5, 5, 3, 0 } },
		{ "1ns-1ms", { 0, 2, 0, 0 } },
		{ "64ns-1000s", { 3, 8, 4, 0 } },
		{ "64k-100s", { 10, 7, 6, 0 } },
		{ "1s-max", { 12, 9, 7, 0 } },
		{ "7ns-33ms", { 2, 3, 7, 0 } },
		{ "1us-1us", { 5, 0, 2, 0 } },
	};

	for (u32 i = 0; i < ARRAY_SIZE(seeds); i++) {
		char path[4096];
		FILE *fp;

		snprintf(path, sizeof(path), "%s/seed-%s", dir, seeds[i].name);
		fp = fopen(path, "wb");
		if (!fp || fwrite(seeds[i].bytes, 1, sizeof(seeds[i].bytes),
				  fp) != sizeof(seeds[i].bytes)) {
			perror(path);
			exit(1);
		}
		fclose(fp);
	}
	printf("fuzz_wheel: %zu seeds written to %s\n", ARRAY_SIZE(seeds),
	       dir);
	exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *e;

	(void)argc;
	(void)argv;
	e = getenv("FUZZ_WHEEL_WRITE_SEEDS");
	if (e)
		write_seeds(e);
	e = getenv("FUZZ_WHEEL_OPS");
	if (e && strtoul(e, NULL, 0))
		ops_per_input = strtoul(e, NULL, 0);
	verbose = getenv("FUZZ_WHEEL_VERBOSE") != NULL;
	/* every enqueue takes a packet; a dequeue burst may overshoot */
	pool_cap = ops_per_input + 1;
	pool = calloc(pool_cap, sizeof(*pool));
	pk = calloc(pool_cap, sizeof(*pk));
	if (!pool || !pk)
		abort();
	st.t0 = mono_s();
	atexit(print_stats);
	return 0;
}

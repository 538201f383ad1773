// SPDX-License-Identifier: GPL-2.0
/*
 * wheelbench.c - steady-state cost of an EDT queue: the carousel timing
 * wheel (the very code of ../../carousel_wheel.h, compiled against
 * tools/include/kshim.h), a red-black tree with a cached leftmost node (the
 * structure sch_fq and sch_etf keep their packets in) and a binary heap.
 *
 *   wheelbench [-n N,N,...] [-s struct,...] [-o OPS] [-r RUNS] [-H ns] [-c]
 *
 * For each N, each structure is filled with N packets whose departure
 * times are uniform over [0, H) (H = 1 s by default) and then driven in
 * steady state: one "pair" removes the earliest packet (the clock jumps to
 * its departure time, as a qdisc dequeuing exactly when it is due) and
 * inserts one at that time + uniform[0, H).  So N stays constant and the
 * packets stay spread over the horizon.  Every structure sees the same
 * sequence of times (same seed).
 *
 * Runs are interleaved (run 1 of every structure, then run 2, ...) so that
 * noise on this machine hits all three alike; ns/pair is the median run.
 *
 * -c (for callgrind): a single run of OPS pairs inside bench_measure(), and
 * nothing else is instrumented (CALLGRIND_START/STOP_INSTRUMENTATION), so
 * the Ir count of the run is the cost of OPS pairs.
 *
 * The wheel's cost is amortised over its top-level period (1024^2 ticks,
 * 1.05 s at 1 us): once per period the cursor enters a new top-level slot
 * and cascades every packet in it.  OPS should span whole periods (about
 * N * 1.05 s / H pairs, see wheel.py), or a run catches that cascade or
 * misses it and is off either way.
 *
 * Output: one JSON object per line:
 *   {"structure": "carousel", "n": N, "ops": OPS, "runs": R,
 *    "ns_per_pair": median, "ns_min": .., "ns_max": ..,
 *    "cascades_per_pair": packets moved down a level per pair (carousel),
 *    "check": sum}
 * "check" is a checksum of the departure times popped; the three
 * structures must agree on it (they pop the same times in the same order
 * up to ties), and main() exits 1 if they do not.
 */
#include "kshim.h"
#include "carousel_wheel.h"

#include <errno.h>
#include <inttypes.h>
#include <time.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

unsigned long kshim_warns;
unsigned long kshim_ffs_zero;

#define GRAN_NS		1000U		/* qdisc default granularity */
#define HORIZON_NS	10000000000ULL	/* qdisc default horizon, sizes the wheel */

/* ------------------------------------------------------------------ rng */
struct rng {
	u64 s;
};

static inline u64 rng_next(struct rng *r)
{
	/* xorshift64* */
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545F4914F6CDD1DULL;
}

/* uniform in [0, range), range < 2^32 * 2^32 is fine for our ranges */
static inline u64 rng_below(struct rng *r, u64 range)
{
	return (u64)(((unsigned __int128)rng_next(r) * range) >> 64);
}

/* ------------------------------------------------------------- rbtree */
/*
 * A red-black tree keyed by departure time, with parent pointers and a
 * cached leftmost node.  Equal keys go right, so equal times leave in
 * insertion order.  Written from the textbook algorithm (insert: recolour
 * or rotate up from the new red node; erase: splice out, then fix a
 * "double black" up the tree).
 */
enum { RB_RED, RB_BLACK };

struct rbnode {
	struct rbnode	*left, *right, *parent;
	u64		time;
	u32		color;
	u32		id;
};

struct rbtree {
	struct rbnode	*root;
	struct rbnode	*leftmost;
	u64		count;
};

static inline int rb_color(const struct rbnode *n)
{
	return n ? (int)n->color : RB_BLACK;
}

static void rb_set_child(struct rbtree *t, struct rbnode *parent,
			 struct rbnode *old, struct rbnode *new)
{
	if (!parent)
		t->root = new;
	else if (parent->left == old)
		parent->left = new;
	else
		parent->right = new;
}

/* x's right child y takes x's place; x becomes y's left child. */
static void rb_rotate_left(struct rbtree *t, struct rbnode *x)
{
	struct rbnode *y = x->right;

	x->right = y->left;
	if (y->left)
		y->left->parent = x;
	y->parent = x->parent;
	rb_set_child(t, x->parent, x, y);
	y->left = x;
	x->parent = y;
}

static void rb_rotate_right(struct rbtree *t, struct rbnode *x)
{
	struct rbnode *y = x->left;

	x->left = y->right;
	if (y->right)
		y->right->parent = x;
	y->parent = x->parent;
	rb_set_child(t, x->parent, x, y);
	y->right = x;
	x->parent = y;
}

static void rb_insert(struct rbtree *t, struct rbnode *z)
{
	struct rbnode **link = &t->root, *parent = NULL;
	bool leftmost = true;

	while (*link) {
		parent = *link;
		if (z->time < parent->time) {
			link = &parent->left;
		} else {
			link = &parent->right;
			leftmost = false;
		}
	}
	z->left = z->right = NULL;
	z->parent = parent;
	z->color = RB_RED;
	*link = z;
	if (leftmost)
		t->leftmost = z;
	t->count++;

	/* Fix a red node with a red parent, walking up. */
	while (z->parent && z->parent->color == RB_RED) {
		struct rbnode *p = z->parent, *g = p->parent, *u;

		if (p == g->left) {
			u = g->right;
			if (rb_color(u) == RB_RED) {
				p->color = u->color = RB_BLACK;
				g->color = RB_RED;
				z = g;
				continue;
			}
			if (z == p->right) {
				rb_rotate_left(t, p);
				z = p;
				p = z->parent;
			}
			p->color = RB_BLACK;
			g->color = RB_RED;
			rb_rotate_right(t, g);
		} else {
			u = g->left;
			if (rb_color(u) == RB_RED) {
				p->color = u->color = RB_BLACK;
				g->color = RB_RED;
				z = g;
				continue;
			}
			if (z == p->left) {
				rb_rotate_right(t, p);
				z = p;
				p = z->parent;
			}
			p->color = RB_BLACK;
			g->color = RB_RED;
			rb_rotate_left(t, g);
		}
	}
	t->root->color = RB_BLACK;
}

static struct rbnode *rb_next(struct rbnode *n)
{
	struct rbnode *p;

	if (n->right) {
		n = n->right;
		while (n->left)
			n = n->left;
		return n;
	}
	while ((p = n->parent) && n == p->right)
		n = p;
	return p;
}

/* Restore the black height after removing a black node: x (maybe NULL)
 * with parent xp is one black short.
 */
static void rb_erase_fix(struct rbtree *t, struct rbnode *x, struct rbnode *xp)
{
	while (x != t->root && rb_color(x) == RB_BLACK) {
		struct rbnode *w;

		if (x == xp->left) {
			w = xp->right;
			if (w->color == RB_RED) {
				w->color = RB_BLACK;
				xp->color = RB_RED;
				rb_rotate_left(t, xp);
				w = xp->right;
			}
			if (rb_color(w->left) == RB_BLACK &&
			    rb_color(w->right) == RB_BLACK) {
				w->color = RB_RED;
				x = xp;
				xp = x->parent;
				continue;
			}
			if (rb_color(w->right) == RB_BLACK) {
				w->left->color = RB_BLACK;
				w->color = RB_RED;
				rb_rotate_right(t, w);
				w = xp->right;
			}
			w->color = xp->color;
			xp->color = RB_BLACK;
			w->right->color = RB_BLACK;
			rb_rotate_left(t, xp);
		} else {
			w = xp->left;
			if (w->color == RB_RED) {
				w->color = RB_BLACK;
				xp->color = RB_RED;
				rb_rotate_right(t, xp);
				w = xp->left;
			}
			if (rb_color(w->left) == RB_BLACK &&
			    rb_color(w->right) == RB_BLACK) {
				w->color = RB_RED;
				x = xp;
				xp = x->parent;
				continue;
			}
			if (rb_color(w->left) == RB_BLACK) {
				w->right->color = RB_BLACK;
				w->color = RB_RED;
				rb_rotate_left(t, w);
				w = xp->left;
			}
			w->color = xp->color;
			xp->color = RB_BLACK;
			w->left->color = RB_BLACK;
			rb_rotate_right(t, xp);
		}
		x = t->root;
		xp = NULL;
	}
	if (x)
		x->color = RB_BLACK;
}

static void rb_erase(struct rbtree *t, struct rbnode *z)
{
	struct rbnode *x, *xp;
	int removed_color = z->color;

	if (t->leftmost == z)
		t->leftmost = rb_next(z);
	t->count--;

	if (!z->left || !z->right) {
		x = z->left ? z->left : z->right;
		xp = z->parent;
		if (x)
			x->parent = xp;
		rb_set_child(t, xp, z, x);
	} else {
		/* y, z's successor, has no left child: it takes z's place. */
		struct rbnode *y = z->right;

		while (y->left)
			y = y->left;
		removed_color = y->color;
		x = y->right;
		if (y->parent == z) {
			xp = y;
		} else {
			xp = y->parent;
			xp->left = x;
			if (x)
				x->parent = xp;
			y->right = z->right;
			z->right->parent = y;
		}
		y->left = z->left;
		z->left->parent = y;
		y->parent = z->parent;
		y->color = z->color;
		rb_set_child(t, z->parent, z, y);
	}
	if (removed_color == RB_BLACK)
		rb_erase_fix(t, x, xp);
}

/* Black height of the subtree, -1 if a red-black rule or the order is broken. */
static int rb_check(const struct rbnode *n, const struct rbnode *parent)
{
	int l, r;

	if (!n)
		return 1;
	if (n->parent != parent)
		return -1;
	if (n->color == RB_RED && (rb_color(n->left) == RB_RED ||
				   rb_color(n->right) == RB_RED))
		return -1;
	if ((n->left && n->left->time > n->time) ||
	    (n->right && n->right->time < n->time))
		return -1;
	l = rb_check(n->left, n);
	r = rb_check(n->right, n);
	if (l < 0 || r < 0 || l != r)
		return -1;
	return l + (n->color == RB_BLACK);
}

/* --------------------------------------------------------------- heap */
/* A binary min-heap of (time, packet) pairs in an array. */
struct hent {
	u64		time;
	struct sk_buff	*skb;
};

struct heap {
	struct hent	*a;
	u64		count;
};

static void heap_push(struct heap *h, u64 time, struct sk_buff *skb)
{
	u64 i = h->count++;

	while (i) {
		u64 p = (i - 1) / 2;

		if (h->a[p].time <= time)
			break;
		h->a[i] = h->a[p];
		i = p;
	}
	h->a[i].time = time;
	h->a[i].skb = skb;
}

static struct hent heap_pop(struct heap *h)
{
	struct hent top = h->a[0], last = h->a[--h->count];
	u64 i = 0, n = h->count;

	for (;;) {
		u64 c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && h->a[c + 1].time < h->a[c].time)
			c++;
		if (last.time <= h->a[c].time)
			break;
		h->a[i] = h->a[c];
		i = c;
	}
	if (n)
		h->a[i] = last;
	return top;
}

/* ---------------------------------------------------------- the bench */
enum { S_CAROUSEL, S_RBTREE, S_HEAP, S_NR };
static const char *const sname[S_NR] = { "carousel", "rbtree", "heap" };

struct bench {
	int		kind;
	u64		n;
	u64		now;		/* ns: departure time of the last pop */
	struct rng	rng;
	u64		horizon;	/* spread of departure times, ns */
	u64		check;
	/* carousel */
	struct carousel_wheel *w;
	struct sk_buff	*skbs;
	/* rbtree */
	struct rbtree	t;
	struct rbnode	*nodes;
	/* heap */
	struct heap	h;
};

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n, sz);

	if (!p) {
		fprintf(stderr, "wheelbench: out of memory (%zu x %zu)\n", n, sz);
		exit(2);
	}
	return p;
}

static void bench_setup(struct bench *b, int kind, u64 n, u64 horizon, u64 seed)
{
	u64 i;

	memset(b, 0, sizeof(*b));
	b->kind = kind;
	b->n = n;
	/*
	 * Departure times are whole ticks of the wheel, so that "the
	 * earliest packet" means the same time in all three structures (the
	 * wheel releases a tick's packets in FIFO order, not by time within
	 * the tick) and all three see the same sequence of times.
	 */
	horizon /= GRAN_NS;
	b->horizon = horizon;
	b->rng.s = seed * 0x9E3779B97F4A7C15ULL | 1;
	b->now = 1000000000ULL;		/* t = 1 s: any origin will do */

	switch (kind) {
	case S_CAROUSEL:
		b->w = xcalloc(1, carousel_wheel_size(
			carousel_wheel_levels(GRAN_NS, HORIZON_NS)));
		carousel_wheel_init(b->w, carousel_wheel_levels(GRAN_NS, HORIZON_NS),
				    GRAN_NS, b->now);
		b->skbs = xcalloc(n, sizeof(*b->skbs));
		for (i = 0; i < n; i++) {
			b->skbs[i].id = i;
			b->skbs[i].time = b->now + rng_below(&b->rng, horizon) * GRAN_NS;
			if (!carousel_wheel_insert(b->w, &b->skbs[i], b->skbs[i].time))
				exit(3);
		}
		break;
	case S_RBTREE:
		b->nodes = xcalloc(n, sizeof(*b->nodes));
		for (i = 0; i < n; i++) {
			b->nodes[i].id = i;
			b->nodes[i].time = b->now + rng_below(&b->rng, horizon) * GRAN_NS;
			rb_insert(&b->t, &b->nodes[i]);
		}
		break;
	case S_HEAP:
		b->skbs = xcalloc(n, sizeof(*b->skbs));
		b->h.a = xcalloc(n, sizeof(*b->h.a));
		for (i = 0; i < n; i++) {
			b->skbs[i].id = i;
			b->skbs[i].time = b->now + rng_below(&b->rng, horizon) * GRAN_NS;
			heap_push(&b->h, b->skbs[i].time, &b->skbs[i]);
		}
		break;
	}
}

static void bench_free(struct bench *b)
{
	free(b->w);
	free(b->skbs);
	free(b->nodes);
	free(b->h.a);
}

/* `ops' pairs: pop the earliest, reinsert it at now + U[0, horizon). */
static __attribute__((noinline)) void bench_measure(struct bench *b, u64 ops)
{
	u64 i, now = b->now, check = b->check, horizon = b->horizon;

	/* horizon is in ticks here: times are whole ticks (see bench_setup) */
	struct rng rng = b->rng;

	switch (b->kind) {
	case S_CAROUSEL: {
		struct carousel_wheel *w = b->w;

		for (i = 0; i < ops; i++) {
			struct sk_buff *skb = carousel_wheel_pop_first(w);

			now = skb->time > now ? skb->time : now;
			check += skb->time;
			skb->time = now + rng_below(&rng, horizon) * GRAN_NS;
			carousel_wheel_insert(w, skb, skb->time);
		}
		break;
	}
	case S_RBTREE: {
		struct rbtree *t = &b->t;

		for (i = 0; i < ops; i++) {
			struct rbnode *n = t->leftmost;

			rb_erase(t, n);
			now = n->time > now ? n->time : now;
			check += n->time;
			n->time = now + rng_below(&rng, horizon) * GRAN_NS;
			rb_insert(t, n);
		}
		break;
	}
	case S_HEAP: {
		struct heap *h = &b->h;

		for (i = 0; i < ops; i++) {
			struct hent e = heap_pop(h);

			now = e.time > now ? e.time : now;
			check += e.time;
			e.skb->time = now + rng_below(&rng, horizon) * GRAN_NS;
			heap_push(h, e.skb->time, e.skb);
		}
		break;
	}
	}
	b->now = now;
	b->check = check;
	b->rng = rng;
}

static bool bench_verify(struct bench *b)
{
	switch (b->kind) {
	case S_CAROUSEL:
		return b->w->count == b->n && !kshim_warns && !kshim_ffs_zero;
	case S_RBTREE: {
		const struct rbnode *l = b->t.root;

		while (l && l->left)
			l = l->left;
		return b->t.count == b->n && l == b->t.leftmost &&
		       rb_check(b->t.root, NULL) > 0;
	}
	case S_HEAP: {
		u64 i;

		for (i = 1; i < b->h.count; i++)
			if (b->h.a[(i - 1) / 2].time > b->h.a[i].time)
				return false;
		return b->h.count == b->n;
	}
	}
	return false;
}

static u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: wheelbench [-n N,N,...] [-s carousel,rbtree,heap] [-o OPS]\n"
		"                  [-r RUNS] [-H horizon_ns] [-c] [-v]\n");
	exit(2);
}

#define MAX_NS		16
#define MAX_RUNS	64

int main(int argc, char **argv)
{
	u64 ns[MAX_NS] = { 1000, 10000, 100000, 1000000, 10000000 };
	int nn = 5, runs = 5, opt, i, k, r;
	bool use[S_NR] = { true, true, true }, callgrind = false, verify = false;
	u64 ops = 1000000, horizon = 1000000000ULL;
	int rc = 0;

	while ((opt = getopt(argc, argv, "n:s:o:r:H:cv")) != -1) {
		char *tok;

		switch (opt) {
		case 'n':
			nn = 0;
			for (tok = strtok(optarg, ","); tok && nn < MAX_NS;
			     tok = strtok(NULL, ","))
				ns[nn++] = strtoull(tok, NULL, 0);
			break;
		case 's':
			memset(use, 0, sizeof(use));
			for (tok = strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
				for (k = 0; k < S_NR && strcmp(tok, sname[k]); k++)
					;
				if (k == S_NR)
					usage();
				use[k] = true;
			}
			break;
		case 'o':
			ops = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			runs = atoi(optarg);
			break;
		case 'H':
			horizon = strtoull(optarg, NULL, 0);
			break;
		case 'c':
			callgrind = true;
			break;
		case 'v':
			verify = true;
			break;
		default:
			usage();
		}
	}
	if (runs < 1 || runs > MAX_RUNS || !ops || !nn || horizon < 2 ||
	    horizon >= HORIZON_NS)
		usage();
	if (callgrind)
		runs = 1;

	for (i = 0; i < nn; i++) {
		struct bench b[S_NR];
		double t[S_NR][MAX_RUNS];
		u64 check[S_NR];

		for (k = 0; k < S_NR; k++)
			if (use[k])
				bench_setup(&b[k], k, ns[i], horizon, 42 + i);

		/* Interleaved runs; the same op sequence in every structure. */
		for (r = 0; r < runs; r++) {
			for (k = 0; k < S_NR; k++) {
				u64 t0, t1;

				if (!use[k])
					continue;
				t0 = now_ns();
				if (callgrind) {
					CALLGRIND_ZERO_STATS;
					CALLGRIND_START_INSTRUMENTATION;
				}
				bench_measure(&b[k], ops);
				if (callgrind) {
					CALLGRIND_STOP_INSTRUMENTATION;
					CALLGRIND_DUMP_STATS_AT(sname[k]);
				}
				t1 = now_ns();
				t[k][r] = (double)(t1 - t0) / ops;
			}
		}
		for (k = 0; k < S_NR; k++) {
			if (!use[k])
				continue;
			check[k] = b[k].check;
			if (verify && !bench_verify(&b[k])) {
				fprintf(stderr, "wheelbench: %s n=%llu: structure check failed\n",
					sname[k], ns[i]);
				rc = 1;
			}
			qsort(t[k], runs, sizeof(double), cmp_double);
			printf("{\"structure\": \"%s\", \"n\": %llu, \"ops\": %llu, "
			       "\"runs\": %d, \"ns_per_pair\": %.2f, \"ns_min\": %.2f, "
			       "\"ns_max\": %.2f, \"cascades_per_pair\": %.3f, "
			       "\"check\": %llu}\n",
			       sname[k], ns[i], ops, runs, t[k][runs / 2], t[k][0],
			       t[k][runs - 1],
			       k == S_CAROUSEL ? (double)b[k].w->cascades / ops / runs : 0.0,
			       check[k]);
			fflush(stdout);
			bench_free(&b[k]);
		}
		/* Same times popped in the same order (ties aside): same sum. */
		for (k = 1; k < S_NR; k++) {
			if (use[0] && use[k] && check[k] != check[0]) {
				fprintf(stderr, "wheelbench: n=%llu: %s and %s popped different times\n",
					ns[i], sname[0], sname[k]);
				rc = 1;
			}
		}
	}
	return rc;
}

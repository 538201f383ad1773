// SPDX-License-Identifier: GPL-2.0
/*
 * plugin_test.c - the tc plugin's xstats printing against older and newer
 * kernel modules, without tc.
 *
 * tc/q_carousel.c is compiled in here, with the tc functions it declares
 * provided by this file: they record every JSON key and value printed.
 * Then print_xstats() gets the qdisc's and a class's TCA_STATS_APP payload
 * at today's length, at the length of the first release (an older module:
 * the fields it lacks must print as 0), and longer (a newer module: the
 * tail must be ignored, and ASan checks nothing past our struct is read).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tc/q_carousel.c"

#define MAXREC 128

static struct {
	char key[64];
	unsigned long long val;
} rec[MAXREC];
static int nrec, failures, checks;

static void record(const char *key, unsigned long long v)
{
	if (!key || nrec >= MAXREC)
		return;
	snprintf(rec[nrec].key, sizeof(rec[nrec].key), "%s", key);
	rec[nrec++].val = v;
}

static int lookup(const char *key, unsigned long long *v)
{
	int i;

	for (i = 0; i < nrec; i++) {
		if (!strcmp(rec[i].key, key)) {
			*v = rec[i].val;
			return 1;
		}
	}
	return 0;
}

/* ---- tc, as far as the plugin uses it: JSON mode, recording ---- */

bool is_json_context(void) { return true; }
void print_nl(void) { }
int print_color_uint(enum tc_out t, enum tc_color c, const char *key,
		     const char *fmt, unsigned int v)
{ record(key, v); return 0; }
int print_color_lluint(enum tc_out t, enum tc_color c, const char *key,
		       const char *fmt, unsigned long long v)
{ record(key, v); return 0; }
int print_color_bool(enum tc_out t, enum tc_color c, const char *key,
		     const char *fmt, bool v)
{ record(key, v); return 0; }
int print_color_string(enum tc_out t, enum tc_color c, const char *key,
		       const char *fmt, const char *v)
{ return 0; }
int print_color_size(enum tc_out t, enum tc_color c, const char *key,
		     const char *fmt, __u32 v)
{ record(key, v); return 0; }
void tc_print_rate(enum tc_out t, const char *key, const char *fmt,
		   unsigned long long rate)
{ record(key, rate); }
char *sprint_time64(__s64 time, char *buf)
{ snprintf(buf, CAROUSEL_TBUF, "%lld", (long long)time); return buf; }
/* Not reached by print_xstats(). */
int addattr_l(struct nlmsghdr *n, int m, int t, const void *d, int l)
{ abort(); }
struct rtattr *addattr_nest(struct nlmsghdr *n, int m, int t) { abort(); }
int addattr_nest_end(struct nlmsghdr *n, struct rtattr *r) { abort(); }
int parse_rtattr_flags(struct rtattr *tb[], int max, struct rtattr *rta,
		       int len, unsigned short flags) { abort(); }
int get_u32(__u32 *v, const char *a, int b) { abort(); }
int get_rate64(__u64 *r, const char *s) { abort(); }
int get_percent_rate64(__u64 *r, const char *s, const char *d) { abort(); }
int get_size(unsigned int *s, const char *a) { abort(); }
int get_time64(__s64 *t, const char *s) { abort(); }

/* ---- the tests ---- */

static void expect(const char *what, const char *key, unsigned long long want)
{
	unsigned long long got;

	checks++;
	if (!lookup(key, &got)) {
		printf("not ok %d - %s: key %s not printed\n", checks, what, key);
		failures++;
	} else if (got != want) {
		printf("not ok %d - %s: %s = %llu, want %llu\n", checks, what,
		       key, got, want);
		failures++;
	} else {
		printf("ok %d - %s: %s = %llu\n", checks, what, key, got);
	}
}

/* Hand print_xstats() len bytes of payload (a heap copy sized exactly). */
static void feed(const void *payload, size_t len)
{
	struct rtattr *rta = malloc(RTA_LENGTH(len));

	rta->rta_type = 4;	/* TCA_STATS_APP */
	rta->rta_len = RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), payload, len);
	nrec = 0;
	carousel_qdisc_util.print_xstats(&carousel_qdisc_util, stdout, rta);
	free(rta);
}

int main(void)
{
	struct tc_carousel_xstats q;
	struct tc_carousel_class_xstats c;
	unsigned char big[sizeof(q) + 64];

	printf("TAP version 13\n");
	memset(&q, 0, sizeof(q));
	q.wheel_packets = 7;
	q.wheel_bytes = 82360;
	q.wheel_levels = 3;
	q.flows = 5;
	q.ce_marks = 11;
	q.cn_returns = 13;
	q.alloc_drops = 17;

	/* Today's module. */
	feed(&q, sizeof(q));
	expect("same version", "wheel_packets", 7);
	expect("same version", "wheel_levels", 3);
	expect("same version", "flows", 5);
	expect("same version", "ce_marks", 11);
	expect("same version", "cn_returns", 13);
	expect("same version", "alloc_drops", 17);

	/* An older module: the first release's 128 bytes. */
	feed(&q, CAROUSEL_QDISC_XSTATS_MIN);
	expect("older module", "wheel_packets", 7);
	expect("older module", "wheel_bytes", 82360);
	expect("older module", "flows", 0);
	expect("older module", "ce_marks", 0);
	expect("older module", "alloc_drops", 0);

	/* A newer module: a tail we do not know. */
	memset(big, 0xab, sizeof(big));
	memcpy(big, &q, sizeof(q));
	feed(big, sizeof(big));
	expect("newer module", "wheel_packets", 7);
	expect("newer module", "alloc_drops", 17);

	/* Classes: today's, an older one (no flows), a newer one. */
	c.lag_ns = 1000;
	c.effective_rate = 125000;
	c.flows = 2;
	feed(&c, sizeof(c));
	expect("class, same version", "lag_ns", 1000);
	expect("class, same version", "effective_rate", 125000);
	expect("class, same version", "flows", 2);
	feed(&c, 16);
	expect("class, older module", "effective_rate", 125000);
	expect("class, older module", "flows", 0);
	memset(big, 0xcd, sizeof(big));
	memcpy(big, &c, sizeof(c));
	feed(big, sizeof(c) + 8);
	expect("class, newer module", "flows", 2);

	printf("1..%d\n# %d passed, %d failed (plugin xstats)\n", checks,
	       checks - failures, failures);
	return failures != 0;
}

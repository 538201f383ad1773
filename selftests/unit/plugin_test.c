// SPDX-License-Identifier: GPL-2.0
/*
 * plugin_test.c - the tc plugin's xstats printing against older and newer
 * kernel modules, and its option parsing, without tc.
 *
 * tc/q_carousel.c is compiled in here, with the tc functions it declares
 * provided by this file: they record every JSON key and value printed.
 * Then print_xstats() gets the qdisc's and a class's TCA_STATS_APP payload
 * at today's length, at the length of the first release (an older module:
 * the fields it lacks must print as 0), and longer (a newer module: the
 * tail must be ignored, and ASan checks nothing past our struct is read).
 *
 * The parsers get argv as tc would hand it over, with tc's helpers
 * (get_u32, get_rate64, get_percent_rate64, get_size) modelled below from
 * how tc behaves: their quirks (strtoul's "-1", strtod's leading space and
 * "+", a rate below 1 byte/s truncated to 0) are what the plugin must
 * guard against.  The attributes it adds are read back from the message.
 */
#include <errno.h>
#include <limits.h>
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
/* Netlink building: the real thing, in a few lines. */
int addattr_l(struct nlmsghdr *n, int maxlen, int type, const void *data,
	      int alen)
{
	struct rtattr *rta = (struct rtattr *)((char *)n + NLMSG_ALIGN(n->nlmsg_len));

	if ((int)(NLMSG_ALIGN(n->nlmsg_len) + RTA_ALIGN(RTA_LENGTH(alen))) > maxlen)
		abort();
	rta->rta_type = type;
	rta->rta_len = RTA_LENGTH(alen);
	if (alen)
		memcpy(RTA_DATA(rta), data, alen);
	n->nlmsg_len = NLMSG_ALIGN(n->nlmsg_len) + RTA_ALIGN(rta->rta_len);
	return 0;
}
struct rtattr *addattr_nest(struct nlmsghdr *n, int maxlen, int type)
{
	struct rtattr *nest = (struct rtattr *)((char *)n + NLMSG_ALIGN(n->nlmsg_len));

	addattr_l(n, maxlen, type, NULL, 0);
	return nest;
}
int addattr_nest_end(struct nlmsghdr *n, struct rtattr *nest)
{
	nest->rta_len = (char *)n + NLMSG_ALIGN(n->nlmsg_len) - (char *)nest;
	return n->nlmsg_len;
}
/* tc's parse_rtattr_flags(): the first attribute of each type counts. */
int parse_rtattr_flags(struct rtattr *tb[], int max, struct rtattr *rta,
		       int len, unsigned short flags)
{
	memset(tb, 0, sizeof(*tb) * (max + 1));
	for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		unsigned short type = rta->rta_type & ~flags;

		if (type <= max && !tb[type])
			tb[type] = rta;
	}
	return 0;
}

/* tc's get_u32(): strtoul(), whole string, at most 32 bits. */
int get_u32(__u32 *v, const char *a, int b)
{
	unsigned long r;
	char *end;

	errno = 0;
	r = strtoul(a, &end, b);
	if (end == a || *end || (r == ULONG_MAX && errno == ERANGE) ||
	    r > 0xffffffffUL)
		return -1;
	*v = r;
	return 0;
}

/* tc's get_rate64(): bits/s (bare, or a unit), stored as bytes/s. */
int get_rate64(__u64 *r, const char *s)
{
	static const struct { const char *u; double bits; } units[] = {
		{ "bit", 1 }, { "kbit", 1e3 }, { "mbit", 1e6 }, { "gbit", 1e9 },
	};
	double bps;
	char *p;
	size_t i;

	bps = strtod(s, &p);
	if (p == s)
		return -1;
	if (*p) {
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (!strcasecmp(p, units[i].u))
				break;
		if (i == sizeof(units) / sizeof(units[0]))
			return -1;
		bps *= units[i].bits;
	}
	bps /= 8;
	/* The double goes into the u64 unchecked; out of range is 0 here. */
	*r = (isfinite(bps) && bps >= 0 && bps < 18446744073709551616.0) ?
		(__u64)bps : 0;
	return 0;
}

/* tc's get_percent_rate64(): a share of the link, here 1 Gbit/s. */
int get_percent_rate64(__u64 *r, const char *s, const char *d)
{
	double pct;
	char *p;

	pct = strtod(s, &p);
	if (p == s || strcmp(p, "%") || pct < 0 || pct > 100)
		return -1;
	*r = (__u64)(1e9 / 8 * pct / 100);
	return 0;
}

/* tc's get_size(): bytes, or with b/kb/mb (1024s). */
int get_size(unsigned int *sz, const char *a)
{
	double v;
	char *p;

	v = strtod(a, &p);
	if (p == a)
		return -1;
	if (!strcasecmp(p, "kb"))
		v *= 1024;
	else if (!strcasecmp(p, "mb"))
		v *= 1024 * 1024;
	else if (*p && strcasecmp(p, "b"))
		return -1;
	*sz = (unsigned int)v;	/* truncated, as tc's is */
	return 0;
}

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

/* ---- today's nest ---- */

static unsigned char nest[1024];
static size_t nest_len;

static void nest_put(unsigned short type, const void *v, size_t len)
{
	struct rtattr *rta = (struct rtattr *)(nest + nest_len);

	rta->rta_type = type;
	rta->rta_len = RTA_LENGTH(len);
	memcpy(RTA_DATA(rta), v, len);
	nest_len += RTA_ALIGN(rta->rta_len);
}

static void nest_start(__u32 kind)
{
	memset(nest, 0, sizeof(nest));
	nest_len = 0;
	nest_put(TCA_CAROUSEL_XSTATS_KIND, &kind, sizeof(kind));
}

static void nest_u64(unsigned short type, __u64 v)
{
	nest_put(type, &v, sizeof(v));
}

static void nest_tests(void)
{
	struct tc_carousel_class_xstats c;

	/* A qdisc's: every counter by its attribute, one we do not know. */
	nest_start(TC_CAROUSEL_XSTATS_QDISC);
	nest_u64(TCA_CAROUSEL_XSTATS_WHEEL_PACKETS, 7);
	nest_u64(TCA_CAROUSEL_XSTATS_WHEEL_LEVELS, 3);
	nest_u64(TCA_CAROUSEL_XSTATS_MAX + 5, 99);
	nest_u64(TCA_CAROUSEL_XSTATS_CATCHUP_HOLDS, 23);
	nest_u64(TCA_CAROUSEL_XSTATS_ALLOC_DROPS, 17);
	feed(nest, nest_len);
	expect("nest, qdisc", "wheel_packets", 7);
	expect("nest, qdisc", "wheel_levels", 3);
	expect("nest, qdisc", "catchup_holds", 23);
	expect("nest, qdisc", "alloc_drops", 17);
	expect("nest, qdisc: a counter not sent", "ce_marks", 0);

	/* A class's, short enough to pass for an old qdisc's if by length. */
	nest_start(TC_CAROUSEL_XSTATS_CLASS);
	nest_u64(TCA_CAROUSEL_XSTATS_LAG_NS, 1000);
	nest_u64(TCA_CAROUSEL_XSTATS_FLOWS, 2);
	feed(nest, nest_len);
	expect("nest, class", "lag_ns", 1000);
	expect("nest, class", "flows", 2);
	expect("nest, class: a counter not sent", "effective_rate", 0);

	/* And long enough: a class's nest is still a class's. */
	for (int i = 0; i < 12; i++)
		nest_u64(TCA_CAROUSEL_XSTATS_MAX + 1 + i, i);
	feed(nest, nest_len);
	expect("nest, long class", "lag_ns", 1000);

	/*
	 * An old module's class whose lag opens like a kind attribute
	 * (length 8, type 2) but has no kind in its upper half.
	 */
	c.lag_ns = 0x100020008ULL;
	c.effective_rate = 125000;
	c.flows = 4;
	feed(&c, sizeof(c));
	expect("old class that looks like a nest", "lag_ns", 0x100020008ULL);
	expect("old class that looks like a nest", "flows", 4);
}

/* ---- parsing ---- */

static struct {
	struct nlmsghdr n;
	char buf[1024];
} msg;

/*
 * parse_words: run the qdisc (class = false) or class parser on the words
 * of LINE, as tc hands them over.  Returns its result.
 */
static int parse_words(bool class, const char *line)
{
	char copy[256], *argv[32], *save = NULL, *w;
	int argc = 0, rc;

	snprintf(copy, sizeof(copy), "%s", line);
	for (w = strtok_r(copy, "|", &save); w && argc < 32;
	     w = strtok_r(NULL, "|", &save))
		argv[argc++] = w;
	memset(&msg, 0, sizeof(msg));
	msg.n.nlmsg_len = NLMSG_LENGTH(0);
	rc = (class ? carousel_qdisc_util.parse_copt : carousel_qdisc_util.parse_qopt)
		(&carousel_qdisc_util, argc, argv, &msg.n, "eth0");
	return rc;
}

/* attr: the value of attribute TYPE in the TCA_OPTIONS nest, or -1. */
static long long attr(int type)
{
	struct rtattr *nest = (struct rtattr *)NLMSG_DATA(&msg.n), *a;
	int len = RTA_PAYLOAD(nest);
	long long v = -1;

	for (a = RTA_DATA(nest); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if ((a->rta_type & NLA_TYPE_MASK) != type)
			continue;
		if (RTA_PAYLOAD(a) == 1)
			v = *(__u8 *)RTA_DATA(a);
		else if (RTA_PAYLOAD(a) == 4)
			v = *(__u32 *)RTA_DATA(a);
		else
			memcpy(&v, RTA_DATA(a), sizeof(v));
	}
	return v;
}

static void verdict(bool ok, const char *fmt, const char *line, long long got,
		    long long want)
{
	checks++;
	if (!ok)
		failures++;
	printf("%sok %d - ", ok ? "" : "not ", checks);
	printf(fmt, line, got, want);
	putchar('\n');
}

/* accepts: LINE parses, and sets attribute TYPE to WANT. */
static void accepts(bool class, const char *line, int type, long long want)
{
	int rc = parse_words(class, line);
	long long got = rc ? -2 : attr(type);

	verdict(!rc && got == want, "parse \"%s\": %lld, want %lld", line, got, want);
}

/* refuses: LINE does not parse. */
static void refuses(bool class, const char *line)
{
	int rc = parse_words(class, line);

	verdict(rc != 0, "refuse \"%s\" (parser returned %lld, want %lld)", line, rc, -1);
}

static void parse_tests(void)
{
	/* Times round up, never truncate; a bare number is in the unit. */
	accepts(false, "horizon|0.5", TCA_CAROUSEL_HORIZON, 1);
	accepts(false, "horizon|1.5", TCA_CAROUSEL_HORIZON, 2);
	accepts(false, "horizon|10", TCA_CAROUSEL_HORIZON, 10);
	accepts(false, "horizon|1.1ms", TCA_CAROUSEL_HORIZON, 1100);
	accepts(false, "horizon|0.0001us", TCA_CAROUSEL_HORIZON, 1);
	accepts(false, "horizon|1500ns", TCA_CAROUSEL_HORIZON, 2);
	accepts(false, "horizon|2s", TCA_CAROUSEL_HORIZON, 2000000);
	accepts(false, "granularity|1.5", TCA_CAROUSEL_GRANULARITY, 2);
	accepts(false, "granularity|1.1ms", TCA_CAROUSEL_GRANULARITY, 1100000);
	accepts(false, "granularity|0.1ns", TCA_CAROUSEL_GRANULARITY, 1);
	accepts(false, "granularity|10usec", TCA_CAROUSEL_GRANULARITY, 10000);
	accepts(false, "ce_threshold|1e3", TCA_CAROUSEL_CE_THRESHOLD, 1000);
	accepts(false, "timer_slack|0", TCA_CAROUSEL_TIMER_SLACK, 0);
	accepts(false, "flow_budget_time|4.0000001ms", TCA_CAROUSEL_FLOW_BUDGET_TIME, 4000001);
	accepts(false, "granularity|0.0000000001", TCA_CAROUSEL_GRANULARITY, 1);
	accepts(false, "ce_threshold|1.0000000004s", TCA_CAROUSEL_CE_THRESHOLD, 1000000001);
	refuses(false, "timer_slack|4294967295.4");
	refuses(false, "granularity|1e400");
	refuses(false, "horizon|5xs");
	refuses(false, "horizon|5000s");	/* past 32 bits of us */
	refuses(false, "timer_slack|inf");
	refuses(false, "timer_slack|nan");
	/* No sign, no space, anywhere a number starts. */
	refuses(false, "timer_slack|-5");
	refuses(false, "timer_slack| 5");
	refuses(false, "timer_slack|+5");
	refuses(false, "horizon|-0.5");
	refuses(false, "limit|-1");
	refuses(false, "limit|+5");
	refuses(false, "limit| 7");
	refuses(false, "flow_limit|-0");
	refuses(false, "flow_budget|-4294967295");
	refuses(false, "default|-1");
	refuses(false, "rate|-10mbit");
	refuses(false, "rate| 10mbit");
	refuses(false, "rate|+10mbit");
	accepts(false, "limit|100", TCA_CAROUSEL_LIMIT, 100);
	accepts(false, "default|a", TCA_CAROUSEL_DEFAULT, 10);
	accepts(false, "default|10", TCA_CAROUSEL_DEFAULT, 16);
	accepts(false, "rate|10mbit", TCA_CAROUSEL_RATE, 1250000);
	accepts(false, "rate|0", TCA_CAROUSEL_RATE, 0);
	/* A share that rounds to nothing is not "no ceiling". */
	accepts(false, "rate|50%", TCA_CAROUSEL_RATE, 62500000);
	refuses(false, "rate|0%");
	refuses(false, "rate|0.0000001%");	/* 0.125 byte/s of 1 Gbit */
	refuses(false, "rate|0.000001bit");
	refuses(false, "rate|1e-400bit");
	/* A repeat, or a conflict, is refused as tc's duparg() does. */
	refuses(false, "horizon_drop|horizon_cap");
	refuses(false, "horizon_cap|horizon_drop");
	refuses(false, "horizon_cap|horizon_cap");
	refuses(false, "rate|1mbit|rate|2mbit");
	refuses(false, "limit|10|limit|10");
	refuses(false, "timer_slack|1|horizon|1|timer_slack|2");
	refuses(false, "flow_budget_time|1ms|flow_budget_time|2ms");
	accepts(false, "horizon_drop", TCA_CAROUSEL_HORIZON_DROP, 1);
	accepts(false, "horizon_cap|limit|5", TCA_CAROUSEL_HORIZON_DROP, 0);
	/* Classes. */
	accepts(true, "rate|1mbit|burst|1514", TCA_CAROUSEL_CLASS_BURST, 1514);
	accepts(true, "rate|10%", TCA_CAROUSEL_CLASS_RATE, 12500000);
	refuses(true, "rate|1mbit|burst|-5");
	refuses(true, "rate|1mbit|burst| 5");
	refuses(true, "rate|1mbit|rate|2mbit");
	refuses(true, "rate|1mbit|burst|1514|burst|1514");
	refuses(true, "rate|0.0000001%");
}

int main(void)
{
	struct tc_carousel_xstats q;
	struct tc_carousel_class_xstats c;
	unsigned char big[sizeof(q) + 64];

	/* The parsers' messages go to stderr: keep each TAP line whole. */
	setvbuf(stdout, NULL, _IOLBF, 0);
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

	nest_tests();
	parse_tests();

	printf("1..%d\n# %d passed, %d failed (plugin xstats and parsing)\n", checks,
	       checks - failures, failures);
	return failures != 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * q_carousel.c - tc plugin for the carousel (timing-wheel shaper) qdisc.
 *
 *   tc qdisc add dev DEV root handle 1: carousel [ rate RATE ] ...
 *   tc class add dev DEV parent 1: classid 1:MINOR carousel rate RATE ...
 *
 * Built out of iproute2's tree, so it includes no iproute2 header: what it
 * uses from tc is declared below, in this file's own words, and resolved
 * against the tc binary when tc dlopen()s $TC_LIB_DIR/q_carousel.so and
 * looks up "carousel_qdisc_util".
 *
 * Checked against iproute2 v6.1.0 (Debian 12, /usr/sbin/tc) and v6.15.0
 * (bookworm-backports): the layout of struct qdisc_util, the signatures
 * and behaviour of every function declared below, the numeric values of
 * the output type and color enums, and that both tc binaries export each
 * of those functions (nm -D).  Deliberately not used, because they differ
 * between the two versions or are static inlines there: matches() (bool
 * in 6.1, int in 6.15), NEXT_ARG()/incomplete_command(), print_uint() and
 * friends, rta_getattr_*(), parse_rtattr_nested().
 */

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <linux/types.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "include/uapi/carousel.h"

/* ---- What this plugin uses from tc -------------------------------------- */

/*
 * tc's table of a qdisc kind.  The six callbacks and their order are the
 * same in 6.1 and 6.15; 6.15 only added "const" to the first argument of
 * each, which changes neither the layout nor the calling convention.  tc
 * writes ->next when it registers the plugin, so the instance below must
 * stay writable (not const).
 */
struct qdisc_util {
	struct qdisc_util *next;
	const char *id;
	int (*parse_qopt)(const struct qdisc_util *qu, int argc, char **argv,
			  struct nlmsghdr *n, const char *dev);
	int (*print_qopt)(const struct qdisc_util *qu, FILE *f,
			  struct rtattr *opt);
	int (*print_xstats)(const struct qdisc_util *qu, FILE *f,
			    struct rtattr *xstats);
	int (*parse_copt)(const struct qdisc_util *qu, int argc, char **argv,
			  struct nlmsghdr *n, const char *dev);
	int (*print_copt)(const struct qdisc_util *qu, FILE *f,
			  struct rtattr *opt);
	int (*has_block)(const struct qdisc_util *qu, struct rtattr *opt,
			 __u32 block_idx, bool *p_has);
};

/* Where a print goes: tc's "enum output_type" (same values in both). */
enum tc_out {
	TC_OUT_FP	= 1,	/* text only */
	TC_OUT_JSON	= 2,	/* JSON only */
	TC_OUT_ANY	= 4,	/* whichever tc is printing */
};

/* tc's "enum color_attr": COLOR_NONE is its 7th value in both. */
enum tc_color {
	TC_COLOR_NONE	= 6,
};

/* Netlink message building and attribute parsing (lib/libnetlink.c). */
int addattr_l(struct nlmsghdr *n, int maxlen, int type, const void *data,
	      int alen);
struct rtattr *addattr_nest(struct nlmsghdr *n, int maxlen, int type);
int addattr_nest_end(struct nlmsghdr *n, struct rtattr *nest);
int parse_rtattr_flags(struct rtattr *tb[], int max, struct rtattr *rta,
		       int len, unsigned short flags);

/* Argument parsing (lib/utils.c, lib/utils_math.c, tc/tc_util.c). */
int get_u32(__u32 *val, const char *arg, int base);
int get_rate64(__u64 *rate, const char *str);		/* -> bytes/s */
int get_percent_rate64(__u64 *rate, const char *str, const char *dev);
int get_size(unsigned int *size, const char *str);	/* -> bytes */

/* Output (lib/json_print.c, lib/json_print_math.c, lib/utils.c). */
bool is_json_context(void);
void print_nl(void);
int print_color_uint(enum tc_out t, enum tc_color color, const char *key,
		     const char *fmt, unsigned int value);
int print_color_lluint(enum tc_out t, enum tc_color color, const char *key,
		       const char *fmt, unsigned long long value);
int print_color_bool(enum tc_out t, enum tc_color color, const char *key,
		     const char *fmt, bool value);
int print_color_string(enum tc_out t, enum tc_color color, const char *key,
		       const char *fmt, const char *value);
/* JSON: the integer; text: sprint_size()'s "1514b", "2Kb"... in fmt's %s. */
int print_color_size(enum tc_out t, enum tc_color color, const char *key,
		     const char *fmt, __u32 size);
/* JSON: bytes/s; text: "10Mbit" (or "10Mibit" under tc -iec) in fmt's %s. */
void tc_print_rate(enum tc_out t, const char *key, const char *fmt,
		   unsigned long long rate);
/* "1.2ms", "20us", "500ns"...; buf must hold tc's SPRINT_BSIZE (64). */
char *sprint_time64(__s64 time, char *buf);

/* ---- Local helpers ------------------------------------------------------ */

#define CAROUSEL_NLMAX		1024	/* as tc's own qdiscs pass */
#define CAROUSEL_TBUF		64	/* tc's SPRINT_BSIZE */
#define CAROUSEL_UNUSED		__attribute__((unused))
#define NSEC_PER_USEC		1000LL

/*
 * tc hands a class's TCA_STATS_APP to the same print_xstats as the
 * qdisc's.  Today's modules send a nest whose first attribute says whose
 * it is.  Modules before it sent a bare struct, told apart by length only:
 * the qdisc's was 128 bytes from the start and only grew, the class's was
 * always shorter.
 */
#define CAROUSEL_QDISC_XSTATS_MIN	128

_Static_assert(sizeof(struct tc_carousel_xstats) >= CAROUSEL_QDISC_XSTATS_MIN,
	       "tc_carousel_xstats shrank: the ABI is append-only");
_Static_assert(sizeof(struct tc_carousel_class_xstats) <
	       CAROUSEL_QDISC_XSTATS_MIN,
	       "class xstats too long for print_xstats to tell apart");

static int carousel_illegal(const char *what)
{
	fprintf(stderr, "Illegal \"%s\"\n", what);
	return -1;
}

/*
 * A number as the user wrote it: it starts with a digit or a point.  A
 * sign, a space or anything else in front is refused, because the parsers
 * below it would accept some of them (strtoul() wraps "-1"; strtod() skips
 * spaces and takes "+5").
 */
static bool carousel_plain(const char *arg)
{
	return (*arg >= '0' && *arg <= '9') || *arg == '.';
}

/* RATE: a bit rate with tc's suffixes, or a percentage of the link speed. */
static int carousel_get_rate(__u64 *rate, const char *arg, const char *dev)
{
	/* get_rate64() would wrap a negative rate into a huge one. */
	if (!carousel_plain(arg))
		return -1;
	/* 1e-400 underflows to a 0 that was not written as one. */
	errno = 0;
	strtod(arg, NULL);
	if (errno == ERANGE)
		return -1;
	/* A share that rounds to 0 would mean "no ceiling": refuse it. */
	if (strchr(arg, '%'))
		return !dev || get_percent_rate64(rate, arg, dev) || !*rate ? -1 : 0;
	if (get_rate64(rate, arg))
		return -1;
	/*
	 * get_rate64() stores a double into the u64 unchecked: "inf", "nan",
	 * a rate past 2^64 bytes/s or one below 1 byte/s comes out as 0 on
	 * x86-64, which for the qdisc means "no ceiling".  Only a zero that
	 * was written as one may be 0.
	 */
	if (*rate == 0 && strtod(arg, NULL) != 0.0)
		return -1;
	if (!isfinite(strtod(arg, NULL)))
		return -1;
	return 0;
}

/* tc's time suffixes (get_time64() in tc/tc_util.c), in ns. */
static const struct {
	const char *name;
	double ns;
} carousel_time_units[] = {
	{ "s", 1e9 }, { "sec", 1e9 }, { "secs", 1e9 },
	{ "ms", 1e6 }, { "msec", 1e6 }, { "msecs", 1e6 },
	{ "us", 1e3 }, { "usec", 1e3 }, { "usecs", 1e3 },
	{ "ns", 1 }, { "nsec", 1 }, { "nsecs", 1 },
};

/*
 * TIME into a u32 of @unit_ns.  Without a suffix the number is in that
 * unit already (tc's fq does the same: timer_slack in ns, horizon in us).
 * Anything finer than the unit is rounded up, never down, so "horizon 0.5"
 * is 1 us and "granularity 1.5" is 2 ns: a non-zero time never becomes 0.
 * A product that is a whole number but for the last bits of a double
 * ("1.1ms") is that whole number.  The kernel checks the range, but cannot
 * see a negative time or one truncated to 32 bits, so those are refused
 * here.
 */
static int carousel_get_time(__u32 *val, const char *arg, __s64 unit_ns)
{
	double v, ns, whole;
	char *end;
	size_t i;

	if (!carousel_plain(arg))
		return -1;
	errno = 0;
	v = strtod(arg, &end);
	if (end == arg || errno == ERANGE || !isfinite(v))
		return -1;
	if (!*end) {
		ns = v * (double)unit_ns;
	} else {
		for (i = 0; i < sizeof(carousel_time_units) /
			    sizeof(carousel_time_units[0]); i++)
			if (!strcasecmp(end, carousel_time_units[i].name))
				break;
		if (i == sizeof(carousel_time_units) / sizeof(carousel_time_units[0]))
			return -1;
		ns = v * carousel_time_units[i].ns;
	}
	/* A few ulps off a whole number is that number; more is rounded up. */
	whole = nearbyint(ns);
	ns = fabs(ns - whole) <= 4 * DBL_EPSILON * ns ? whole : ceil(ns);
	ns = ceil(ns / (double)unit_ns);
	if (ns < 0 || ns > (double)UINT32_MAX)
		return -1;
	*val = (__u32)ns;
	return 0;
}

/* A count (limit, flow_limit, flow_budget): plain digits, 32 bits. */
static int carousel_get_u32(__u32 *val, const char *arg, int base)
{
	if (base == 16 ? !isxdigit((unsigned char)*arg) :
			 !carousel_plain(arg) || *arg == '.')
		return -1;
	return get_u32(val, arg, base);
}

/* "duplicate" and "conflicting" options, as tc's duparg() words them. */
static int carousel_dup(const char *opt, const char *earlier)
{
	if (strcmp(opt, earlier))
		fprintf(stderr, "carousel: \"%s\" conflicts with \"%s\" given before\n",
			opt, earlier);
	else
		fprintf(stderr, "carousel: duplicate \"%s\": it is already given\n",
			opt);
	return -1;
}

static __u32 carousel_attr_u32(const struct rtattr *rta)
{
	__u32 v;

	memcpy(&v, RTA_DATA(rta), sizeof(v));
	return v;
}

static __u64 carousel_attr_u64(const struct rtattr *rta)
{
	__u64 v;

	memcpy(&v, RTA_DATA(rta), sizeof(v));
	return v;
}

static bool carousel_has(struct rtattr *tb[], int type, size_t len)
{
	return tb[type] && RTA_PAYLOAD(tb[type]) >= len;
}

/* One field in both forms: JSON the integer in ns, text e.g. "1.2ms". */
static void carousel_print_ns(const char *key, const char *fmt, __u64 ns)
{
	char buf[CAROUSEL_TBUF];

	print_color_lluint(TC_OUT_JSON, TC_COLOR_NONE, key, NULL, ns);
	if (!is_json_context()) {
		if (ns > (__u64)INT64_MAX)
			ns = INT64_MAX;
		print_color_string(TC_OUT_FP, TC_COLOR_NONE, NULL, fmt,
				   sprint_time64((__s64)ns, buf));
	}
}

static void carousel_print_u64(const char *key, const char *fmt, __u64 v)
{
	print_color_lluint(TC_OUT_ANY, TC_COLOR_NONE, key, fmt, v);
}

static void carousel_print_text(const char *text)
{
	print_color_string(TC_OUT_FP, TC_COLOR_NONE, NULL, "%s", text);
}

/* ---- Options ------------------------------------------------------------ */

/*
 * Each option word of a qdisc or a class is a row of its object's table:
 * what the user types, the attribute it sets, how its value is read and
 * how many bytes the attribute carries.  The parse loop, the duplicate
 * check, the attributes sent and the usage all come from these rows.
 *
 * A word is looked up exactly: tc's matches() would take a prefix, and
 * the plugin has never accepted one.  Adjacent rows that share an
 * attribute are alternatives (horizon_drop, horizon_cap): only one of them
 * may be given, and the usage shows them as "[ a | b ]".  The attributes
 * go out in the order of the rows, whatever the order of the words.
 */
struct carousel_opt {
	const char *name;
	const char *meta;	/* its value in the usage; NULL: a keyword */
	/* Reads arg (NULL for a keyword) into *val; non-zero if illegal. */
	int (*parse)(__u64 *val, const char *arg, const char *dev);
	unsigned short attr;
	unsigned char size;	/* bytes of the attribute: u8, u32 or u64 */
	unsigned char usage;	/* CAROUSEL_USAGE_* */
};

/* How the usage shows a row: the line ends after it; no brackets. */
#define CAROUSEL_USAGE_EOL	0x1
#define CAROUSEL_USAGE_NEEDED	0x2	/* the kernel wants it on add */

/* Rows of the longest table, for the parse loop's per-row state. */
#define CAROUSEL_OPTS_MAX	16

static int carousel_opt_rate(__u64 *val, const char *arg, const char *dev)
{
	return carousel_get_rate(val, arg, dev);
}

/* MINOR: hex, as in a classid. */
static int carousel_opt_minor(__u64 *val, const char *arg,
			      const char *dev CAROUSEL_UNUSED)
{
	__u32 v;

	if (carousel_get_u32(&v, arg, 16))
		return -1;
	*val = v;
	return 0;
}

/* PACKETS: a count. */
static int carousel_opt_count(__u64 *val, const char *arg,
			      const char *dev CAROUSEL_UNUSED)
{
	__u32 v;

	if (carousel_get_u32(&v, arg, 0))
		return -1;
	*val = v;
	return 0;
}

static int carousel_opt_time(__u64 *val, const char *arg, __s64 unit_ns)
{
	__u32 v;

	if (carousel_get_time(&v, arg, unit_ns))
		return -1;
	*val = v;
	return 0;
}

/* TIME sent in ns; a bare number is in ns. */
static int carousel_opt_ns(__u64 *val, const char *arg,
			   const char *dev CAROUSEL_UNUSED)
{
	return carousel_opt_time(val, arg, 1);
}

/* TIME sent in us; a bare number is in us. */
static int carousel_opt_us(__u64 *val, const char *arg,
			   const char *dev CAROUSEL_UNUSED)
{
	return carousel_opt_time(val, arg, NSEC_PER_USEC);
}

/* BYTES: get_size() would wrap a negative size. */
static int carousel_opt_bytes(__u64 *val, const char *arg,
			      const char *dev CAROUSEL_UNUSED)
{
	unsigned int v;

	if (!carousel_plain(arg) || get_size(&v, arg))
		return -1;
	*val = v;
	return 0;
}

/* Keywords: the word itself is the value. */
static int carousel_opt_on(__u64 *val, const char *arg CAROUSEL_UNUSED,
			   const char *dev CAROUSEL_UNUSED)
{
	*val = 1;
	return 0;
}

static int carousel_opt_off(__u64 *val, const char *arg CAROUSEL_UNUSED,
			    const char *dev CAROUSEL_UNUSED)
{
	*val = 0;
	return 0;
}

static const struct carousel_opt carousel_qdisc_opts[] = {
	{ "rate",		"RATE",		carousel_opt_rate,
	  TCA_CAROUSEL_RATE, sizeof(__u64), 0 },
	{ "default",		"MINOR",	carousel_opt_minor,
	  TCA_CAROUSEL_DEFAULT, sizeof(__u32), CAROUSEL_USAGE_EOL },
	{ "granularity",	"TIME",		carousel_opt_ns,
	  TCA_CAROUSEL_GRANULARITY, sizeof(__u32), 0 },
	{ "horizon",		"TIME",		carousel_opt_us,
	  TCA_CAROUSEL_HORIZON, sizeof(__u32), CAROUSEL_USAGE_EOL },
	{ "horizon_drop",	NULL,		carousel_opt_on,
	  TCA_CAROUSEL_HORIZON_DROP, sizeof(__u8), 0 },
	{ "horizon_cap",	NULL,		carousel_opt_off,
	  TCA_CAROUSEL_HORIZON_DROP, sizeof(__u8), CAROUSEL_USAGE_EOL },
	{ "limit",		"PACKETS",	carousel_opt_count,
	  TCA_CAROUSEL_LIMIT, sizeof(__u32), 0 },
	{ "flow_limit",		"PACKETS",	carousel_opt_count,
	  TCA_CAROUSEL_FLOW_LIMIT, sizeof(__u32), CAROUSEL_USAGE_EOL },
	{ "timer_slack",	"TIME",		carousel_opt_ns,
	  TCA_CAROUSEL_TIMER_SLACK, sizeof(__u32), 0 },
	{ "ce_threshold",	"TIME",		carousel_opt_ns,
	  TCA_CAROUSEL_CE_THRESHOLD, sizeof(__u32), CAROUSEL_USAGE_EOL },
	{ "flow_budget",	"PACKETS",	carousel_opt_count,
	  TCA_CAROUSEL_FLOW_BUDGET, sizeof(__u32), CAROUSEL_USAGE_EOL },
	{ "flow_budget_time",	"TIME",		carousel_opt_ns,
	  TCA_CAROUSEL_FLOW_BUDGET_TIME, sizeof(__u32), CAROUSEL_USAGE_EOL },
	{ "flow_limit_time",	"TIME",		carousel_opt_ns,
	  TCA_CAROUSEL_FLOW_LIMIT_TIME, sizeof(__u32), CAROUSEL_USAGE_EOL },
};

static const struct carousel_opt carousel_class_opts[] = {
	{ "rate",		"RATE",		carousel_opt_rate,
	  TCA_CAROUSEL_CLASS_RATE, sizeof(__u64), CAROUSEL_USAGE_NEEDED },
	{ "burst",		"BYTES",	carousel_opt_bytes,
	  TCA_CAROUSEL_CLASS_BURST, sizeof(__u32), CAROUSEL_USAGE_EOL },
};

#define CAROUSEL_ROWS(tab)	(sizeof(tab) / sizeof((tab)[0]))

_Static_assert(CAROUSEL_ROWS(carousel_qdisc_opts) <= CAROUSEL_OPTS_MAX &&
	       CAROUSEL_ROWS(carousel_class_opts) <= CAROUSEL_OPTS_MAX,
	       "CAROUSEL_OPTS_MAX is smaller than a table");

/*
 * The synopsis of one table: LEAD, then each row or group of alternatives
 * in brackets, a new line (indented as deep as LEAD) where a row says so.
 */
static void carousel_usage_opts(const char *lead,
				const struct carousel_opt *tab, size_t rows)
{
	size_t i;

	fputs(lead, stderr);
	for (i = 0; i < rows; i++) {
		const struct carousel_opt *o = &tab[i];
		bool first = i == 0 || tab[i - 1].attr != o->attr;
		bool last = i + 1 == rows || tab[i + 1].attr != o->attr;
		bool bare = o->usage & CAROUSEL_USAGE_NEEDED;

		if (first && !bare)
			fputs("[ ", stderr);
		fputs(o->name, stderr);
		if (o->meta)
			fprintf(stderr, " %s", o->meta);
		if (!last) {
			fputs(" | ", stderr);
			continue;
		}
		if (!bare)
			fputs(" ]", stderr);
		if (i + 1 == rows)
			fputs("\n", stderr);
		else if (o->usage & CAROUSEL_USAGE_EOL)
			fprintf(stderr, "\n%*s", (int)strlen(lead), "");
		else
			fputs(" ", stderr);
	}
}

static void carousel_usage(void)
{
	carousel_usage_opts("Usage: ... carousel ", carousel_qdisc_opts,
			    CAROUSEL_ROWS(carousel_qdisc_opts));
	carousel_usage_opts("       ... class ... carousel ",
			    carousel_class_opts,
			    CAROUSEL_ROWS(carousel_class_opts));
	fprintf(stderr,
		"\n"
		"  RATE   bits/s, or with a unit: 10mbit, 1gbit, 5MBps...,\n"
		"         or a share of the link speed: 20%%\n"
		"  MINOR  hex, as in a classid: \"default 10\" is HANDLE:10\n"
		"  TIME   with a unit: s, ms, us, ns; a bare number is in us\n"
		"         for horizon, in ns for the others\n"
		"  BYTES  bytes, or with a unit: 1514b, 64kb, 1mb\n"
		"On change, only the options given are changed.\n");
}

static int carousel_unknown(const char *arg)
{
	fprintf(stderr, "carousel: unknown parameter \"%s\"\n", arg);
	carousel_usage();
	return -1;
}

static int carousel_missing(const char *what)
{
	fprintf(stderr, "carousel: \"%s\" needs a value\n", what);
	carousel_usage();
	return -1;
}

/* A row's value as its attribute, in the row's size. */
static void carousel_put(struct nlmsghdr *n, const struct carousel_opt *o,
			 __u64 val)
{
	__u32 v32 = val;
	__u8 v8 = val;
	const void *data = &val;

	if (o->size == sizeof(v32))
		data = &v32;
	else if (o->size == sizeof(v8))
		data = &v8;
	addattr_l(n, CAROUSEL_NLMAX, o->attr, data, o->size);
}

/*
 * The words of a qdisc or a class into a TCA_OPTIONS nest, as TAB says.
 * Nothing is added to the message unless every word is good.
 */
static int carousel_parse_opts(const struct carousel_opt *tab, size_t rows,
			       int argc, char **argv, struct nlmsghdr *n,
			       const char *dev)
{
	const char *given[CAROUSEL_OPTS_MAX] = { NULL };	/* the words */
	__u64 val[CAROUSEL_OPTS_MAX];
	struct rtattr *tail;
	size_t i, j;

	for (; argc > 0; argc--, argv++) {
		const char *word = *argv, *arg = NULL;

		if (strcmp(word, "help") == 0) {
			carousel_usage();
			return -1;
		}
		for (i = 0; i < rows; i++)
			if (strcmp(word, tab[i].name) == 0)
				break;
		if (i == rows)
			return carousel_unknown(word);
		if (tab[i].meta) {
			if (argc < 2)
				return carousel_missing(word);
			argc--;
			argv++;
			arg = *argv;
		}
		/* This row, or an alternative to it, given before. */
		for (j = 0; j < rows; j++)
			if (given[j] && tab[j].attr == tab[i].attr)
				return carousel_dup(word, given[j]);
		if (tab[i].parse(&val[i], arg, dev))
			return carousel_illegal(word);
		given[i] = word;
	}

	tail = addattr_nest(n, CAROUSEL_NLMAX, TCA_OPTIONS | NLA_F_NESTED);
	for (i = 0; i < rows; i++)
		if (given[i])
			carousel_put(n, &tab[i], val[i]);
	addattr_nest_end(n, tail);
	return 0;
}

/* ---- Qdisc -------------------------------------------------------------- */

static int carousel_parse_qopt(const struct qdisc_util *qu CAROUSEL_UNUSED,
			       int argc, char **argv, struct nlmsghdr *n,
			       const char *dev)
{
	return carousel_parse_opts(carousel_qdisc_opts,
				   CAROUSEL_ROWS(carousel_qdisc_opts),
				   argc, argv, n, dev);
}

static int carousel_print_qopt(const struct qdisc_util *qu CAROUSEL_UNUSED,
			       FILE *f CAROUSEL_UNUSED, struct rtattr *opt)
{
	struct rtattr *tb[TCA_CAROUSEL_MAX + 1];

	if (!opt)
		return 0;
	parse_rtattr_flags(tb, TCA_CAROUSEL_MAX, RTA_DATA(opt),
			   RTA_PAYLOAD(opt), NLA_F_NESTED);

	if (carousel_has(tb, TCA_CAROUSEL_RATE, sizeof(__u64))) {
		__u64 rate = carousel_attr_u64(tb[TCA_CAROUSEL_RATE]);

		if (rate)
			tc_print_rate(TC_OUT_ANY, "rate", "rate %s ", rate);
	}
	if (carousel_has(tb, TCA_CAROUSEL_DEFAULT, sizeof(__u32)))
		print_color_uint(TC_OUT_ANY, TC_COLOR_NONE, "default",
				 "default %#x ",
				 carousel_attr_u32(tb[TCA_CAROUSEL_DEFAULT]));
	if (carousel_has(tb, TCA_CAROUSEL_GRANULARITY, sizeof(__u32)))
		carousel_print_ns("granularity", "granularity %s ",
				  carousel_attr_u32(tb[TCA_CAROUSEL_GRANULARITY]));
	if (carousel_has(tb, TCA_CAROUSEL_HORIZON, sizeof(__u32)))
		carousel_print_ns("horizon", "horizon %s ",
				  (__u64)carousel_attr_u32(tb[TCA_CAROUSEL_HORIZON]) *
				  NSEC_PER_USEC);
	if (carousel_has(tb, TCA_CAROUSEL_HORIZON_DROP, sizeof(__u8))) {
		bool drop = *(__u8 *)RTA_DATA(tb[TCA_CAROUSEL_HORIZON_DROP]);

		print_color_bool(TC_OUT_JSON, TC_COLOR_NONE, "horizon_drop",
				 NULL, drop);
		carousel_print_text(drop ? "horizon_drop " : "horizon_cap ");
	}
	if (carousel_has(tb, TCA_CAROUSEL_LIMIT, sizeof(__u32)))
		print_color_uint(TC_OUT_ANY, TC_COLOR_NONE, "limit",
				 "limit %up ",
				 carousel_attr_u32(tb[TCA_CAROUSEL_LIMIT]));
	if (carousel_has(tb, TCA_CAROUSEL_FLOW_LIMIT, sizeof(__u32)))
		print_color_uint(TC_OUT_ANY, TC_COLOR_NONE, "flow_limit",
				 "flow_limit %up ",
				 carousel_attr_u32(tb[TCA_CAROUSEL_FLOW_LIMIT]));
	if (carousel_has(tb, TCA_CAROUSEL_FLOW_BUDGET, sizeof(__u32)))
		print_color_uint(TC_OUT_ANY, TC_COLOR_NONE, "flow_budget",
				 "flow_budget %up ",
				 carousel_attr_u32(tb[TCA_CAROUSEL_FLOW_BUDGET]));
	if (carousel_has(tb, TCA_CAROUSEL_FLOW_BUDGET_TIME, sizeof(__u32)))
		carousel_print_ns("flow_budget_time", "flow_budget_time %s ",
				  carousel_attr_u32(tb[TCA_CAROUSEL_FLOW_BUDGET_TIME]));
	if (carousel_has(tb, TCA_CAROUSEL_FLOW_LIMIT_TIME, sizeof(__u32)))
		carousel_print_ns("flow_limit_time", "flow_limit_time %s ",
				  carousel_attr_u32(tb[TCA_CAROUSEL_FLOW_LIMIT_TIME]));
	if (carousel_has(tb, TCA_CAROUSEL_CE_THRESHOLD, sizeof(__u32))) {
		__u32 ce = carousel_attr_u32(tb[TCA_CAROUSEL_CE_THRESHOLD]);

		/* JSON always has the key (0 = off); text only when on. */
		if (ce || is_json_context())
			carousel_print_ns("ce_threshold", "ce_threshold %s ",
					  ce);
	}
	if (carousel_has(tb, TCA_CAROUSEL_TIMER_SLACK, sizeof(__u32)))
		carousel_print_ns("timer_slack", "timer_slack %s ",
				  carousel_attr_u32(tb[TCA_CAROUSEL_TIMER_SLACK]));
	return 0;
}

static void carousel_print_qdisc_xstats(const struct tc_carousel_xstats *st)
{
	char buf[CAROUSEL_TBUF];

	carousel_print_u64("wheel_packets", "  wheel_packets %llu",
			   st->wheel_packets);
	carousel_print_u64("waiting_packets", " waiting %llu",
			   st->waiting_packets);
	carousel_print_u64("classes", " classes %llu", st->classes);
	print_color_uint(TC_OUT_ANY, TC_COLOR_NONE, "wheel_levels",
			 " levels %u", st->wheel_levels);
	carousel_print_u64("wheel_bytes", " wheel_bytes %llu",
			   st->wheel_bytes);
	carousel_print_u64("flows", " flows %llu", st->flows);
	print_nl();

	carousel_print_text("  drops:");
	carousel_print_u64("horizon_drops", " horizon %llu", st->horizon_drops);
	carousel_print_u64("limit_drops", " limit %llu", st->limit_drops);
	carousel_print_u64("flow_limit_drops", " flow_limit %llu",
			   st->flow_limit_drops);
	carousel_print_u64("flow_time_drops", " flow_time %llu",
			   st->flow_time_drops);
	carousel_print_u64("filter_drops", " filter %llu", st->filter_drops);
	carousel_print_u64("alloc_drops", " alloc %llu", st->alloc_drops);
	carousel_print_u64("horizon_caps", "  horizon_caps %llu",
			   st->horizon_caps);
	carousel_print_u64("unclassified", " unclassified %llu",
			   st->unclassified);
	print_nl();

	carousel_print_text("  congestion:");
	carousel_print_u64("ce_marks", " ce_marks %llu", st->ce_marks);
	carousel_print_u64("cn_returns", " cn_returns %llu", st->cn_returns);
	print_nl();

	carousel_print_text("  timer:");
	carousel_print_u64("timer_arms", " arms %llu", st->timer_arms);
	carousel_print_u64("timer_fires", " fires %llu", st->timer_fires);
	/* JSON keeps the raw sum; the text shows the mean per fire. */
	print_color_lluint(TC_OUT_JSON, TC_COLOR_NONE, "timer_latency_ns",
			   NULL, st->timer_latency_ns);
	if (!is_json_context()) {
		__u64 avg = st->timer_fires ?
			    st->timer_latency_ns / st->timer_fires : 0;

		print_color_string(TC_OUT_FP, TC_COLOR_NONE, NULL,
				   " latency avg %s",
				   sprint_time64(avg > (__u64)INT64_MAX ?
						 INT64_MAX : (__s64)avg, buf));
	}
	carousel_print_ns("timer_latency_max_ns", " max %s",
			  st->timer_latency_max_ns);
	carousel_print_u64("catchup_holds", " catchup_holds %llu",
			   st->catchup_holds);
	carousel_print_ns("catchup_lost_ns", " catchup_lost %s",
			  st->catchup_lost_ns);
	/* JSON always has the key: ~0 (2^64 - 1) is an empty wheel. */
	if (st->next_departure_ns != ~0ULL) {
		carousel_print_ns("next_departure_ns", "  next_departure %s",
				  st->next_departure_ns);
	} else {
		print_color_lluint(TC_OUT_JSON, TC_COLOR_NONE,
				   "next_departure_ns", NULL, st->next_departure_ns);
		carousel_print_text("  next_departure none");
	}
	carousel_print_u64("cascades", "  cascades %llu", st->cascades);
}

static void
carousel_print_class_xstats(const struct tc_carousel_class_xstats *st)
{
	carousel_print_ns("lag_ns", "  lag %s", st->lag_ns);
	tc_print_rate(TC_OUT_ANY, "effective_rate", " effective_rate %s",
		      st->effective_rate);
	carousel_print_u64("flows", " flows %llu", st->flows);
	if (!st->delay_interval_ns)	/* a module without them */
		return;
	print_nl();
	carousel_print_ns("delay_mean_ns", "  delay mean %s", st->delay_mean_ns);
	carousel_print_ns("delay_max_ns", " max %s", st->delay_max_ns);
	carousel_print_u64("delay_packets", " packets %llu", st->delay_packets);
	carousel_print_ns("delay_interval_ns", " in the last %s",
			  st->delay_interval_ns);
}

/*
 * The kind of a nest (TC_CAROUSEL_XSTATS_QDISC or _CLASS), or 0 for a
 * bare struct from an older module: a nest opens with an 8-byte kind
 * attribute, which a bare struct cannot (include/uapi/carousel.h).
 */
static __u32 carousel_xstats_kind(const struct rtattr *xstats)
{
	const struct rtattr *first = RTA_DATA(xstats);
	__u32 kind;

	if (RTA_PAYLOAD(xstats) < RTA_LENGTH(sizeof(kind)) ||
	    first->rta_len != RTA_LENGTH(sizeof(kind)) ||
	    first->rta_type != TCA_CAROUSEL_XSTATS_KIND)
		return 0;
	kind = carousel_attr_u32(first);
	if (kind != TC_CAROUSEL_XSTATS_QDISC && kind != TC_CAROUSEL_XSTATS_CLASS)
		return 0;
	return kind;
}

/* A counter from the nest into the struct; one the module lacks stays 0. */
#define CAROUSEL_GET_XSTAT(attr, field)					\
	if (carousel_has(tb, TCA_CAROUSEL_XSTATS_##attr, sizeof(__u64)))	\
		st->field = carousel_attr_u64(tb[TCA_CAROUSEL_XSTATS_##attr]);

static void carousel_get_qdisc_xstats(struct rtattr *tb[],
				      struct tc_carousel_xstats *st)
{
	TC_CAROUSEL_QDISC_XSTATS(CAROUSEL_GET_XSTAT)
}

static void carousel_get_class_xstats(struct rtattr *tb[],
				      struct tc_carousel_class_xstats *st)
{
	TC_CAROUSEL_CLASS_XSTATS(CAROUSEL_GET_XSTAT)
}

static int carousel_print_xstats(const struct qdisc_util *qu CAROUSEL_UNUSED,
				 FILE *f CAROUSEL_UNUSED, struct rtattr *xstats)
{
	struct rtattr *tb[TCA_CAROUSEL_XSTATS_MAX + 1];
	struct tc_carousel_class_xstats cst;
	struct tc_carousel_xstats qst;
	size_t len;
	__u32 kind;

	if (!xstats)
		return 0;
	memset(&qst, 0, sizeof(qst));
	memset(&cst, 0, sizeof(cst));
	len = RTA_PAYLOAD(xstats);
	kind = carousel_xstats_kind(xstats);

	if (kind) {
		parse_rtattr_flags(tb, TCA_CAROUSEL_XSTATS_MAX,
				   RTA_DATA(xstats), len, 0);
		if (kind == TC_CAROUSEL_XSTATS_QDISC) {
			carousel_get_qdisc_xstats(tb, &qst);
			carousel_print_qdisc_xstats(&qst);
		} else {
			carousel_get_class_xstats(tb, &cst);
			carousel_print_class_xstats(&cst);
		}
	} else if (len >= CAROUSEL_QDISC_XSTATS_MIN) {
		/* an older module's struct: what both sides know */
		memcpy(&qst, RTA_DATA(xstats),
		       len < sizeof(qst) ? len : sizeof(qst));
		carousel_print_qdisc_xstats(&qst);
	} else {
		memcpy(&cst, RTA_DATA(xstats),
		       len < sizeof(cst) ? len : sizeof(cst));
		carousel_print_class_xstats(&cst);
	}
	return 0;
}

/* ---- Class -------------------------------------------------------------- */

static int carousel_parse_copt(const struct qdisc_util *qu CAROUSEL_UNUSED,
			       int argc, char **argv, struct nlmsghdr *n,
			       const char *dev)
{
	return carousel_parse_opts(carousel_class_opts,
				   CAROUSEL_ROWS(carousel_class_opts),
				   argc, argv, n, dev);
}

static int carousel_print_copt(const struct qdisc_util *qu CAROUSEL_UNUSED,
			       FILE *f CAROUSEL_UNUSED, struct rtattr *opt)
{
	struct rtattr *tb[TCA_CAROUSEL_CLASS_MAX + 1];

	if (!opt)
		return 0;
	parse_rtattr_flags(tb, TCA_CAROUSEL_CLASS_MAX, RTA_DATA(opt),
			   RTA_PAYLOAD(opt), NLA_F_NESTED);

	if (carousel_has(tb, TCA_CAROUSEL_CLASS_RATE, sizeof(__u64)))
		tc_print_rate(TC_OUT_ANY, "rate", "rate %s ",
			      carousel_attr_u64(tb[TCA_CAROUSEL_CLASS_RATE]));
	if (carousel_has(tb, TCA_CAROUSEL_CLASS_BURST, sizeof(__u32)))
		print_color_size(TC_OUT_ANY, TC_COLOR_NONE, "burst",
				 "burst %s ",
				 carousel_attr_u32(tb[TCA_CAROUSEL_CLASS_BURST]));
	return 0;
}

/* Looked up by name by tc; written to by tc (->next), so not const. */
struct qdisc_util carousel_qdisc_util = {
	.id		= "carousel",
	.parse_qopt	= carousel_parse_qopt,
	.print_qopt	= carousel_print_qopt,
	.print_xstats	= carousel_print_xstats,
	.parse_copt	= carousel_parse_copt,
	.print_copt	= carousel_print_copt,
};

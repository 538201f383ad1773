/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kshim.h - the few kernel definitions the timing wheel of carousel_wheel.h
 * needs, so that the unit tests, the fuzzer and the benchmark compile the
 * module's own wheel code in userspace (as the kernel's tools/include/ does
 * for its tools).  Include this, then "carousel_wheel.h".
 *
 * WARN_ON_ONCE() does not stay quiet here: every hit is counted in
 * kshim_warns (tests treat any increase as a failure) and the first few
 * are printed as KTAP diagnostics.
 */
#ifndef _CAROUSEL_KSHIM_H
#define _CAROUSEL_KSHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/cdefs.h>	/* __always_inline */

#define CAROUSEL_WHEEL_USER 1

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef unsigned long long u64;	/* as in the kernel: printf with %llu */
typedef int64_t s64;

/* The wheel links packets through ->next and reads the time via
 * carousel_skb_time(); the other fields belong to the tests.
 */
struct sk_buff {
	struct sk_buff	*next;
	u64		time;		/* departure time, ns */
	u32		id;		/* index in the test's packet pool */
	u32		flow;
	u32		moves;		/* times the wheel re-read the time */
	u32		pad;
};

/* Called by the wheel only when it cascades the packet down a level:
 * count it per packet so tests can bound the moves of every packet.
 */
static inline u64 carousel_skb_time(const struct sk_buff *skb)
{
	((struct sk_buff *)skb)->moves++;
	return skb->time;
}

/* A read to look at the time, not to move the packet: not counted. */
static inline u64 carousel_skb_peek_time(const struct sk_buff *skb)
{
	return skb->time;
}

static inline u64 div_u64(u64 dividend, u32 divisor)
{
	return dividend / divisor;
}

#define NSEC_PER_SEC	1000000000ULL
#define unlikely(x)	__builtin_expect(!!(x), 0)
#define BIT(nr)		(1UL << (nr))

static inline u64 div64_u64_rem(u64 dividend, u64 divisor, u64 *remainder)
{
	*remainder = dividend % divisor;
	return dividend / divisor;
}

/* 1-based index of the most significant set bit, 0 if none. */
static inline int fls64(u64 x)
{
	return x ? 64 - __builtin_clzll(x) : 0;
}

extern unsigned long kshim_warns;
extern unsigned long kshim_ffs_zero;

/* 0-based index of the least significant set bit; undefined for 0 in the
 * kernel, so a call with 0 is recorded as a failure here.
 */
static inline unsigned long __ffs64(u64 x)
{
	if (!x) {
		kshim_ffs_zero++;
		return 0;
	}
	return __builtin_ctzll(x);
}

/* Type-checked like the kernel's: comparing distinct types warns. */
#define max(a, b) ({					\
	__typeof__(a) _max_a = (a);			\
	__typeof__(b) _max_b = (b);			\
	(void)(&_max_a == &_max_b);			\
	_max_a > _max_b ? _max_a : _max_b; })
#define min(a, b) ({					\
	__typeof__(a) _min_a = (a);			\
	__typeof__(b) _min_b = (b);			\
	(void)(&_min_a == &_min_b);			\
	_min_a < _min_b ? _min_a : _min_b; })

static inline bool kshim_warn(bool cond, const char *expr, const char *file,
			      int line)
{
	if (cond) {
		if (kshim_warns++ < 5)
			printf("# WARNING: WARN_ON_ONCE(%s) at %s:%d\n",
			       expr, file, line);
	}
	return cond;
}

#define WARN_ON_ONCE(cond) kshim_warn(!!(cond), #cond, __FILE__, __LINE__)

#endif /* _CAROUSEL_KSHIM_H */

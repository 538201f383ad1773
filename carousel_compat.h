/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Compat: every difference between the kernels sch_carousel builds for is
 * handled here, from feature probes in Kbuild (never from version numbers).
 */
#ifndef _CAROUSEL_COMPAT_H
#define _CAROUSEL_COMPAT_H

#include <linux/skbuff.h>
#include <linux/module.h>
#include <net/pkt_sched.h>

#ifdef CAROUSEL_HAVE_NET_GSO_H
/* Since 6.6, skb_gso_segment() is declared here. */
#include <net/gso.h>
#endif
#ifdef CAROUSEL_HAVE_CONST_RANGE
#define CAROUSEL_RANGE_CONST	const
#else
/* Before 6.2, a policy points to a writable netlink_range_validation. */
#define CAROUSEL_RANGE_CONST
#endif
#ifndef CAROUSEL_HAVE_ALIAS_NET_SCH
/* Before 6.10, tc asks for the module "sch_<kind>" by name. */
#define MODULE_ALIAS_NET_SCH(id)	MODULE_ALIAS("sch_" id)
#endif

#ifdef CAROUSEL_HAVE_TSTAMP_TYPE
/*
 * Since 6.11, skb->tstamp_type names the clock of a delivery time, and a
 * monotonic or TAI one survives a veth into another namespace.  Returns
 * the clock, or -1 when the type says nothing (a realtime stamp, or none).
 */
static inline int carousel_tstamp_clock(const struct sk_buff *skb)
{
	switch (skb->tstamp_type) {
	case SKB_CLOCK_MONOTONIC:
		return CLOCK_MONOTONIC;
	case SKB_CLOCK_TAI:
		return CLOCK_TAI;
	}
	return -1;
}
#else
/* Before, only a monotonic delivery time was marked, by one bit. */
static inline int carousel_tstamp_clock(const struct sk_buff *skb)
{
	return skb->mono_delivery_time ? CLOCK_MONOTONIC : -1;
}
#endif

#endif /* _CAROUSEL_COMPAT_H */

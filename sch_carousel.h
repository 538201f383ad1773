/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What sch_carousel.c builds on, in three headers:
 *
 *   include/uapi/carousel.h   the user ABI (netlink attributes, statistics),
 *                             shared with the tc plugin
 *   carousel_compat.h         every difference between the kernels we build for
 *   carousel_wheel.h          the timing wheel and the skb->cb that holds a
 *                             packet's time, shared with the userspace tests
 */
#ifndef _SCH_CAROUSEL_H
#define _SCH_CAROUSEL_H

#include "include/uapi/carousel.h"
#include "carousel_compat.h"
#include "carousel_wheel.h"

#endif /* _SCH_CAROUSEL_H */

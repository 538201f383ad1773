// SPDX-License-Identifier: GPL-2.0
/*
 * carousel_warn: a harness self-check, never part of a normal run.
 *
 * Loading it with warn=1 fires one WARN(), which must end the VM (the harness
 * boots with panic_on_warn=1) and so fail the run.  With bugline=1 it only
 * prints a "BUG:"-looking line, which must be caught by run.sh's dmesg scan.
 */
#include <linux/module.h>
#include <linux/printk.h>
#include <linux/bug.h>

static bool warn;
module_param(warn, bool, 0444);
MODULE_PARM_DESC(warn, "fire a WARN() at load time");

static bool bugline;
module_param(bugline, bool, 0444);
MODULE_PARM_DESC(bugline, "print a BUG:-looking line (no WARN) at load time");

static int __init carousel_warn_init(void)
{
	if (bugline)
		pr_err("BUG: carousel_warn: deliberate fake bug line for the dmesg scan\n");
	WARN(warn, "carousel_warn: deliberate warning (harness self-check)\n");
	return 0;
}

static void __exit carousel_warn_exit(void)
{
}

module_init(carousel_warn_init);
module_exit(carousel_warn_exit);
MODULE_DESCRIPTION("sch_carousel test harness self-check: WARN on demand");
MODULE_LICENSE("GPL");

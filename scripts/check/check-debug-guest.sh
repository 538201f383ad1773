#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest half of `make check-debug` (scripts/check/check-debug.sh), run by
# scripts/lib/vm.sh on the debug kernel:
#
#   scripts/check/check-debug-guest.sh KO [run.sh args...]
#
# Runs selftests/run.sh KO, then two kmemleak scans a few seconds apart
# and saves, in $CAROUSEL_RESULTS:
#   <kver>.kmemleak-boot  kmemleak's reports from boot, before insmod
#                       (then cleared: they cannot involve our module)
#   <kver>.kmemleak     every kmemleak report at the end of the run
#   <kver>.dmesg-end    the whole kernel log after the scans
#   <kver>.debug-done   written last (missing: the VM died before the end)
# Exit: run.sh's.
set -u
KVER=$(uname -r)
RES=${CAROUSEL_RESULTS:?}
rm -f "$RES/$KVER".{kmemleak,kmemleak-boot,dmesg-end,debug-done}

# kmemleak lives in debugfs; vng does not always mount it.
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
if [ ! -e /sys/kernel/debug/kmemleak ]; then
	echo "check-debug-guest: /sys/kernel/debug/kmemleak missing: not the debug kernel?" >&2
	exit 1
fi
# Unreferenced objects from boot are not ours (the module is not loaded
# yet): keep them apart, then clear the list so that the final report is
# about the run.
echo scan >/sys/kernel/debug/kmemleak
cat /sys/kernel/debug/kmemleak >"$RES/$KVER.kmemleak-boot" 2>&1
echo clear >/sys/kernel/debug/kmemleak

bash selftests/run.sh "$@"
rc=$?

# Two scans a few seconds apart: kmemleak only reports an object once it has
# stayed unreferenced for a while (its minimum age is 5 s) and a second scan
# drops transient false positives (pointers held only in registers/caches).
echo scan >/sys/kernel/debug/kmemleak
sleep 6
echo scan >/sys/kernel/debug/kmemleak
cat /sys/kernel/debug/kmemleak >"$RES/$KVER.kmemleak" 2>&1
dmesg >"$RES/$KVER.dmesg-end" 2>&1
echo "$rc" >"$RES/$KVER.debug-done"
sync
exit "$rc"

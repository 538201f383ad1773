# SPDX-License-Identifier: GPL-2.0
"""The kernel log, read from /dev/kmsg without an exec, and what in it
fails a test: shared by selftests/tdc/run.py and selftests/tools/rawnl.py."""

import os
import re

# A line that fails a test whatever its level: the pattern selftests/run.sh
# greps dmesg with, from the one file both read.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "bad-kernel-lines.re"), encoding="utf-8") as _f:
    BAD_RE = re.compile(_f.read().strip())
# What a TCG guest on a busy host prints by itself, at warning level, at
# any moment: not the qdisc's doing.  Shown, not failed.
ENV_NOTICE = re.compile(r"hrtimer: interrupt took \d+ ns|clocksource|"
                        r"sched: RT throttling activated")
KLOG_WARN = 4		# KERN_WARNING: this level and worse count as warnings


def is_bad(level, text):
    """Whether one record (level, text) fails the test that logged it."""
    return bool(BAD_RE.search(text) or
                (level <= KLOG_WARN and not ENV_NOTICE.search(text)))


class Kmsg:
    """The kernel log since the last mark()."""

    def __init__(self):
        self.fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
        self.mark()

    def mark(self):
        os.lseek(self.fd, 0, os.SEEK_END)

    def new(self):
        """[(level, text)] logged since mark() or the last new()."""
        out = []
        while True:
            try:
                rec = os.read(self.fd, 8192).decode(errors="replace")
            except BlockingIOError:
                return out
            except BrokenPipeError:	# overwritten while we read: go on
                continue
            head, _, text = rec.partition(";")
            out.append((int(head.split(",")[0]) & 7, text.split("\n")[0]))

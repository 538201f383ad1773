#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""delaybursts.py: bursts into one class, read back its delay statistics.

  delaybursts.py --dst IP --port P --priority PRIO --rate BPS
                 --size S --bursts N1,N2 --dump CMD

A class's delay statistics cover intervals of 2^30 ns of CLOCK_MONOTONIC
(sch_carousel.c, CAROUSEL_DELAY_SHIFT), and `tc -s class show` gives the
last complete one.  In interval E (the next to start), burst 1: N1
datagrams of S bytes of payload back to back with SO_PRIORITY PRIO,
each starting with a sequence number (as tools/txtime.py recv reads).  In
E+1, CMD (a command, split as the shell would, printing `tc -j -s class
show`'s JSON) is run (dump 1); then burst 2 (N2 datagrams), and CMD
again (dump 2).  Once in E+2 (dump 3) and once in E+4 (dump 4).

For each burst the expected delay comes from the send times alone: the
class (idle, rate BPS, no burst) starts each packet when the one before
has had its wire time, (S + 42) * 8 / BPS s, or at its arrival if later:
  depart[0] = at[0], depart[i] = max(at[i], depart[i-1] + wire),
and its delay is depart[i] - at[i].  at[i] is read just before the
send(), which reaches the qdisc before it returns.

Prints one JSON object: wire_ns, bursts ([{n, mean_ns, max_ns}], the
model's), dumps (CMD's parsed output), read_ms (how long each run of CMD
took), and epochs (the interval each step
ran in, relative to E, each read's before and after it: 0, 1, 1, 1, 1, 1,
2, 2, 4, 4 when on schedule).
Python 3 stdlib only.
"""

import argparse
import json
import shlex
import socket
import struct
import subprocess
import time

SHIFT = 30
WIRE = 42  # UDP 8 + IPv4 20 + Ethernet 14
HDR = struct.Struct("!QQ")  # seq, txtime (0): what txtime.py recv reads


def epoch():
    return time.monotonic_ns() >> SHIFT


def sleep_until(ns):
    while True:
        left = ns - time.monotonic_ns()
        if left <= 0:
            return
        time.sleep(left / 1e9)


def burst(s, n, size, wire_ns, seq0):
    pad = b"\0" * (size - HDR.size)
    at = []
    for i in range(n):
        data = HDR.pack(seq0 + i, 0) + pad
        at.append(time.monotonic_ns())
        s.send(data)
    depart = []
    for i, t in enumerate(at):
        depart.append(t if i == 0 else max(t, depart[-1] + wire_ns))
    delays = [d - t for d, t in zip(depart, at)]
    return {"n": n, "mean_ns": sum(delays) // n, "max_ns": max(delays),
            "span_ns": at[-1] - at[0]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dst", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--priority", type=lambda v: int(v, 0), required=True)
    ap.add_argument("--rate", type=float, required=True)
    ap.add_argument("--size", type=int, default=1208)
    ap.add_argument("--bursts", default="50,10")
    ap.add_argument("--dump", required=True)
    a = ap.parse_args()
    n1, n2 = (int(v) for v in a.bursts.split(","))
    wire_ns = round((a.size + WIRE) * 8 * 1e9 / a.rate)

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, a.priority)
    s.setsockopt(socket.SOL_SOCKET, 32, 4 << 20)  # SO_SNDBUFFORCE
    s.connect((a.dst, a.port))

    cmd = shlex.split(a.dump)  # no shell: one process less per read

    def dump():
        t = time.monotonic_ns()
        steps.append(epoch())
        out = subprocess.run(cmd, check=True,
                             capture_output=True, text=True).stdout
        steps.append(epoch())
        read_ms.append(round((time.monotonic_ns() - t) / 1e6, 1))
        return json.loads(out)

    # Once before the schedule: the first run of CMD loads tc and its
    # plugin (over 9p in a test VM, hundreds of ms on a slow host).
    subprocess.run(cmd, check=True, capture_output=True)
    e = epoch() + 1
    start = e << SHIFT
    steps, bursts, dumps, read_ms = [], [], [], []
    ms = 1000000
    sleep_until(start + 20 * ms)
    steps.append(epoch())
    bursts.append(burst(s, n1, a.size, wire_ns, 0))
    # E+1 holds two reads and burst 2: early in it, and with no more
    # pause than the roll-over needs (burst 2's first packet, charged at
    # its enqueue, before send() returns), so that a slow host's tc runs
    # still fit in it.
    sleep_until(start + (1 << SHIFT) + 20 * ms)
    dumps.append(dump())
    steps.append(epoch())
    bursts.append(burst(s, n2, a.size, wire_ns, n1))
    time.sleep(0.02)
    dumps.append(dump())
    sleep_until(start + (2 << SHIFT) + 100 * ms)
    dumps.append(dump())
    sleep_until(start + (4 << SHIFT) + 100 * ms)
    dumps.append(dump())
    print(json.dumps({"wire_ns": wire_ns, "bursts": bursts, "dumps": dumps,
                      "epochs": [x - e for x in steps],
                      "read_ms": read_ms}))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""udpsend.py: a UDP sender for the carousel selftests.

Sends COUNT datagrams (or for SECONDS) of SIZE bytes to DST:PORT as fast
as the socket lets it, optionally paced at RATE bit/s by the sender itself,
with SO_PRIORITY (skb->priority, e.g. a classid 0x10010) and SO_SNDBUF
set.  A UDP sendmsg() reaches the qdisc before it returns, so `sent` is
exactly what the qdisc was offered.  Prints one JSON object:
  sent, blocked (sends that waited for send-buffer space), blocked_seconds
  (time spent waiting for it), errors (by errno name, e.g. ENOBUFS when
  the qdisc dropped), seconds.
Each payload starts with a 64-bit sequence number.
"""

import argparse
import errno
import json
import select
import socket
import struct
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dst", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--size", type=int, default=1400)
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=0.0)
    ap.add_argument("--rate", type=float, default=0.0,
                    help="sender-side pacing, bit/s of payload (0: none)")
    ap.add_argument("--priority", type=lambda v: int(v, 0), default=None)
    ap.add_argument("--sndbuf", type=int, default=0)
    a = ap.parse_args()
    if not a.count and not a.seconds:
        ap.error("give --count or --seconds")

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if a.priority is not None:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, a.priority)
    if a.sndbuf:
        # SO_SNDBUFFORCE ignores wmem_max; we run as root.
        s.setsockopt(socket.SOL_SOCKET, 32, a.sndbuf)
    s.connect((a.dst, a.port))
    s.setblocking(False)

    pad = b"\0" * max(0, a.size - 8)
    sent = blocked = 0
    blocked_s = 0.0
    errors = {}
    gap = a.size * 8 / a.rate if a.rate else 0.0
    t0 = time.monotonic()
    deadline = t0 + a.seconds if a.seconds else None
    seq = 0
    while True:
        if a.count and seq >= a.count:
            break
        now = time.monotonic()
        if deadline and now >= deadline:
            break
        if gap:
            due = t0 + seq * gap
            if due > now:
                time.sleep(due - now)
        try:
            s.send(struct.pack("!Q", seq) + pad)
            sent += 1
            seq += 1
        except BlockingIOError:
            blocked += 1
            tb = time.monotonic()
            select.select([], [s], [], 1.0)
            blocked_s += time.monotonic() - tb
        except OSError as e:
            # The datagram was handed to the qdisc and dropped there
            # (ENOBUFS) or refused: it counts as offered.
            name = errno.errorcode.get(e.errno, str(e.errno))
            errors[name] = errors.get(name, 0) + 1
            sent += 1
            seq += 1
    print(json.dumps({"sent": sent, "blocked": blocked,
                      "blocked_seconds": round(blocked_s, 3), "errors": errors,
                      "seconds": round(time.monotonic() - t0, 3)}))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Receive COUNT UDP datagrams on PORT (or until TIMEOUT s) and print one
JSON object: received, mean_gap_ns, stddev_gap_ns and gaps_ns, the gaps
between consecutive SO_TIMESTAMPNS receive timestamps (kernel, on
delivery), as selftests/tools/txtime.py recv measures them.  Stdlib only.

  recvgaps.py --port P --count N --timeout S
"""
import argparse
import json
import math
import socket
import struct
import time

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--timeout", type=float, required=True)
    a = ap.parse_args()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind(("0.0.0.0", a.port))
    end = time.monotonic() + a.timeout
    ts = []
    while len(ts) < a.count:
        left = end - time.monotonic()
        if left <= 0:
            break
        s.settimeout(left)
        try:
            _, anc, _, _ = s.recvmsg(2048, 64)
        except socket.timeout:
            break
        for lvl, typ, data in anc:
            if lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", data[:16])
                ts.append(sec * 1000000000 + nsec)
    gaps = [b - x for x, b in zip(ts, ts[1:])]
    mean = sum(gaps) / len(gaps) if gaps else None
    sd = math.sqrt(sum((g - mean) ** 2 for g in gaps) / len(gaps)) if gaps else None
    print(json.dumps({"received": len(ts), "expected": a.count,
                      "lost": a.count - len(ts),
                      "mean_gap_ns": round(mean) if gaps else None,
                      "stddev_gap_ns": round(sd) if gaps else None,
                      "gaps_ns": gaps}))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Background load for the accuracy benchmark: COUNT UDP sockets, socket i
with SO_PRIORITY BASE+i (a class of carousel/htb; a flow of fq), each
offered as fast as its send buffer allows, round robin, for SECONDS.

  multisend.py --dst IP --port P --count N --base 0x10002 --seconds S [--size B]

Prints one JSON object: sockets, sent, errors, seconds.  Stdlib only.
"""
import argparse
import json
import select
import socket
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dst", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--base", type=lambda v: int(v, 0), required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--size", type=int, default=1400)
    a = ap.parse_args()
    socks = []
    for i in range(a.count):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, a.base + i)
        s.setblocking(False)
        s.connect((a.dst, a.port))
        socks.append(s)
    payload = b"\0" * a.size
    sent = errors = 0
    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        _, w, _ = select.select([], socks, [], 0.05)
        for s in w:
            try:
                s.send(payload)
                sent += 1
            except OSError:
                errors += 1
    print(json.dumps({"sockets": a.count, "sent": sent, "errors": errors,
                      "seconds": a.seconds}))


if __name__ == "__main__":
    main()

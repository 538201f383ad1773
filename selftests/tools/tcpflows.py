#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""tcpflows.py: many bulk TCP flows from one process, measured per flow.

  tcpflows.py recv --port P --flows N --seconds T [--warmup W] [--ready F]
  tcpflows.py send --dst IP --port P --flows N --seconds T [--cc NAME]

send: opens N connections, then writes to every one of them as fast as
each socket takes it (non-blocking, poll) for T seconds, and closes them.

recv: accepts N connections and reads them all (poll).  Once all N have
delivered data, it waits W (2) seconds of warm-up and then counts each
flow's bytes over the next T - W - 1 seconds: a window in which all N flows
run at once, whatever the connection set-up took.  Prints one JSON object:
flows, window_s, bytes (total), bps (goodput over the window, bit/s),
min_bps, max_bps, jain (Jain's index over the per-flow goodputs),
per_flow_bps (list).  --ready F: touch F once listening.
Python 3 stdlib only.
"""
import argparse
import json
import os
import select
import socket
import time

BUF = 1 << 16


def recv(a):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", a.port))
    ls.listen(a.flows + 16)
    if a.ready:
        open(a.ready, "w").close()
    conns = []
    while len(conns) < a.flows:
        c, _ = ls.accept()
        c.setblocking(False)
        conns.append(c)
    ls.close()

    p = select.poll()
    fds = {}
    for i, c in enumerate(conns):
        p.register(c, select.POLLIN)
        fds[c.fileno()] = i
    got = [0] * a.flows           # bytes since the start
    seen = [False] * a.flows
    base = None                   # per-flow bytes at the window start
    t_all = t_start = t_end = None
    window = a.seconds - a.warmup - 1
    deadline = time.monotonic() + a.seconds + 60
    open_n = a.flows
    while open_n and time.monotonic() < deadline:
        now = time.monotonic()
        if t_all is not None and t_start is None and now >= t_all + a.warmup:
            t_start, base = now, list(got)
        if t_start is not None and t_end is None and now >= t_start + window:
            t_end, end = now, list(got)
        for fd, ev in p.poll(100):
            i = fds[fd]
            try:
                d = conns[i].recv(BUF)
            except BlockingIOError:
                continue
            if not d:
                p.unregister(fd)
                open_n -= 1
                continue
            got[i] += len(d)
            if not seen[i]:
                seen[i] = True
                if all(seen):
                    t_all = time.monotonic()
    if t_end is None:
        raise SystemExit("flows ended before the measurement window did")
    secs = t_end - t_start
    bps = [(e - b) * 8 / secs for b, e in zip(base, end)]
    s = sum(bps)
    q = sum(x * x for x in bps)
    print(json.dumps({
        "flows": a.flows,
        "window_s": round(secs, 3),
        "bytes": sum(end) - sum(base),
        "bps": round(s),
        "min_bps": round(min(bps)),
        "max_bps": round(max(bps)),
        "jain": round(s * s / (len(bps) * q), 4) if q else 0,
        "per_flow_bps": [round(x) for x in bps],
    }))


def send(a):
    conns = []
    for _ in range(a.flows):
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if a.cc:
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION,
                         a.cc.encode())
        c.connect((a.dst, a.port))
        c.setblocking(False)
        conns.append(c)
    p = select.poll()
    for c in conns:
        p.register(c, select.POLLOUT)
    fds = {c.fileno(): c for c in conns}
    buf = b"\0" * BUF
    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        for fd, _ in p.poll(100):
            try:
                fds[fd].send(buf)
            except BlockingIOError:
                pass
    for c in conns:
        c.close()


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--flows", type=int, required=True)
    r.add_argument("--seconds", type=float, required=True)
    r.add_argument("--warmup", type=float, default=2.0)
    r.add_argument("--ready")
    s = sub.add_parser("send")
    s.add_argument("--dst", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--flows", type=int, required=True)
    s.add_argument("--seconds", type=float, required=True)
    s.add_argument("--cc")
    a = ap.parse_args()
    recv(a) if a.cmd == "recv" else send(a)


if __name__ == "__main__":
    main()

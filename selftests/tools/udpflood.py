#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""udpflood.py: a UDP flood from many source ports, and its receiver.

  udpflood.py send --dst IP --port P --flows N --rate BPS --seconds T
                   [--size S] [--priority PRIO] [--idle]
  udpflood.py recv --port P --seconds T [--skip W] [--ready F]
                   [--series CSV]

send: N connected UDP sockets (N source ports), written round-robin at an
aggregate RATE bit/s of wire bytes (payload + 42: UDP, IP, Ethernet) for T
seconds.  The sockets are non-blocking and a send that finds its socket's
buffer full is skipped, not waited for: a flood does not slow down.
--idle: each write goes to the next port that has nothing left in the
host (SIOCOUTQ 0), skipped if none has: every datagram finds its flow
idle, as a sender gaming a new-flow priority would have it.
Prints one JSON object: offered (datagrams handed to the kernel), skipped
(found the send buffer full), seconds.

recv: counts, per source port, the datagrams and wire bytes that arrive
from W (2) seconds after the first one until T seconds after it, by the
kernel's receive time of each (SO_TIMESTAMPNS), into a 16 MiB buffer.  Prints
one JSON object: flows (ports heard in the window), packets, window_s
(first to last arrival in the window), bps (wire bit/s over it), jain
(Jain's index over the per-port byte counts), min_bps, max_bps, and
delay_ms_p50 / delay_ms_max: each datagram's one-way delay, from the
CLOCK_MONOTONIC send time the sender puts in its first 8 bytes (one clock
for every netns of the machine).  --series CSV: every 20th datagram's
(seconds since the first, source port, delay in ms).
--ready F: touch F once bound.
Python 3 stdlib only.
"""
import argparse
import json
import socket
import fcntl
import struct
import termios
import time

WIRE = 42  # UDP 8 + IPv4 20 + Ethernet 14


def send(a):
    socks = []
    for _ in range(a.flows):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        if a.priority is not None:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, a.priority)
        s.connect((a.dst, a.port))
        s.setblocking(False)
        socks.append(s)
    pad = b"\0" * (a.size - 8)
    gap = (a.size + WIRE) * 8 / a.rate
    offered = skipped = i = 0
    t0 = time.monotonic()
    end = t0 + a.seconds
    while True:
        now = time.monotonic()
        if now >= end:
            break
        due = t0 + i * gap
        if due > now:
            time.sleep(due - now)
        k = i % a.flows
        if a.idle:
            for j in range(a.flows):
                k = (i + j) % a.flows
                if not struct.unpack("i", fcntl.ioctl(
                        socks[k], termios.TIOCOUTQ, b"\0" * 4))[0]:
                    break
            else:
                skipped += 1
                i += 1
                continue
        try:
            socks[k].send(struct.pack("!Q", time.monotonic_ns()) + pad)
            offered += 1
        except BlockingIOError:
            skipped += 1
        except OSError:
            offered += 1  # handed over and dropped (ENOBUFS)
        i += 1
    print(json.dumps({"offered": offered, "skipped": skipped,
                      "seconds": round(time.monotonic() - t0, 3)}))


# asm-generic/socket.h (x86): the kernel's receive time of each datagram
SO_TIMESTAMPNS = 35
SO_RCVBUFFORCE = 33


def arrivals(s):
    """Yield (data, source, arrival) from s, arrival in CLOCK_MONOTONIC
    seconds as the kernel stamped the datagram, not when this process
    read it: on a slow guest the reader lags, and by more at the end of a
    window than at its start, which would count a rate short."""
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    space = socket.CMSG_SPACE(16)
    # CLOCK_REALTIME - CLOCK_MONOTONIC, taken once
    off = time.time_ns() - time.monotonic_ns()
    while True:
        try:
            data, anc, _, src = s.recvmsg(65536, space)
        except socket.timeout:
            yield None, None, None
            continue
        t = time.monotonic_ns()
        for level, kind, c in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(c) >= 16:
                sec, nsec = struct.unpack("qq", c[:16])
                t = sec * 1000000000 + nsec - off
        yield data, src, t


def recv(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # Room for seconds of a reader's stall (root: past rmem_max).
    try:
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 1 << 24)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
    s.bind(("0.0.0.0", a.port))
    s.settimeout(1.0)
    if a.ready:
        open(a.ready, "w").close()
    first = None
    per = {}
    t_a = t_b = None
    delays = []
    series = open(a.series, "w") if a.series else None
    if series:
        series.write("t_s,port,delay_ms\n")
    k = 0
    for data, src, t_ns in arrivals(s):
        if data is None:
            if first is not None and time.monotonic() > first + a.seconds:
                break
            continue
        now = t_ns / 1e9
        d_ms = (t_ns - struct.unpack("!Q", data[:8])[0]) / 1e6
        if first is None:
            first = now
        if series and k % 20 == 0:
            series.write(f"{now - first:.4f},{src[1]},{d_ms:.3f}\n")
        k += 1
        if now > first + a.seconds:
            break
        if now < first + a.skip:
            continue
        delays.append(d_ms)
        if t_a is None:
            t_a = now
        else:
            n, b = per.get(src[1], (0, 0))
            per[src[1]] = (n + 1, b + len(data) + WIRE)
        t_b = now
    if series:
        series.close()
    delays.sort()
    bytes_ = [b for _, b in per.values()]
    win = (t_b - t_a) if t_a is not None and t_b is not None else 0.0
    total = sum(bytes_)
    jain = (total * total / (len(bytes_) * sum(b * b for b in bytes_))
            if bytes_ else 0.0)
    print(json.dumps({
        "flows": len(per), "packets": sum(n for n, _ in per.values()),
        "window_s": round(win, 4),
        "bps": round(total * 8 / win) if win else 0,
        "jain": round(jain, 4),
        "min_bps": round(min(bytes_) * 8 / win) if win else 0,
        "max_bps": round(max(bytes_) * 8 / win) if win else 0,
        "delay_ms_p50": round(delays[len(delays) // 2], 3) if delays else 0,
        "delay_ms_max": round(delays[-1], 3) if delays else 0}))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("send")
    p.add_argument("--dst", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--flows", type=int, required=True)
    p.add_argument("--rate", type=float, required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--size", type=int, default=1200)
    p.add_argument("--priority", type=lambda v: int(v, 0), default=None)
    p.add_argument("--idle", action="store_true")
    p = sub.add_parser("recv")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--skip", type=float, default=2.0)
    p.add_argument("--ready")
    p.add_argument("--series")
    a = ap.parse_args()
    if a.cmd == "send":
        send(a)
    else:
        recv(a)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""UDP sender/receiver for SO_TXTIME (earliest departure time) tests.

  txtime.py send --dst IP --port P --gap-us G --count N --size S [--lead-ms L]
                 [--below-zero error|clamp|wrap] [--stamp-send] [--sndbuf B]
                 [--sockets K]
  txtime.py recv --port P --count N --timeout S [--latency] [--window-ms W]

send: a UDP socket with SO_TXTIME (clock CLOCK_MONOTONIC by default, flags
0).  Packet i carries txtime = start + i*gap, with start = now + lead, and
its payload starts with (seq, txtime) as two big-endian u64.  Packets go out
as fast as sendmsg() allows, each with an SCM_TXTIME cmsg: the qdisc does the
pacing.  Prints one JSON object (sent, start_ns, gap_ns, ...).

Untrusted stamps: --lead-ms may be far off (3600000 = 1 hour ahead, or
-3600000).  A txtime before the clock's origin (in a VM booted seconds ago,
CLOCK_MONOTONIC minus an hour) is refused (error, the default), clamped to
1 ns, the oldest instant the clock has (clamp), or sent as the 64-bit two's
complement of the negative value, as a sender with signed arithmetic would
(wrap).  --stamp-send puts the sender's clock, read just before each
sendmsg(), in the payload after (seq, txtime), for recv --latency.
--sndbuf sets SO_SNDBUFFORCE (packets stay charged to the socket while they
wait in the qdisc).  --sockets K sends from K sockets (K flows), N
datagrams each, taking turns: the j-th datagram of every socket carries
txtime start + j*gap, and seq runs over all of them.

recv: SO_TIMESTAMPNS receive timestamps (CLOCK_REALTIME, taken by the kernel
on delivery), converted to the sender's clock with an offset measured by
sandwiching clock_gettime(REALTIME) between two clock_gettime(clock) calls
(best of many, before and after).  Prints one JSON object:

  received, expected, lost, duplicates, early (received before their txtime),
  min/mean/max_slack_ns (rx - txtime), mean_gap_ns / stddev_gap_ns /
  median_gap_ns (between consecutive arrivals), mean_tx_gap_ns (between consecutive txtimes),
  first/last_rx_ns, first/last_txtime_ns (sender clock), reorders (arrivals
  with a lower seq than one seen before), clock_offset_ns, clock_offset_drift_ns;
  with --latency also min/mean/max_latency_ns (rx - the sender's clock at
  sendmsg(), from --stamp-send payloads); with --window-ms W, the most
  datagrams and UDP payload bytes that arrived in any window [t, t + W)
  starting at an arrival (window_packets, window_payload_bytes,
  window_start_ns); with --schedule-rate R (bytes/s, each datagram
  counted as its payload + --wire-overhead bytes), the schedule of a class
  at R that starts at the earliest txtime: the k-th arrival may come no
  earlier than that txtime + (wire bytes of the k before it) / R.
  schedule_max_ahead_ns is the most any arrival came before its place in
  that schedule (> 0: faster than R), schedule_max_behind_ns the most any
  came after it (how late, at most, a packet left).

Exit status: 0; recv exits 0 even when packets are missing (the caller
judges); 2 on usage errors.  Python 3.11 stdlib only.
"""
import argparse
import json
import math
import socket
import struct
import sys
import time

# <asm-generic/socket.h>, the same on x86_64 (older Pythons lack the names).
SO_TXTIME = getattr(socket, "SO_TXTIME", 61)
SCM_TXTIME = SO_TXTIME
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # SO_TIMESTAMPNS_OLD
SCM_TIMESTAMPNS = SO_TIMESTAMPNS

CLOCKS = {
    "mono": time.CLOCK_MONOTONIC,
    "tai": getattr(time, "CLOCK_TAI", 11),
    "real": time.CLOCK_REALTIME,
}
HDR = struct.Struct("!QQ")  # seq, txtime
SENT = struct.Struct("!Q")  # --stamp-send: sender's clock at sendmsg()
SO_SNDBUFFORCE = 32


def now_ns(clk):
    return time.clock_gettime_ns(clk)


def realtime_offset(clk, rounds=200):
    """clk - CLOCK_REALTIME in ns, from the tightest sandwich of `rounds`."""
    best = None
    for _ in range(rounds):
        a = now_ns(clk)
        r = time.clock_gettime_ns(time.CLOCK_REALTIME)
        b = now_ns(clk)
        if best is None or b - a < best[0]:
            best = (b - a, (a + b) // 2 - r)
    return best[1]


def cmd_send(args):
    clk = CLOCKS[args.clock]
    hdr = HDR.size + (SENT.size if args.stamp_send else 0)
    if args.size < hdr:
        sys.exit(f"--size must be >= {hdr}")
    socks = []
    for _ in range(args.sockets):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        # struct sock_txtime { __kernel_clockid_t clockid; __u32 flags; }
        s.setsockopt(socket.SOL_SOCKET, SO_TXTIME, struct.pack("iI", clk, args.flags))
        if args.priority is not None:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, args.priority)
        if args.mark is not None:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, args.mark)
        if args.sndbuf:
            s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, args.sndbuf)
        s.connect((args.dst, args.port))
        socks.append(s)
    pad = b"\0" * (args.size - hdr)
    gap = int(args.gap_us * 1000)
    t0 = now_ns(clk)
    start = t0 + int(args.lead_ms * 1e6)
    if start + min(0, (args.count - 1) * gap) < 1:
        if args.below_zero == "error":
            sys.exit(f"txtime {start} ns is before the clock's origin: see --below-zero")
    errors = 0
    for i in range(args.count * args.sockets):
        s = socks[i % args.sockets]
        txtime = start + i // args.sockets * gap
        if txtime < 1:
            txtime = 1 if args.below_zero == "clamp" else txtime & (2**64 - 1)
        parts = [HDR.pack(i, txtime)]
        if args.stamp_send:
            parts.append(SENT.pack(now_ns(clk)))
        try:
            s.sendmsg(parts + [pad],
                      [(socket.SOL_SOCKET, SCM_TXTIME, struct.pack("Q", txtime))])
        except OSError as e:
            errors += 1
            if errors == 1:
                print(f"txtime.py send: seq {i}: {e}", file=sys.stderr)
    t1 = now_ns(clk)
    print(json.dumps({
        "sent": args.count * args.sockets - errors,
        "errors": errors,
        "clock": args.clock,
        "start_ns": start,
        "first_txtime_ns": start if start >= 1 else
        (1 if args.below_zero == "clamp" else start & (2**64 - 1)),
        "gap_ns": gap,
        "last_txtime_ns": start + (args.count - 1) * gap,
        "send_duration_ns": t1 - t0,
        "behind_ns": t1 - start,  # > 0: sendmsg finished after the first txtime
    }))


def cmd_recv(args):
    clk = CLOCKS[args.clock]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind((args.bind, args.port))
    off0 = realtime_offset(clk)
    cbuf = socket.CMSG_SPACE(16)
    deadline = time.monotonic() + args.timeout
    rx = []  # (seq, txtime, rx_realtime_ns, sent_ns, payload bytes)
    while len(rx) < args.count:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        s.settimeout(left)
        try:
            data, anc, _flags, _addr = s.recvmsg(65535, cbuf)
        except socket.timeout:
            break
        if len(data) < HDR.size:
            continue
        seq, txtime = HDR.unpack_from(data)
        sent = None
        if args.latency and len(data) >= HDR.size + SENT.size:
            sent, = SENT.unpack_from(data, HDR.size)
        ts = None
        for level, typ, cdata in anc:
            if level == socket.SOL_SOCKET and typ == SCM_TIMESTAMPNS and len(cdata) >= 16:
                sec, nsec = struct.unpack("qq", cdata[:16])
                ts = sec * 1_000_000_000 + nsec
        if ts is None:
            ts = time.clock_gettime_ns(time.CLOCK_REALTIME)
        rx.append((seq, txtime, ts, sent, len(data)))
    off1 = realtime_offset(clk)
    off = (off0 + off1) // 2

    seen = set()
    dups = 0
    reorders = 0
    max_seq = -1
    slack = []
    arrivals = []
    txtimes = []
    lat = []
    sizes = []
    for seq, txtime, ts, sent, size in rx:
        if seq in seen:
            dups += 1
            continue
        seen.add(seq)
        if seq < max_seq:
            reorders += 1
        max_seq = max(max_seq, seq)
        t = ts + off
        arrivals.append(t)
        sizes.append(size)
        txtimes.append(txtime)
        slack.append(t - txtime)
        if sent is not None:
            lat.append(t - sent)
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    txg = sorted(txtimes)
    txgaps = [b - a for a, b in zip(txg, txg[1:])]

    def mean(v):
        return sum(v) / len(v) if v else None

    def stddev(v):
        if len(v) < 2:
            return None
        m = mean(v)
        return math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1))

    def i(v):
        return None if v is None else int(round(v))

    win = {}
    if args.window_ms is not None:
        w = int(args.window_ms * 1e6)
        order = sorted(range(len(arrivals)), key=lambda k: arrivals[k])
        t = [arrivals[k] for k in order]
        b = [sizes[k] for k in order]
        best = (0, 0, None)
        end = 0
        inside = 0
        for a in range(len(t)):
            while end < len(t) and t[end] < t[a] + w:
                inside += b[end]
                end += 1
            if inside > best[1]:
                best = (end - a, inside, t[a])
            inside -= b[a]
        win = {"window_packets": best[0], "window_payload_bytes": best[1],
               "window_start_ns": best[2]}
    if args.schedule_rate and arrivals:
        order = sorted(range(len(arrivals)), key=lambda k: arrivals[k])
        t0 = min(txtimes)
        wire = 0
        ahead = behind = None
        for k in order:
            due = t0 + wire * 1_000_000_000 // args.schedule_rate
            ahead = max(due - arrivals[k], ahead if ahead is not None else due - arrivals[k])
            behind = max(arrivals[k] - due, behind if behind is not None else arrivals[k] - due)
            wire += sizes[k] + args.wire_overhead
        win.update({"schedule_max_ahead_ns": ahead, "schedule_max_behind_ns": behind})

    print(json.dumps({
        "received": len(seen),
        "expected": args.count,
        "lost": args.count - len(seen),
        "duplicates": dups,
        "early": sum(1 for x in slack if x < 0),
        "min_slack_ns": min(slack) if slack else None,
        "mean_slack_ns": i(mean(slack)),
        "max_slack_ns": max(slack) if slack else None,
        "mean_gap_ns": i(mean(gaps)),
        "stddev_gap_ns": i(stddev(gaps)),
        "median_gap_ns": sorted(gaps)[len(gaps) // 2] if gaps else None,
        "mean_tx_gap_ns": i(mean(txgaps)),
        "first_rx_ns": arrivals[0] if arrivals else None,
        "last_rx_ns": arrivals[-1] if arrivals else None,
        "first_txtime_ns": txtimes[0] if txtimes else None,
        "last_txtime_ns": max(txtimes) if txtimes else None,
        "reorders": reorders,
        "clock": args.clock,
        "clock_offset_ns": off,
        "clock_offset_drift_ns": off1 - off0,
        **({"min_latency_ns": min(lat) if lat else None,
            "mean_latency_ns": i(mean(lat)),
            "max_latency_ns": max(lat) if lat else None} if args.latency else {}),
        **win,
    }))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    ps = sub.add_parser("send", help="send packets stamped with SO_TXTIME")
    ps.add_argument("--dst", required=True)
    ps.add_argument("--port", type=int, required=True)
    ps.add_argument("--gap-us", type=float, required=True, help="txtime spacing")
    ps.add_argument("--count", type=int, required=True)
    ps.add_argument("--size", type=int, required=True, help="UDP payload bytes")
    ps.add_argument("--lead-ms", type=float, default=20.0,
                    help="first txtime = now + this (20)")
    ps.add_argument("--clock", choices=CLOCKS, default="mono")
    ps.add_argument("--flags", type=int, default=0,
                    help="sock_txtime flags (1 deadline mode, 2 report errors)")
    ps.add_argument("--priority", type=int, help="SO_PRIORITY")
    ps.add_argument("--mark", type=int, help="SO_MARK")
    ps.add_argument("--below-zero", choices=["error", "clamp", "wrap"], default="error",
                    help="a txtime before the clock's origin: refuse, clamp to 1 ns, "
                    "or send its 64-bit two's complement")
    ps.add_argument("--stamp-send", action="store_true",
                    help="put the clock at sendmsg() in the payload (recv --latency)")
    ps.add_argument("--sndbuf", type=int, default=0, help="SO_SNDBUFFORCE bytes")
    ps.add_argument("--sockets", type=int, default=1,
                    help="send --count datagrams from each of this many sockets")

    pr = sub.add_parser("recv", help="receive, timestamp and summarise")
    pr.add_argument("--port", type=int, required=True)
    pr.add_argument("--count", type=int, required=True)
    pr.add_argument("--timeout", type=float, required=True, help="seconds, total")
    pr.add_argument("--bind", default="0.0.0.0")
    pr.add_argument("--clock", choices=CLOCKS, default="mono",
                    help="the sender's --clock")
    pr.add_argument("--latency", action="store_true",
                    help="latency from --stamp-send payloads")
    pr.add_argument("--window-ms", type=float,
                    help="report the most that arrived in any window this long")
    pr.add_argument("--schedule-rate", type=int,
                    help="bytes/s: compare arrivals with a class at this rate")
    pr.add_argument("--wire-overhead", type=int, default=42,
                    help="bytes on the wire beyond the UDP payload (42)")

    args = p.parse_args()
    if args.cmd == "send":
        cmd_send(args)
    else:
        cmd_recv(args)


if __name__ == "__main__":
    main()

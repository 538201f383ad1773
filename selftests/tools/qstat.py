#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""qstat.py: sample a device's root qdisc counters, fast, over rtnetlink.

  qstat.py --dev DEV --interval S --seconds T [--skip W] [--series FILE]
  qstat.py --dev DEV --rates T [--classes] [--at EPOCH] [--busy IDS]
           [--ready FILE]

Sends the same RTM_GETQDISC dump that `tc -s qdisc show` sends, every
INTERVAL seconds for SECONDS, and reads the root qdisc's TCA_STATS2
queue counters (qlen, backlog bytes, drops) and, for carousel, the `flows`
field of its xstats (struct tc_carousel_xstats, offset 128 when present).
A tc process costs about 0.1 s under emulation; this costs a few ms, so
the qdisc can be sampled every 50 ms.

Prints one JSON object: samples, interval_max_ms (the longest gap between
two samples), intervals_over_100ms, max_qlen, max_backlog, max_flows over the samples taken W
(--skip, default 0) seconds or more after the start, the same over all
samples as *_all, the last drops, and with --series a CSV
"t_s,qlen,backlog,drops,flows" per sample.

With --rates T: reads the byte counter (TCA_STATS_BASIC) of every qdisc
on DEV twice, T seconds apart, each dump timed by the clock read next to
it, and prints {"seconds": .., "uncertain_seconds": .., "bps": {"<handle>":
bit/s, ...}} (handles as tc prints them, "10:"; uncertain_seconds: how
far the window's length may be off, the sum of half of each dump's
duration).  A rate taken through two tc calls instead carries the error
of when, inside each call, the counter was read.  With --classes, the
same for the classes of DEV's qdiscs (RTM_GETTCLASS, the dump of `tc -s
class show`), keyed by classid as tc prints it, "1:a".  With --at, the
window opens at EPOCH (seconds, CLOCK_REALTIME, as bash's $EPOCHREALTIME),
or at once if python3 started later than that; "late_s" says by how
much.  Started in the background, python3's own start (1 to 8 s in a busy
TCG guest) then runs before EPOCH instead of inside the traffic.  With
--busy 1:5,1:a (and --classes), the window opens only once every one of
those classes holds a packet in one dump, and --settle S (default 1)
after that: once their senders all saturate them, however long their
start took; "busy_s" says how long that wait was (at most --busy-timeout,
default 60 s; past it the tool fails), "idle_at_end" lists those without
a packet in the closing dump nor in any over the 0.3 s after it.
"catchup_lost_ns": what the root carousel's catch-up cap took over the
window, all classes together (null for another qdisc).  --ready FILE:
touch FILE once started (python3's start can take 15 s in a busy TCG
guest: start the load after it).
Python 3 stdlib only.
"""
import argparse
import json
import math
import os
import socket
import struct
import time

NETLINK_ROUTE = 0
RTM_NEWQDISC = 36
RTM_GETQDISC = 38
RTM_NEWTCLASS = 40
RTM_GETTCLASS = 42
NLM_F_REQUEST = 0x1
NLM_F_DUMP = 0x300
NLMSG_DONE = 3
NLMSG_ERROR = 2
TC_H_ROOT = 0xFFFFFFFF
TCA_KIND = 1
TCA_STATS2 = 7
TCA_STATS_BASIC = 1
TCA_STATS_QUEUE = 3
TCA_STATS_APP = 4
NLA_TYPE_MASK = 0x3FFF
# carousel's statistics (include/uapi/carousel.h): a nest whose first attribute is
# its kind; modules before the nest sent a bare struct.
XSTATS_KIND = 2
XSTATS_KIND_QDISC = 0x63720001
XSTATS_FLOWS = 19
XSTATS_CATCHUP_LOST_NS = 28
XSTATS_FLOWS_OFF = 128   # offsetof(struct tc_carousel_xstats, flows), bare

NLMSG = struct.Struct("=IHHII")
TCMSG = struct.Struct("=BBHiIII")
NLA = struct.Struct("=HH")


def attrs(buf, off, end):
    """Yield (type, payload) of the netlink attributes in buf[off:end]."""
    while off + NLA.size <= end:
        alen, atype = NLA.unpack_from(buf, off)
        if alen < NLA.size:
            break
        yield atype & NLA_TYPE_MASK, buf[off + NLA.size:off + alen]
        off += (alen + 3) & ~3


def sample(sock, ifindex, seq):
    """The root qdisc of ifindex, parsed, or None."""
    found = None
    for handle, parent, r in dump(sock, ifindex, seq):
        if parent == TC_H_ROOT:
            found = r
    return found


def dump(sock, ifindex, seq, classes=False):
    """(handle, parent, parsed) of every qdisc of ifindex, or with classes
    of every class (a class dump must name its device)."""
    req = TCMSG.pack(0, 0, 0, ifindex if classes else 0, 0, 0, 0)
    want = RTM_NEWTCLASS if classes else RTM_NEWQDISC
    sock.send(NLMSG.pack(NLMSG.size + len(req),
                         RTM_GETTCLASS if classes else RTM_GETQDISC,
                         NLM_F_REQUEST | NLM_F_DUMP, seq, 0) + req)
    found = []
    while True:
        buf = sock.recv(1 << 20)
        off = 0
        while off + NLMSG.size <= len(buf):
            mlen, mtype, _, mseq, _ = NLMSG.unpack_from(buf, off)
            if mlen < NLMSG.size:
                raise RuntimeError("bad netlink message")
            if mtype == NLMSG_DONE:
                return found
            if mtype == NLMSG_ERROR:
                err = struct.unpack_from("=i", buf, off + NLMSG.size)[0]
                raise OSError(-err, os.strerror(-err))
            if mtype == want and mseq == seq:
                t = TCMSG.unpack_from(buf, off + NLMSG.size)
                if t[3] == ifindex:
                    found.append((t[4], t[5],
                                  parse(buf, off + NLMSG.size + TCMSG.size,
                                        off + mlen, classes)))
            off += (mlen + 3) & ~3


def parse(buf, off, end, classes=False):
    """A qdisc's (or a class's) kind and counters; flows, a qdisc's only."""
    r = {"kind": "", "bytes": 0, "qlen": 0, "backlog": 0, "drops": 0,
         "flows": None, "catchup_lost_ns": None}
    for atype, data in attrs(buf, off, end):
        if atype == TCA_KIND:
            r["kind"] = data.rstrip(b"\0").decode()
        elif atype == TCA_STATS2:
            for stype, sdata in attrs(data, 0, len(data)):
                if stype == TCA_STATS_BASIC and len(sdata) >= 8:
                    r["bytes"] = struct.unpack_from("=Q", sdata)[0]
                elif stype == TCA_STATS_QUEUE and len(sdata) >= 12:
                    r["qlen"], r["backlog"], r["drops"] = \
                        struct.unpack_from("=III", sdata)
                elif stype == TCA_STATS_APP and not classes:
                    r["flows"] = xstats_flows(sdata)
                    r["catchup_lost_ns"] = xstats_nest(
                        sdata, XSTATS_CATCHUP_LOST_NS)
    return r


def _nest(data):
    """The attributes of carousel's qdisc statistics nest, or None (a bare
    struct, or another qdisc's)."""
    app = list(attrs(data, 0, len(data)))
    if app and app[0][0] == XSTATS_KIND and len(app[0][1]) == 4 and \
            struct.unpack("=I", app[0][1])[0] == XSTATS_KIND_QDISC:
        return app
    return None


def _nest_u64(app, want):
    for atype, v in app:
        if atype == want and len(v) >= 8:
            return struct.unpack_from("=Q", v)[0]
    return None


def xstats_nest(data, want):
    """A u64 counter from carousel's qdisc statistics nest, or None."""
    app = _nest(data)
    return _nest_u64(app, want) if app is not None else None


def xstats_flows(data):
    """flows from carousel's qdisc statistics, nest or bare struct."""
    app = _nest(data)
    if app is not None:
        return _nest_u64(app, XSTATS_FLOWS)
    if len(data) >= XSTATS_FLOWS_OFF + 8:
        return struct.unpack_from("=Q", data, XSTATS_FLOWS_OFF)[0]
    return None


def handle_name(h, classes):
    """A handle as tc prints it: "1:" for a qdisc, "1:a" for a class."""
    return "%x:%x" % (h >> 16, h & 0xFFFF) if classes else "%x:" % (h >> 16)


def timed_bytes(sock, ifindex, seq, classes):
    """(clock, dump's duration, {handle: bytes}, {handle: qlen}), the
    clock read on both sides of the dump and the midpoint taken."""
    t0 = time.monotonic()
    d = dump(sock, ifindex, seq, classes)
    t1 = time.monotonic()
    return ((t0 + t1) / 2, t1 - t0,
            {handle_name(h, classes): r["bytes"] for h, _, r in d},
            {handle_name(h, classes): r["qlen"] for h, _, r in d})


def root_lost(sock, ifindex, seq):
    """The root qdisc's catchup_lost_ns (None: not carousel's nest)."""
    r = sample(sock, ifindex, seq)
    return r["catchup_lost_ns"] if r else None


def class_qlen(sock, ifindex, seq):
    """{classid: packets queued} from one class dump."""
    return {handle_name(h, True): r["qlen"]
            for h, _, r in dump(sock, ifindex, seq, True)}


def wait_busy(sock, ifindex, busy, timeout):
    """Poll the class dump until every class named in busy has qlen > 0
    in one dump; returns the seconds it took."""
    start = time.monotonic()
    seq = 100
    while True:
        qlen = class_qlen(sock, ifindex, seq)
        seq += 1
        if all(qlen.get(c, 0) > 0 for c in busy):
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise SystemExit(f"--busy: not all of {busy} held a packet "
                             f"within {timeout} s: {qlen}")
        time.sleep(0.02)


def still_idle(sock, ifindex, idle, wait=0.3):
    """Of the classes in idle (no packet in the closing dump), those that
    hold none in any dump over the next `wait' s either: a saturated
    class can be empty for an instant, a class whose sender has stopped
    stays so."""
    end = time.monotonic() + wait
    seq = 200
    while idle and time.monotonic() < end:
        time.sleep(0.02)
        qlen = class_qlen(sock, ifindex, seq)
        seq += 1
        idle = [c for c in idle if qlen.get(c, 0) == 0]
    return idle


def rates(sock, ifindex, seconds, classes, at, busy=None, settle=1.0,
          timeout=60.0):
    late = 0.0
    busy_s = None
    if at is not None:
        wait = at - time.time()
        if wait > 0:
            time.sleep(wait)
        else:
            late = -wait
    if busy:
        busy_s = wait_busy(sock, ifindex, busy, timeout)
        time.sleep(settle)
    l0 = root_lost(sock, ifindex, 3)
    t0, r0, b0, _ = timed_bytes(sock, ifindex, 1, classes)
    time.sleep(seconds)
    t1, r1, b1, q1 = timed_bytes(sock, ifindex, 2, classes)
    l1 = root_lost(sock, ifindex, 4)
    idle = still_idle(sock, ifindex, [c for c in busy or []
                                      if q1.get(c, 0) == 0])
    back = [h for h in b1 if h in b0 and b1[h] < b0[h]]
    if back:
        raise SystemExit(f"byte counter went back (replaced?): {back}")
    print(json.dumps({
        "seconds": round(t1 - t0, 4),
        # the window's ends are each known to within half a dump
        "uncertain_seconds": round((r0 + r1) / 2, 6),
        "late_s": round(late, 3),
        "busy_s": None if busy_s is None else round(busy_s, 3),
        # --busy classes without a packet at the window's end
        "idle_at_end": idle,
        # what the catch-up cap took over the window, all classes
        "catchup_lost_ns": None if l0 is None or l1 is None else l1 - l0,
        "bps": {h: int((b1[h] - b0[h]) * 8 / (t1 - t0))
                for h in b1 if h in b0},
    }))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dev", required=True)
    ap.add_argument("--interval", type=float, default=0.05)
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--skip", type=float, default=0.0)
    ap.add_argument("--series")
    ap.add_argument("--rates", type=float, metavar="T")
    ap.add_argument("--classes", action="store_true",
                    help="with --rates: the classes' counters")
    ap.add_argument("--at", type=float, metavar="EPOCH",
                    help="with --rates: open the window at this time")
    ap.add_argument("--busy", metavar="IDS",
                    help="with --rates --classes: open the window once "
                    "these classes (1:5,1:a) all hold packets")
    ap.add_argument("--ready", metavar="FILE",
                    help="touch FILE once started, before any wait")
    ap.add_argument("--settle", type=float, default=1.0)
    ap.add_argument("--busy-timeout", type=float, default=60.0)
    a = ap.parse_args()

    ifindex = socket.if_nametoindex(a.dev)
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
    sock.bind((0, 0))
    if a.ready:
        open(a.ready, "w").close()
    if a.rates is not None:
        if not (a.rates > 0 and math.isfinite(a.rates)):
            ap.error("--rates needs T > 0")
        if a.at is not None and not math.isfinite(a.at):
            ap.error("--at needs a time")
        busy = a.busy.split(",") if a.busy else None
        if busy and not a.classes:
            ap.error("--busy goes with --classes")
        rates(sock, ifindex, a.rates, a.classes, a.at, busy, a.settle,
              a.busy_timeout)
        return
    if a.classes or a.at is not None or a.busy:
        ap.error("--classes, --at and --busy go with --rates")
    if a.seconds is None:
        ap.error("--seconds or --rates is required")
    rows = []
    t0 = time.monotonic()
    nxt = t0
    seq = 1
    while True:
        now = time.monotonic()
        r = sample(sock, ifindex, seq)
        seq += 1
        if r is None:
            raise SystemExit(f"no root qdisc on {a.dev}")
        rows.append((now - t0, r["qlen"], r["backlog"], r["drops"],
                     r["flows"]))
        if now - t0 >= a.seconds:
            break
        nxt += a.interval
        delay = nxt - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            nxt = time.monotonic()

    gaps = [b[0] - a_[0] for a_, b in zip(rows, rows[1:])]
    if a.series:
        with open(a.series, "w") as f:
            f.write("t_s,qlen,backlog,drops,flows\n")
            for row in rows:
                f.write("%.3f,%d,%d,%d,%s\n" % (row[:4] + (
                    "" if row[4] is None else row[4],)))
    late = [r for r in rows if r[0] >= a.skip] or rows[-1:]
    flows = [r[4] for r in late if r[4] is not None]
    print(json.dumps({
        "samples": len(rows),
        "interval_max_ms": round(max(gaps) * 1000, 1) if gaps else None,
        "intervals_over_100ms": sum(1 for g in gaps if g > 0.1),
        "skip_s": a.skip,
        "max_qlen": max(r[1] for r in late),
        "max_backlog": max(r[2] for r in late),
        "max_flows": max(flows) if flows else None,
        "max_qlen_all": max(r[1] for r in rows),
        "max_backlog_all": max(r[2] for r in rows),
        "drops": rows[-1][3],
    }))


if __name__ == "__main__":
    main()

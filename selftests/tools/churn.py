#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""churn.py: configuration churn on a carousel qdisc under traffic, with
the counters checked after every cycle.

  churn.py --dev DEV --tc TC --state FILE [--cycles N] [--per-batch K]
           [--replace-at C,C,...] [--seed S] [--results FILE]
  churn.py --dev DEV --tc TC --state FILE --final [--results FILE]

Run in the netns of DEV (ip netns exec ...), as root, with a tc whose
`class show -j` prints JSON.  The traffic is the caller's.

Counting.  The qdisc has no "enqueued" counter, so the offered packets are
counted where they enter, by tc actions:

  - on DEV's clsact egress hook, which runs before the root qdisc's
    enqueue: a filter (pref 2, matchall, action pass) whose action counts
    every packet offered to the qdisc.  A "gate" (pref 1, matchall, action
    drop) goes in front of it while the qdisc is replaced, so nothing is
    offered then and the new qdisc's base is exact;
  - in the carousel itself: every packet is classified by one of its
    filters, each with an action (pass) that counts it: a u32 filter per
    churned class (pref 0x10 + slot, on the low 4 bits of the source port)
    and a catch-all (pref 100, matchall) for the default class H:1.  A
    filter is added right after its class and deleted right before it.

Counters are in segments (a GSO packet counts gso_segs, as the qdisc's
sent counter does); every class rate stays <= 10 Mbit/s, so the qdisc
splits every GSO packet it classifies (design.md: GSO, 1 ms) and its
backlog and drops count segments too.

After each cycle the batch reads, in this order, the qdisc twice (Qa, Qb),
the classes (K), the carousel filters (F) and the clsact counter (C); the
reads of the cycle before (or 0, for a filter that is new) are the lower
bounds:

  - each class:  F before <= sent + dropped + backlog <= F after.  The
    filter action counts inside the qdisc's enqueue, under the root lock,
    and the class stats are read under the same lock, so no read can
    split a packet: exact at every cycle.  (An enqueue that found a
    class's filter just before the filter was deleted still finds the
    class: sch_carousel deletes a class only once such an enqueue is
    done.  Before it did, 6.12 once put 2 packets counted by deleted
    classes' filters in the default class);
  - the qdisc:   C before - base - INFLIGHT <= sent + dropped + backlog
    <= C after - base.  The clsact counter counts a packet before the
    qdisc sees it: in between, each CPU can hold one packet (the
    transmit path runs with bottom halves off), of up to 64 segments, so
    INFLIGHT = CPUs x 64.  And tc's dump is not one snapshot: the
    xstats (wheel_packets, under the qdisc lock), then the sent counter,
    then the drops are read one after another, the last two without the
    lock (since 4.10 the dump takes no qdisc lock of its own), so a
    packet that leaves in between is counted in the backlog and again as
    sent or dropped: one read of sent + dropped + backlog can be over.  So the
    two reads are combined.  Sent and dropped only grow, and the backlog
    read under the lock is exact at that instant:
        read 1 whole:  backlog(1) + sent(1) + dropped(1) >= the sum at
                       the instant of backlog(1): the lower bound's side;
        mixed:         backlog(2) + sent(1) + dropped(1) <= the sum at
                       the instant of backlog(2): the upper bound's side.
    Both are bounds without any allowance; a read of one dump over the
    upper bound is only counted (reads_over_in_one_dump);
  - unclassified stays 0 (every packet hit a filter).

--final (traffic stopped): waits until no counter moves, then the qdisc
and every class must add up exactly: offered = sent + dropped + backlog.

Prints a summary line per batch and one JSON summary; exit 0 if every
check held, 1 otherwise.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

SLOTS = 8
SLOT_PREF = 0x10
CATCH_PREF = 100
GATE_PREF = 1
INFLIGHT = (os.cpu_count() or 1) * 64	# packets between clsact and enqueue
COUNT_PREF = 2
QDISC_RATES = ["10mbit", "15mbit", "20mbit", "30mbit"]
LIMITS = [300, 800, 1500, 3000]
GRANS = ["1us", "2us", "10us", "64us", "1us"]
HORIZONS = ["2s", "5s", "10s", "20s"]


class Fail(Exception):
    pass


class Churn:
    def __init__(self, a):
        self.a = a
        self.dev = a.dev
        self.rnd = random.Random(a.seed)
        self.st = {"handle": 1, "base": 0, "slots": {}}
        self.ops = {"class_add": 0, "class_change": 0, "class_del": 0,
                    "filter_add": 0, "filter_del": 0, "qdisc_change": 0,
                    "qdisc_replace": 0, "checks": 0, "batches": 0,
                    "tc_commands": 0}
        self.reads_over = 0		# dumps whose own sum was over (see above)
        self.prev_c = 0			# clsact counter read at the last check
        self.prev_f = {}		# pref -> carousel filter counter, last check
        self.new_prefs = set()		# filters added since the last check
        self.worst_window = 0
        self.max_backlog = 0
        self.drops = 0			# of the current qdisc
        self.drops_before = 0		# of the qdiscs replaced
        self.reads_over_max = 0

    # ------------------------------------------------------------ tc
    def tc_batch(self, lines):
        """Run lines with one tc -s -j -batch; return the JSON documents
        of the show commands, in order."""
        self.ops["batches"] += 1
        self.ops["tc_commands"] += len(lines)
        p = subprocess.run([self.a.tc, "-s", "-j", "-batch", "-"],
                           input="\n".join(lines) + "\n", capture_output=True,
                           text=True, errors="replace", timeout=600)
        if p.returncode:
            raise Fail(f"tc -batch exited {p.returncode}: {p.stderr.strip()[-800:]}")
        dec = json.JSONDecoder()
        out, docs, i = p.stdout, [], 0
        while True:
            while i < len(out) and out[i].isspace():
                i += 1
            if i >= len(out):
                return docs
            obj, i = dec.raw_decode(out, i)
            docs.append(obj)

    def h(self):
        return f"{self.st['handle']:x}"

    # ------------------------------------------------------------ config
    def qdisc_opts(self):
        return (f"rate {self.rnd.choice(QDISC_RATES)} default 1 limit 1500 "
                f"flow_limit 100 horizon 10s")

    def class_rate(self):
        # <= 10 Mbit/s, so that every GSO packet is split (see above).
        return f"rate {self.rnd.choice([1, 2, 3, 5, 8, 10])}mbit burst {self.rnd.choice([0, 1514, 15000])}"

    def slot_filter(self, s):
        return (f"filter add dev {self.dev} parent {self.h()}: protocol ip prio {SLOT_PREF + s} "
                f"u32 match ip sport {s} 0x0007 classid {self.h()}:{SLOT_PREF + s:x} action pass")

    def replace_lines(self, first):
        """Close the gate, put a fresh carousel with the other handle (or
        the first one) in place, its default class and catch-all, read the
        base, open the gate."""
        d = self.dev
        old = self.st["handle"]
        new = 1 if first else (2 if old == 1 else 1)
        self.st["handle"] = new
        self.st["slots"] = {}
        hx = f"{new:x}"
        lines = []
        if first:
            lines += [f"qdisc add dev {d} clsact",
                      f"filter add dev {d} egress protocol all prio {GATE_PREF} matchall action drop",
                      f"filter add dev {d} egress protocol all prio {COUNT_PREF} matchall action pass",
                      f"qdisc add dev {d} root handle {hx}: carousel {self.qdisc_opts()}"]
        else:
            lines += [f"filter add dev {d} egress protocol all prio {GATE_PREF} matchall action drop",
                      f"qdisc replace dev {d} root handle {hx}: carousel {self.qdisc_opts()}"]
        lines += [f"class add dev {d} parent {hx}: classid {hx}:1 carousel rate 8mbit",
                  f"filter add dev {d} parent {hx}: protocol all prio {CATCH_PREF} "
                  f"matchall classid {hx}:1 action pass",
                  f"filter show dev {d} egress",
                  f"qdisc show dev {d}",
                  f"filter del dev {d} egress prio {GATE_PREF}"]
        return lines

    def after_replace(self, docs):
        c = self.counters(docs[0]).get(COUNT_PREF)
        if c is None:
            raise Fail("no clsact counter after replace")
        self.st["base"] = c
        self.drops_before += self.drops
        self.drops = 0
        self.prev_c = c
        self.prev_f = {}
        q = self.carousel(docs[1])
        sdb = q["packets"] + q["drops"] + q["qlen"]
        if sdb:
            raise Fail(f"new qdisc {self.h()}: counted {sdb} packets behind a closed gate")

    def cycle_lines(self, n):
        d, hx = self.dev, self.h()
        lines = []
        for _ in range(2):
            s = self.rnd.randrange(SLOTS)
            minor = f"{SLOT_PREF + s:x}"
            if s not in self.st["slots"]:
                lines += [f"class add dev {d} parent {hx}: classid {hx}:{minor} carousel {self.class_rate()}",
                          self.slot_filter(s)]
                self.st["slots"][s] = True
                self.new_prefs.add(SLOT_PREF + s)
                self.ops["class_add"] += 1
                self.ops["filter_add"] += 1
            elif self.rnd.random() < 0.5:
                lines += [f"class change dev {d} classid {hx}:{minor} carousel {self.class_rate()}"]
                self.ops["class_change"] += 1
            else:
                lines += [f"filter del dev {d} parent {hx}: protocol ip prio {SLOT_PREF + s} u32",
                          f"class del dev {d} classid {hx}:{minor}"]
                del self.st["slots"][s]
                self.ops["class_del"] += 1
                self.ops["filter_del"] += 1
        if n % 20 == 10:
            what = self.rnd.choice(["rate", "limit", "granularity", "horizon"])
            val = {"rate": lambda: self.rnd.choice(QDISC_RATES),
                   "limit": lambda: self.rnd.choice(LIMITS),
                   "granularity": lambda: self.rnd.choice(GRANS),
                   "horizon": lambda: self.rnd.choice(HORIZONS)}[what]()
            lines.append(f"qdisc change dev {d} root carousel {what} {val}")
            self.ops["qdisc_change"] += 1
            self.ops.setdefault(f"qdisc_change_{what}", 0)
            self.ops[f"qdisc_change_{what}"] += 1
        return lines

    def check_lines(self):
        d, hx = self.dev, self.h()
        return [f"qdisc show dev {d}", f"qdisc show dev {d}", f"class show dev {d}",
                f"filter show dev {d} parent {hx}:", f"filter show dev {d} egress"]

    def snapshot(self):
        """What a check after the lines generated so far must find."""
        snap = (dict(self.st["slots"]), set(self.new_prefs))
        self.new_prefs = set()
        return snap

    # ------------------------------------------------------------ parsing
    @staticmethod
    def counters(doc):
        """pref -> packets counted by the actions of the filters of a
        `filter show -s -j` document."""
        out = {}

        def walk(o, pref):
            if isinstance(o, dict):
                if "actions" in o and isinstance(o["actions"], list):
                    for act in o["actions"]:
                        out[pref] = out.get(pref, 0) + act.get("stats", {}).get("packets", 0)
                for k, v in o.items():
                    if k != "actions":
                        walk(v, pref)
            elif isinstance(o, list):
                for v in o:
                    walk(v, pref)
        for f in doc:
            if "pref" in f:
                walk(f, f["pref"])
        return out

    def carousel(self, doc):
        for q in doc:
            if q.get("kind") == "carousel":
                return q
        raise Fail(f"no carousel in qdisc show: {json.dumps(doc)[:300]}")

    @staticmethod
    def classes(doc):
        out = {}
        for c in doc:
            st = c.get("stats", {})
            out[c["handle"]] = st.get("packets", 0) + st.get("drops", 0) + st.get("qlen", 0)
        return out

    def check(self, docs, cycle, snap, exact=False):
        qa, qb, k, f, c = docs
        slots, new_prefs = snap
        self.ops["checks"] += 1
        base = self.st["base"]
        lo = self.prev_c - base
        hi = self.counters(c).get(COUNT_PREF, -1) - base
        self.worst_window = max(self.worst_window, hi - lo)
        where = f"cycle {cycle} (qdisc {self.h()}:)"
        bad = []
        reads = []
        for q in (qa, qb):
            q = self.carousel(q)
            if "wheel_packets" not in q:
                raise Fail(f"{where}: no wheel_packets in the qdisc's xstats: {json.dumps(q)[:300]}")
            # the backlog, under the qdisc lock: in the wheel, and
            # waiting their class's turn out of it
            reads.append((q["wheel_packets"] + q.get("waiting_packets", 0),
                          q["packets"] + q["drops"], q))
        (w1, sd1, q), (w2, _, _) = reads
        sdb = w1 + sd1
        detail = json.dumps({x: q.get(x) for x in ("packets", "drops", "qlen", "wheel_packets",
                                                    "waiting_packets", "limit_drops",
                                                    "flow_limit_drops", "horizon_drops", "alloc_drops")})
        if exact:
            if not lo == hi == sdb == w2 + reads[1][1]:
                bad.append(f"{where}: offered {lo}..{hi}, sent+dropped+backlog "
                           f"{sdb}, {w2 + reads[1][1]}: not equal at rest {detail}")
        else:
            if sdb < lo - INFLIGHT:
                bad.append(f"{where}: sent+dropped+backlog {sdb} below offered {lo} "
                           f"- {INFLIGHT} in flight {detail}")
            if w2 + sd1 > hi:
                bad.append(f"{where}: backlog {w2} (second read) + sent+dropped {sd1} "
                           f"(first read) above offered {hi} {detail}")
            for w, sd, _ in reads:
                if w + sd > hi:
                    self.reads_over += 1
                    self.reads_over_max = max(self.reads_over_max, w + sd - hi)
        self.max_backlog = max(self.max_backlog, q["qlen"])
        self.drops = q["drops"]
        if q.get("unclassified", 0):
            bad.append(f"{where}: {q['unclassified']} unclassified packets")

        k = self.classes(k)
        f = self.counters(f)
        hx = self.h()
        want = {f"{hx}:1": CATCH_PREF}
        for s in slots:
            want[f"{hx}:{SLOT_PREF + s:x}"] = SLOT_PREF + s
        if set(k) != set(want):
            bad.append(f"{where}: classes {sorted(k)}, want {sorted(want)}")
        for cl, pref in want.items():
            if cl not in k:
                continue
            lo_c = 0 if pref in new_prefs else self.prev_f.get(pref, 0)
            hi_c = f.get(pref, -1)
            if not (lo_c <= k[cl] <= hi_c) or (exact and lo_c != hi_c):
                bad.append(f"{where}: class {cl}: sent+dropped+backlog {k[cl]}, "
                           f"offered by its filter {lo_c}..{hi_c}")
        self.prev_c = hi + base
        self.prev_f = f
        return bad, sdb

    # ------------------------------------------------------------ runs
    def run(self):
        a = self.a
        t0 = time.monotonic()
        docs = self.tc_batch(self.replace_lines(first=True))
        self.after_replace(docs)
        replace_at = {int(x) for x in a.replace_at.split(",") if x}
        failures = []
        cycle = 0
        sdb = 0
        while cycle < a.cycles:
            lines, plan = [], []
            for _ in range(a.per_batch):
                if cycle >= a.cycles:
                    break
                cycle += 1
                if cycle in replace_at:
                    # A replace ends the batch: the check needs its base.
                    if lines:
                        cycle -= 1
                        break
                    lines += self.replace_lines(first=False)
                    plan.append(("replace", cycle, None))
                    self.ops["qdisc_replace"] += 1
                    break
                lines += self.cycle_lines(cycle)
                lines += self.check_lines()
                plan.append(("check", cycle, self.snapshot()))
            docs = self.tc_batch(lines)
            i = 0
            for kind, c, snap in plan:
                if kind == "replace":
                    self.after_replace(docs[i:i + 2])
                    i += 2
                    continue
                bad, sdb = self.check(docs[i:i + 5], c, snap)
                i += 5
                failures += bad
            if i != len(docs):
                raise Fail(f"batch printed {len(docs)} JSON documents, expected {i}")
            print(f"# cycle {cycle}: qdisc {self.h()}: sent+dropped+backlog {sdb}, "
                  f"classes {len(self.st['slots']) + 1}, {time.monotonic() - t0:.0f}s",
                  flush=True)
            if len(failures) > 20:
                break
        self.st["seconds"] = round(time.monotonic() - t0, 1)
        return failures

    def final(self):
        """Traffic stopped: once the backlog is gone and the reads agree,
        everything must add up exactly."""
        t0 = time.monotonic()
        docs = self.tc_batch(self.check_lines())
        self.prev_f = self.counters(docs[3])
        self.prev_c = self.counters(docs[4]).get(COUNT_PREF, -1)
        while True:
            time.sleep(0.5)
            docs = self.tc_batch(self.check_lines())
            bad, _ = self.check(docs, "final", self.snapshot(), exact=True)
            q = self.carousel(docs[0])
            if not bad and q["qlen"] == 0:
                return [], q
            if time.monotonic() - t0 > self.a.settle:
                return bad or [f"final: qlen {q['qlen']} after {self.a.settle}s"], q


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dev", required=True)
    ap.add_argument("--tc", required=True)
    ap.add_argument("--state", required=True, help="state file, written by a run, read by --final")
    ap.add_argument("--cycles", type=int, default=1000)
    ap.add_argument("--per-batch", type=int, default=50)
    ap.add_argument("--replace-at", default="250,500,750")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--settle", type=float, default=30.0)
    ap.add_argument("--final", action="store_true")
    ap.add_argument("--results")
    a = ap.parse_args()

    ch = Churn(a)
    try:
        if a.final:
            with open(a.state) as fh:
                saved = json.load(fh)
            ch.st.update(handle=saved["handle"], base=saved["base"],
                         slots={int(s): True for s in saved["slots"]})
            failures, q = ch.final()
            summary = {"final": True, "offered": q["packets"] + q["drops"] + q["qlen"],
                       "sent": q["packets"], "dropped": q["drops"], "backlog": q["qlen"],
                       "limit_drops": q.get("limit_drops"), "flow_limit_drops": q.get("flow_limit_drops"),
                       "horizon_drops": q.get("horizon_drops"), "classes": len(ch.st["slots"]) + 1}
        else:
            failures = ch.run()
            with open(a.state, "w") as fh:
                json.dump({"handle": ch.st["handle"], "base": ch.st["base"],
                           "slots": sorted(ch.st["slots"])}, fh)
            summary = {"cycles": a.cycles, "seconds": ch.st.get("seconds"), "ops": ch.ops,
                       "reads_over_in_one_dump": ch.reads_over,
                       "reads_over_max": ch.reads_over_max,
                       "drops_total": ch.drops_before + ch.drops,
                       "widest_offered_window": ch.worst_window,
                       "max_backlog": ch.max_backlog}
    except Fail as e:
        failures = [str(e)]
        summary = {"error": str(e)}
    summary["failures"] = failures
    if a.results:
        with open(a.results, "w") as fh:
            json.dump(summary, fh, indent=1)
    for f in failures[:20]:
        print(f"FAIL: {f}")
    print(json.dumps({k: v for k, v in summary.items() if k != "failures"}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

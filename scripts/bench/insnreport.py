#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""insnreport.py: guest instructions per packet from the insncount plugin's
windows (insnbench.sh).

  insnreport.py --plan PLAN --windows WINDOWS --kallsyms KALLSYMS
                [--crowd CROWD] --kernel KVER --json OUT.json --md OUT.md

PLAN has one line per window, in the order they ran (insnbench-guest.sh):
LOAD HASH N QDISC PACKETS REP SENT (for the TCP load PACKETS is the data
segments TCP sent, SENT all that the veth sent).  WINDOWS has, per window, the plugin's
"tb VADDR NINSNS EXECS [rep]" lines and then "window I insns COUNT rep
REP": REP of the COUNT instructions are iterations of rep-prefixed string
instructions, which QEMU runs (and the plugin counts) once per iteration.
Each figure is also given without them ("norep": such an instruction
counted about once, its first iteration running in the block before it;
the per-function breakdown still counts them all); the backlogged load's
tables use that one, since its shapers' held packets pin page fragments
whose pages are cleared by `rep stosb', 4 KiB a page.

Per packet = (window(2K) - window(K)) / K, for each repetition: what is
the same in both runs (the marker program, pktgen's start and stop)
cancels.  The median over the repetitions is reported, with the spread
((max - min) / median).  Under the backlogged load pktgen's own function
is left out: at the end of a run it spins until its last packet has left
the qdisc, for as long as the backlog makes it (the work of the qdisc
meanwhile, its timers and dequeues, is counted).  "qdisc only" is a qdisc's figure minus
noqueue's, the same path without a qdisc.  The per-function breakdown
maps each block to the guest symbol at or below its address.

CROWD (optional) has a line per crowd: C packets due at one instant
through carousel, and the longest carousel_dequeue() call function_graph
saw, in guest ns, which under -icount shift=0 are instructions; a
window of the guest spinning gives the measured instructions per guest
ns.

Exit 1 if the plan and the windows do not match or a run of the light
load or a crowd did not send every packet; never for a figure.
"""
import argparse
import bisect
import json
import os
import statistics
import sys
from collections import defaultdict

QDISCS = ["noqueue", "pfifo", "fq_codel", "fq", "htb", "carousel"]
PKTGEN = "pktgen_thread_worker [pktgen]"


def read_plan(path):
    out = []
    with open(path) as fh:
        for line in fh:
            load, h, n, q, pkts, rep, sent = line.split()
            out.append({"load": load, "hash": h, "classes": int(n), "qdisc": q,
                        "packets": int(pkts), "rep": int(rep), "sent": int(sent)})
    return out


def read_windows(path):
    out, tbs = [], defaultdict(int)
    with open(path) as fh:
        for line in fh:
            f = line.split()
            if f[0] == "tb":
                tbs[int(f[1], 16)] += int(f[2]) * int(f[3])
            elif f[0] == "window":
                if len(f) < 6 or f[4] != "rep":
                    raise SystemExit(f"insnreport: {path}: no rep count (a plugin older "
                                     "than its source? scripts/build/qemu-plugin.sh rebuilds it)")
                out.append((int(f[3]), tbs, int(f[5])))
                tbs = defaultdict(int)
    return out


class Symbols:
    def __init__(self, path):
        syms = []
        with open(path) as fh:
            for line in fh:
                f = line.split()
                if len(f) >= 3 and f[1] in "tTwW":
                    name = f[2] + (f" {f[3]}" if len(f) > 3 else "")
                    syms.append((int(f[0], 16), name))
        syms.sort()
        self.addrs = [a for a, _ in syms]
        self.names = [n for _, n in syms]
        if not self.addrs or not any(self.addrs):
            raise SystemExit("insnreport: kallsyms has no addresses (read as root?)")

    def name(self, addr):
        return self.lookup(addr)[1]

    def lookup(self, addr):
        """(start, name) of the symbol at or below addr; a module's
        symbol is named "name [module]"."""
        i = bisect.bisect_right(self.addrs, addr) - 1
        return (self.addrs[i], self.names[i]) if i >= 0 else (0, "?")


def by_function(tbs, syms):
    out = defaultdict(int)
    for addr, n in tbs.items():
        out[syms.name(addr)] += n
    return out


def main():
    ap = argparse.ArgumentParser()
    for a in ("--plan", "--windows", "--kallsyms", "--kernel", "--json", "--md"):
        ap.add_argument(a, required=True)
    ap.add_argument("--crowd")
    a = ap.parse_args()

    plan = read_plan(a.plan)
    wins = read_windows(a.windows)
    if len(plan) != len(wins):
        print(f"insnreport: {len(plan)} runs planned, {len(wins)} windows counted", file=sys.stderr)
        return 1
    short = [p for p in plan if p["load"] == "light" and p["sent"] < p["packets"]]
    if short:
        print(f"insnreport: runs that did not send every packet: {short[:3]}", file=sys.stderr)
        return 1
    crowds = []
    if a.crowd and os.path.exists(a.crowd):
        with open(a.crowd) as fh:
            for line in fh:
                _, c, sent, win, ns, calls, mx, thresh, overrun = line.split()
                insns = wins[int(win)][0]	# the spinning window
                crowds.append({"packets": int(c), "sent": int(sent), "worst_dequeue": int(mx),
                               "dequeues_over_thresh": int(calls), "thresh": int(thresh),
                               "trace_overrun": int(overrun), "spin_insns": insns,
                               "spin_ns": int(ns),
                               "insns_per_ns": round(insns / int(ns), 4) if int(ns) else None})
    if any(c["sent"] < c["packets"] for c in crowds):
        print(f"insnreport: crowds that did not leave: {crowds}", file=sys.stderr)
        return 1
    syms = Symbols(a.kallsyms)

    # (load, hash, n, q, rep) -> {packets: (insns, blocks)}
    runs = defaultdict(dict)
    for p, (insns, tbs, rep) in zip(plan, wins):
        if p["rep"] >= 0:
            key = (p["load"], p["hash"], p["classes"], p["qdisc"], p["rep"])
            runs[key][p["packets"]] = (insns, tbs, rep)

    per = defaultdict(list)			# (load, hash, n, q) -> per-packet, one per rep
    reps = defaultdict(list)		# the same, of rep string iterations
    funcs = defaultdict(lambda: defaultdict(list))
    for (ld, h, n, q, _), d in sorted(runs.items()):
        k1, k2 = sorted(d)
        k = k2 - k1
        f1, f2 = by_function(d[k1][1], syms), by_function(d[k2][1], syms)
        i1, i2 = d[k1][0], d[k2][0]
        if ld != "light":
            i1 -= f1.pop(PKTGEN, 0)
            i2 -= f2.pop(PKTGEN, 0)
        per[(ld, h, n, q)].append((i2 - i1) / k)
        reps[(ld, h, n, q)].append((d[k2][2] - d[k1][2]) / k)
        for name in set(f1) | set(f2):
            funcs[(ld, h, n, q)][name].append((f2.get(name, 0) - f1.get(name, 0)) / k)

    results = []
    for (ld, h, n, q), v in sorted(per.items()):
        med = statistics.median(v)
        nr = [x - y for x, y in zip(v, reps[(ld, h, n, q)])]
        mnr = statistics.median(nr)
        results.append({"load": ld, "hash": h, "classes": n, "qdisc": q,
                        "per_packet": round(med, 1), "min": round(min(v), 1),
                        "max": round(max(v), 1), "reps": len(v),
                        "spread": round((max(v) - min(v)) / med, 5) if med else None,
                        "rep_iterations": round(statistics.median(reps[(ld, h, n, q)]), 1),
                        "per_packet_norep": round(mnr, 1),
                        "spread_norep": round((max(nr) - min(nr)) / mnr, 5) if mnr else None})
    idx = {(r["load"], r["hash"], r["classes"], r["qdisc"]): r for r in results}
    for r in results:
        base = idx.get((r["load"], r["hash"], r["classes"], "noqueue"))
        r["qdisc_only"] = round(r["per_packet"] - base["per_packet"], 1) if base else None
        r["qdisc_only_norep"] = (round(r["per_packet_norep"] - base["per_packet_norep"], 1)
                                 if base else None)

    breakdown = {}
    for (ld, h, n, q), fs in funcs.items():
        med = {name: statistics.median(v + [0] * (len(per[(ld, h, n, q)]) - len(v)))
               for name, v in fs.items()}
        base = funcs.get((ld, h, n, "noqueue"), {})
        bmed = {name: statistics.median(v) for name, v in base.items()}
        # (ties by name, so that the output does not depend on the hash seed)
        top = sorted(med.items(), key=lambda x: (-x[1], x[0]))[:40]
        extra = sorted(((name, med.get(name, 0) - bmed.get(name, 0)) for name in set(med) | set(bmed)),
                       key=lambda x: (-abs(x[1]), x[0]))[:40]
        breakdown[f"{ld}/{h}/{n}/{q}"] = {"top": [[nm, round(x, 1)] for nm, x in top],
                                          "beyond_noqueue": [[nm, round(x, 1)] for nm, x in extra]}

    doc = {"kernel": a.kernel, "method": "guest instructions per packet, QEMU TCG plugin insncount, "
           "one vCPU, -icount shift=0,sleep=off; (window(2K) - window(K)) / K, median over reps",
           "results": results, "functions": breakdown, "crowd": crowds}
    with open(a.json, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")

    md = [f"Guest instructions per packet, {a.kernel}, one boot (scripts/bench/insnbench.sh). "
          "Whole path for noqueue; the others qdisc only (minus noqueue). "
          "Spread: the largest (max - min) / median over the repetitions.", ""]
    tables = sorted({(r["load"], r["hash"]) for r in results},
                    key=lambda x: (x[0] != "light", x[0], x[1]))
    for ld, h in tables:
        if ld == "light":
            label = "Light load, " + ("skb->hash preset" if h == "hash" else "no preset hash")
        whole = "whole ÷ pfifo"
        qk, wk, sk, extra = "qdisc_only", "per_packet", "spread", ""
        if ld != "light":
            whole = "÷ pfifo, less pktgen"
            qk, wk, sk = "qdisc_only_norep", "per_packet_norep", "spread_norep"
            extra = " rep iterations: htb / fq / carousel |"
            label = ("Backlogged: every class offered 1.2× its rate, 1500 B packets, skb->hash "
                     "preset; pktgen's own function left out; a rep string instruction counted "
                     "about once, its iterations in the last column")
        if ld == "tcp":
            whole = "whole ÷ pfifo"
            label = ("Real sockets: paced TCP flows, one per class, the flow key the socket; "
                     "per data segment TCP sent, the receiver and the ACKs included (noqueue "
                     "takes them out); a rep string instruction counted about once, its "
                     "iterations (the copies of the data) in the last column")
        md += [f"**{label}**", "",
               f"| classes | noqueue | pfifo | fq_codel | fq | htb | carousel | ÷ htb | ÷ fq | {whole} | spread |"
               + extra,
               "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if extra else "")]
        for n in sorted({r["classes"] for r in results if (r["load"], r["hash"]) == (ld, h)}):
            row = {q: idx.get((ld, h, n, q)) for q in QDISCS}

            def cell(q, key=qk):
                r = row.get(q)
                return f"{r[key]:,.0f}" if r and r[key] is not None else "–"

            def ratio(x, y, key=qk):
                rx, ry = row.get(x), row.get(y)
                if not rx or not ry or not ry[key]:
                    return "–"
                return f"{rx[key] / ry[key]:.2f}"
            spread = max((r[sk] or 0) for r in row.values() if r)
            tail = ""
            if extra:
                tail = " " + " / ".join(cell(q, "rep_iterations") for q in ("htb", "fq", "carousel")) + " |"
            md.append(f"| {n:,} | {cell('noqueue', wk)} | {cell('pfifo')} | {cell('fq_codel')} | "
                      f"{cell('fq')} | {cell('htb')} | {cell('carousel')} | {ratio('carousel', 'htb')} | "
                      f"{ratio('carousel', 'fq')} | {ratio('carousel', 'pfifo', wk)} | "
                      f"{spread * 100:.2f}% |" + tail)
        md.append("")
    # Where carousel's instructions go, at the most classes measured.
    for ld, h in tables:
        n = max(r["classes"] for r in results if (r["load"], r["hash"]) == (ld, h))
        b = breakdown.get(f"{ld}/{h}/{n}/carousel")
        if not b:
            continue
        load = {"light": "light load", "tcp": "TCP sockets"}.get(ld, "backlogged")
        md += [f"carousel beyond noqueue, {load}, {n:,} classes, "
               f"{'hash preset' if h == 'hash' else 'no preset hash'}: "
               "instructions per packet by function (the largest 15 differences)", "",
               "| function | per packet |", "|---|---|"]
        md += [f"| `{nm}` | {x:+,.0f} |" for nm, x in b["beyond_noqueue"][:15]]
        md.append("")
    if crowds:
        md += ["**The worst single dequeue**: C packets from 64 ports into one carousel class, those "
               "of 63 ports stamped for one instant, so that they wait in one slot of the wheel's top "
               "level and come due together; the longest `carousel_dequeue()` call, timed by "
               "function_graph in guest ns (under `-icount shift=0` one ns per instruction, as the "
               "last column checks; function_graph's own entry and exit are included).", "",
               "| packets queued | sent | longest dequeue (instructions) | dequeues over the threshold "
               "| trace events lost | spinning: instructions ÷ guest ns |",
               "|---|---|---|---|---|---|"]
        for c in crowds:
            md.append(f"| {c['packets']:,} | {c['sent']:,} | {c['worst_dequeue']:,} | "
                      f"{c['dequeues_over_thresh']:,} (> {c['thresh']:,}) | {c['trace_overrun']} | "
                      f"{c['insns_per_ns']} |")
        md.append("")
    with open(a.md, "w") as fh:
        fh.write("\n".join(md))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())

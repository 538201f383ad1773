#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the benchmark outputs into docs/bench: accuracy.json, memory.json,
README.md (tables, targets) and PNG plots.  wheel.json is already in OUT
(scripts/bench/wheel.py).

  report.py --guest DIR --out DIR --kernel KVER [--check]

--check (bench-smoke): verify that every output exists and is well formed
(types and keys, never values) and exit 1 if not.
"""
import argparse
import datetime
import json
import math
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

QDISCS = ["carousel", "htb", "fq"]


def jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def accuracy_rows(raw):
    rows = []
    for r in raw:
        rv = r["recv"]
        gap = rv.get("mean_gap_ns")
        exp = r["expected_gap_ns"]
        row = {
            "qdisc": r["qdisc"], "classes": r["classes"], "rate_mbit": r["rate_mbit"],
            "packets": rv.get("received"), "lost": rv.get("lost"),
            "mean_gap_ns": gap, "stddev_gap_ns": rv.get("stddev_gap_ns"),
            "expected_gap_ns": exp,
            "rel_error_pct": round(100.0 * (gap - exp) / exp, 3) if gap else None,
            "configured_bps": r["rate_mbit"] * 1000000,
            "achieved_bps": round(r["pkt_bytes"] * 8 * 1e9 / gap) if gap else None,
            "gaps_ns": rv.get("gaps_ns"),
        }
        rows.append(row)
    return rows


KQDISCS = ["carousel", "fq", "htb", "pfifo"]


def kernel_rows(raw):
    """One row per (qdisc, classes): CPU ns/packet over the rounds.

    cpu_ns_per_packet is the least disturbed round (the minimum: the host
    only ever adds time), median_ns the median; both from CPU 0's sys +
    softirq ticks over the packets that left the device.  noqueue (the
    path without a qdisc) is not a row of its own: each row carries it as
    baseline_ns, and qdisc_ns = cpu_ns_per_packet - baseline_ns.
    """
    runs = {}
    for r in raw:
        if r["sent"] < r["offered"] / 2:
            continue        # pktgen stopped early (cpubench.sh runs it again)
        sent = r["sent"]
        ns = (r["cpu0_sys"] + r["cpu0_softirq"]) * 1e9 / r["user_hz"] / sent
        runs.setdefault((r["qdisc"], r["classes"]), []).append((ns, r))
    rows = []
    base = {n: min(v[0] for v in runs[(q, n)]) for (q, n) in runs if q == "noqueue"}
    for (q, n), v in sorted(runs.items(), key=lambda kv: (KQDISCS.index(kv[0][0])
                                                            if kv[0][0] in KQDISCS else 9,
                                                            kv[0][1])):
        if q not in KQDISCS:
            continue
        nss = sorted(x[0] for x in v)
        rs = [x[1] for x in v]
        b = base.get(n)
        rows.append({
            "qdisc": q, "classes": n,
            "cpu_ns_per_packet": round(nss[0]),
            "packets": min(r["sent"] for r in rs),
            "median_ns": round(nss[len(nss) // 2]),
            "rounds": len(nss),
            "offered": rs[0]["offered"],
            "dropped": sum(max(0, r["offered"] - r["sent"]) for r in rs),
            "baseline_ns": round(b) if b else None,
            "qdisc_ns": round(nss[0] - b) if b else None,
            "pktgen_ns_per_packet": round(min(r["pktgen_us"] * 1000 / r["offered"] for r in rs)),
        })
    return rows


def kernel_section(krows, lines, verdicts):
    by = {(k["qdisc"], k["classes"]): k for k in krows}
    ns = sorted({k["classes"] for k in krows})
    lines += ["## 3. In-kernel CPU per packet (wall clock, noisy)", "",
              "pktgen (`xmit_mode queue_xmit`) sends 100-byte UDP packets flat out through "
              "`dev_queue_xmit` to a dummy device carrying the qdisc, the UDP source port "
              "cycling through 1..N; a clsact egress BPF program (scripts/bench/prio.bpf.c) "
              "sets `skb->priority = 1:<port>` in front of every qdisc alike. carousel and "
              "htb: N classes of 10 Gbit/N; fq: `maxrate` 10 Gbit/N, `orphan_mask 65535`, "
              "`buckets 4096`, so N flows; pfifo: `limit 10000`. The offered load (a few "
              "hundred Mbit) is far under the 10 Gbit sum of the rates: every qdisc carries "
              "every packet (column *dropped*). CPU = sys + softirq ticks of CPU 0 "
              "(pktgen's) in /proc/stat over the packets that left. The five set-ups "
              "(noqueue too) of one N run interleaved, in rotated order, for several rounds; "
              "ns/packet is the least disturbed round (the host only adds time), the median "
              "is beside it. *baseline* is the same path with no qdisc (noqueue): pktgen's "
              "skb, the BPF program, the dummy driver; *qdisc ns* = ns/packet − baseline.",
              "",
              "| classes | " + " | ".join(f"{q} ns/pkt (median)" for q in KQDISCS) +
              " | baseline | " + " | ".join(f"{q} qdisc ns" for q in KQDISCS) + " | dropped |",
              "|---" * (2 * len(KQDISCS) + 3) + "|"]
    for n in ns:
        cells = []
        for q in KQDISCS:
            k = by.get((q, n), {})
            cells.append(f"{fmt(k.get('cpu_ns_per_packet'), 0)} ({fmt(k.get('median_ns'), 0)})")
        b = next((by[(q, n)]["baseline_ns"] for q in KQDISCS if (q, n) in by), None)
        qn = [fmt(by.get((q, n), {}).get("qdisc_ns"), 0) for q in KQDISCS]
        dr = sum(by.get((q, n), {}).get("dropped", 0) for q in KQDISCS)
        lines.append(f"| {n:,} | " + " | ".join(cells) + f" | {fmt(b, 0)} | " +
                     " | ".join(qn) + f" | {dr} |")
    lines.append("")
    lines += ["Ratios (carousel over the others; whole path, and qdisc only):", "",
              "| classes | ÷ pfifo | ÷ fq | ÷ htb | qdisc ÷ pfifo | qdisc ÷ fq | qdisc ÷ htb |",
              "|---|---|---|---|---|---|---|"]
    for n in ns:
        c = by.get(("carousel", n), {})
        cells = []
        for key in ("cpu_ns_per_packet", "qdisc_ns"):
            for q in ("pfifo", "fq", "htb"):
                o = by.get((q, n), {})
                r = ratio(c.get(key), o.get(key)) if (o.get(key) or 0) > 0 else None
                cells.append(fmt(r, 2))
        lines.append(f"| {n:,} | " + " | ".join(cells) + " |")
    lines.append("")

    def rr(q, n, key="cpu_ns_per_packet"):
        c, o = by.get(("carousel", n), {}).get(key), by.get((q, n), {}).get(key)
        return ratio(c, o) if c and o and o > 0 else None
    top = max(ns) if ns else None
    if top and top >= 10000:
        for q, lim in (("htb", 0.33), ("fq", 0.8)):
            x, y = rr(q, top), rr(q, top, "qdisc_ns")
            verdicts.append((f"at 10k classes carousel CPU/packet ≤ {lim}× {q}",
                             f"{fmt(x, 2)}× (qdisc only: {fmt(y, 2)}×)",
                             x is not None and x <= lim))
    if 1 in ns:
        x, y = rr("pfifo", 1), rr("pfifo", 1, "qdisc_ns")
        verdicts.append(("at 1 class carousel CPU/packet ≤ 1.1× pfifo",
                         f"{fmt(x, 2)}× (qdisc only: {fmt(y, 2)}×)",
                         x is not None and x <= 1.1))


def insn_section(out, lines, verdicts):
    """The deterministic count (insnbench.sh wrote insn.json and insn.md)."""
    try:
        with open(os.path.join(out, "insn.json")) as fh:
            doc = json.load(fh)
        with open(os.path.join(out, "insn.md")) as fh:
            md = fh.read().rstrip()
    except OSError:
        return
    lines += ["## 2. In-kernel instructions per packet (deterministic)", "",
              "The same load as section 3 (pktgen `queue_xmit`, 100-byte UDP, source ports "
              "1..N, the clsact program setting `skb->priority`; here also `skb->hash`, as a "
              "socket's txhash or a NIC's RSS hash would be, or not), counted in guest "
              "instructions by a QEMU TCG plugin of ours (scripts/bench/insncount.c) in a VM "
              "of one vCPU under `-icount shift=0,sleep=off`: the guest's timer interrupts "
              "come at fixed instruction counts, so the count does not depend on the host. "
              "The guest opens and closes a counting window around each pktgen run "
              "(scripts/bench/insnmark.c); per packet = (window(2K) − window(K)) / K, the "
              "median over the repetitions. Under the light load every set-up carries every "
              "packet. fq_codel is the upstream default, for reference.", "",
              "The backlogged load (10,000 classes, each offered 1.2× its rate, 1500-byte "
              "packets, one every 200 µs so that pktgen sleeps between packets instead of "
              "spinning, every class loaded with 3 packets before the count) is where htb "
              "throttles classes. Read it with care; it is the least settled part. fq hardly "
              "throttles there: it caps the pacing delay of one packet at 1 s, and each "
              "flow's packets come N × 200 µs apart, 2 s at 10,000 flows (pktgen spins below "
              "100 µs between packets, so they cannot come faster), so its figure is that of "
              "an fq that only queues, and the verdict against it is no measure. Its "
              "repetitions spread more (see the spread column); arrivals in bursts per class "
              "would make fq throttle, and are still to do. The shapers' held packets pin "
              "page fragments, whose pages `clear_page_erms` clears with one `rep stosb`; "
              "QEMU runs such an instruction as one block per iteration, 4,096 for a page, "
              "so the plugin marks those blocks and this table counts each such instruction "
              "about once (its first iteration runs in the block before it), with its "
              "iterations per packet in the last column.",
              "",
              "The TCP load is real sockets: paced TCP flows (SO_MAX_PACING_RATE), one per "
              "class (SO_PRIORITY), from the guest to a listener in a network namespace "
              "through a veth pair with gso_max_segs 1, so that every qdisc sees the same "
              "packets (TCP builds GSO packets whatever the device offloads, sized by the "
              "qdisc's pacing shift, and carousel splits what others queue whole). Through "
              "noqueue, pfifo, fq_codel and htb TCP paces them itself, with a timer; fq and carousel take pacing over (SK_PACING_FQ) and pace by the "
              "departure time TCP stamps. A window holds the flows' writes and everything up "
              "to the last acknowledgement, the receiver and the ACKs included, which "
              "noqueue's figure takes out.",
              "",
              "The last table is the worst case for a single dequeue: a crowd of packets stamped "
              "for one instant shares one slot of the wheel, and the dequeue that reaches it "
              "once moved them all under the root lock. A dequeue now works on a budget, "
              "128 moves, a charge counting as 4 (docs/design.md, \"A cascade on a budget\").",
              "", md, ""]
    idx = {(r["load"], r["hash"], r["classes"], r["qdisc"]): r for r in doc["results"]}
    crowds = doc.get("crowd") or []
    if crowds:
        c = max(crowds, key=lambda x: x["packets"])
        # a figure at all, read at one instruction per guest ns, none lost
        sound = (c["dequeues_over_thresh"] > 0 and not c["trace_overrun"] and
                 c["insns_per_ns"] is not None and abs(c["insns_per_ns"] - 1) <= 0.001)
        verdicts.append((f"worst single dequeue with {c['packets']:,} packets queued: "
                         "≤ 20,000 instructions",
                         f"{c['worst_dequeue']:,} (guest ns at "
                         f"{c['insns_per_ns']} instructions/ns, "
                         f"{c['trace_overrun']} trace events lost)",
                         sound and c["worst_dequeue"] <= 20000))
    for n in sorted({r["classes"] for r in doc["results"] if r["load"] == "backlog"}):
        c, h, f = (idx.get(("backlog", "hash", n, q)) for q in ("carousel", "htb", "fq"))
        k = "qdisc_only_norep" if c and c.get("qdisc_only_norep") is not None else "qdisc_only"
        if not (c and h and f) or not h.get(k) or not f.get(k):
            continue
        rh, rf = c[k] / h[k], c[k] / f[k]
        verdicts.append((f"instructions, backlogged, {n:,} classes: "
                         "≤ 0.33× htb and ≤ 0.5× fq (qdisc only)",
                         f"{rh:.2f}× htb, {rf:.2f}× fq (an fq that hardly throttles: "
                         "section 2)", rh <= 0.33 and rf <= 0.5))
    for n in sorted({r["classes"] for r in doc["results"] if r["load"] == "tcp"}):
        c, f = (idx.get(("tcp", "hash", n, q)) for q in ("carousel", "fq"))
        k = "qdisc_only_norep"
        if not (c and f) or c.get(k) is None or f.get(k) is None:
            continue
        what = f"instructions, TCP sockets, {n:,} paced flows in {n:,} classes: ≤ 0.5× fq (qdisc only)"
        if f[k] <= 0:
            # (no ratio to take: fq's pacing saves more than fq costs)
            verdicts.append((what, f"carousel {c[k]:,.0f}, fq {f[k]:,.0f} over noqueue", None))
            continue
        verdicts.append((what, f"{c[k] / f[k]:.2f}× fq", c[k] <= 0.5 * f[k]))
    for n in sorted({r["classes"] for r in doc["results"]
                     if (r["load"], r["hash"]) == ("light", "hash")}):
        c, h, f, p = (idx.get(("light", "hash", n, q)) for q in ("carousel", "htb", "fq", "pfifo"))
        if not (c and h and f) or not h["qdisc_only"] or not f["qdisc_only"]:
            continue
        rh, rf = c["qdisc_only"] / h["qdisc_only"], c["qdisc_only"] / f["qdisc_only"]
        verdicts.append((f"instructions, light load, {n:,} classes, hash preset: "
                         "≤ 0.6× htb and ≤ 0.8× fq (qdisc only)",
                         f"{rh:.2f}× htb, {rf:.2f}× fq", rh <= 0.6 and rf <= 0.8))
        if n == 1 and p:
            rp = c["per_packet"] / p["per_packet"]
            verdicts.append(("instructions, whole path, 1 class: ≤ 1.2× pfifo",
                             f"{rp:.2f}×", rp <= 1.2))


def fmt(x, nd=1):
    if x is None:
        return "n/a"
    if isinstance(x, float) and math.isnan(x):
        return "n/a"
    return f"{x:,.{nd}f}"


def ratio(a, b):
    return a / b if a and b else None


def wheel_section(wheel, lines, verdicts):
    by = {(w["structure"], w["n"]): w for w in wheel}
    ns = sorted({w["n"] for w in wheel})
    lines += ["## 1. Wheel microbenchmark (userspace)", "",
              "Steady state: N packets over a 1 s horizon (1 µs ticks, the qdisc's default "
              "wheel: 3 levels for a 10 s horizon); one pair = dequeue the earliest packet, "
              "enqueue one at that time + U[0, 1 s). ns/pair is the median of 5 interleaved "
              "runs; instr/pair is callgrind's Ir of the measured loop only. A run lasts at "
              "least one period of the wheel's top level (1024² µs, ≈ 1.05·N pairs), so that "
              "the cascade of a whole top-level slot, once a period, is in every run once. "
              "*moves* = packets the wheel cascades down a level per pair.", "",
              "| N | carousel ns | rbtree ns | heap ns | carousel instr | rbtree instr | "
              "heap instr | instr carousel/rbtree | ns carousel/rbtree | moves |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for n in ns:
        c, r, h = (by.get((s, n), {}) for s in ("carousel", "rbtree", "heap"))
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            f"{n:,}", fmt(c.get("ns_per_pair")), fmt(r.get("ns_per_pair")),
            fmt(h.get("ns_per_pair")), fmt(c.get("instr_per_pair"), 0),
            fmt(r.get("instr_per_pair"), 0), fmt(h.get("instr_per_pair"), 0),
            fmt(ratio(c.get("instr_per_pair"), r.get("instr_per_pair")), 2),
            fmt(ratio(c.get("ns_per_pair"), r.get("ns_per_pair")), 2),
            fmt(c.get("cascades_per_pair"), 2)))
    lines.append("")
    c1m, r1m = by.get(("carousel", 1000000)), by.get(("rbtree", 1000000))
    if c1m and r1m:
        q = ratio(c1m["instr_per_pair"], r1m["instr_per_pair"])
        verdicts.append(("wheel instr/pair at 1M ≤ 0.5× rbtree", f"{fmt(q, 2)}×",
                         q is not None and q <= 0.5))
    lo, hi = by.get(("carousel", ns[0])), by.get(("carousel", ns[-1]))
    if lo and hi and ns[-1] >= 10000000:
        g = ratio(hi["ns_per_pair"], lo["ns_per_pair"])
        gi = ratio(hi["instr_per_pair"], lo["instr_per_pair"])
        verdicts.append(("wheel growth 1K→10M in ns ≤ 2×",
                         f"{fmt(g, 2)}× in ns, {fmt(gi, 2)}× in instr",
                         g is not None and g <= 2))


def accuracy_section(acc, lines, verdicts):
    lines += ["## 4. Rate accuracy (SENIC Table 3 form)", "",
              "One class (classid 1:1 / one fq flow) sends SO_TXTIME datagrams of 1400 B "
              "stamped twice as dense as its rate, so the qdisc does the pacing; the other "
              "classes are kept busy by one sender per class at the same rate. Receiver: "
              "SO_TIMESTAMPNS gaps (selftests/tools/txtime.py). Expected gap = 1442 B × 8 / "
              "rate (the L2 length the qdiscs count). fq: `maxrate`, one flow per class.", "",
              "| qdisc | classes | rate | packets | mean gap µs ± stddev | error of mean | "
              "achieved / configured |", "|---|---|---|---|---|---|---|"]
    worst = {}
    for a in acc:
        lines.append("| %s | %d | %d Mbit | %s | %s ± %s | %s%% | %s / %s Mbit |" % (
            a["qdisc"], a["classes"], a["rate_mbit"], a["packets"],
            fmt(a["mean_gap_ns"] / 1000 if a["mean_gap_ns"] else None),
            fmt(a["stddev_gap_ns"] / 1000 if a["stddev_gap_ns"] else None),
            fmt(a["rel_error_pct"], 2),
            fmt(a["achieved_bps"] / 1e6 if a["achieved_bps"] else None, 3),
            a["rate_mbit"]))
        if a["rel_error_pct"] is not None:
            worst[a["qdisc"]] = max(worst.get(a["qdisc"], 0), abs(a["rel_error_pct"]))
    lines.append("")
    if "carousel" in worst:
        verdicts.append(("rate error ≤ 0.5%",
                         "worst error of the mean (absolute): " + ", ".join(
                             f"{q} {worst[q]:.2f}%" for q in QDISCS if q in worst),
                         worst["carousel"] <= 0.5))


def kmem(m, what):
    """slab + vmalloc bytes per qdisc / class (large kmallocs count as slab)."""
    return m.get(f"slab_per_{what}", 0) + m.get(f"vmalloc_per_{what}", 0)


def memory_section(mem, lines, verdicts):
    lines += ["## 5. Kernel memory", "",
              "Slab + vmalloc deltas of /proc/meminfo (`Slab:` counts kmalloc's large "
              "allocations from the page allocator too, like carousel's wheel) after an RCU "
              "grace period, per-CPU slabs flushed (/sys/kernel/slab/*/shrink) and "
              "drop_caches, before and after adding the qdisc to many dummy devices at "
              "defaults (per qdisc) or 10,000 classes with one `tc -batch` (per class). "
              "*used* is MemTotal − MemFree over the same step: it sees everything, page "
              "cache and other tasks included, so it is noisier. htb's per-class figure "
              "includes the default pfifo leaf qdisc of each class.", "",
              "| qdisc | per qdisc: slab + vmalloc | (used) | per class: slab + vmalloc | (used) |",
              "|---|---|---|---|---|"]
    perq = {m["qdisc"]: m for m in mem if m["kind"] == "qdisc"}
    perc = {m["qdisc"]: m for m in mem if m["kind"] == "class"}
    for q in ["carousel", "fq", "htb", "pfifo"]:
        pq, pc = perq.get(q), perc.get(q)
        lines.append("| %s | %s | %s | %s | %s |" % (
            q, f"{kmem(pq, 'qdisc') / 1024:,.1f} KiB" if pq else "n/a",
            f"{pq['bytes_per_qdisc'] / 1024:,.1f} KiB" if pq else "n/a",
            f"{kmem(pc, 'class')} B (at {pc['classes']:,})" if pc else "—",
            f"{pc['bytes_per_class']} B" if pc else "—"))
    cw = perq.get("carousel", {}).get("extra") or {}
    if cw.get("wheel_bytes"):
        lines += ["", f"carousel's own count of its wheel and flow table (xstats "
                      f"`wheel_bytes`): {cw['wheel_bytes']:,} B."]
    lines.append("")
    if "carousel" in perq:
        b = kmem(perq["carousel"], "qdisc")
        verdicts.append(("memory ≤ 256 KiB per qdisc", f"{b / 1024:.1f} KiB", b <= 256 * 1024))
    if "carousel" in perc:
        b = kmem(perc["carousel"], "class")
        verdicts.append(("memory ≤ 64 B per class", f"{b} B", b <= 64))


def plots(out, wheel, acc, krows):
    made = []
    if krows:
        fig, ax = plt.subplots(figsize=(6, 4))
        for q in KQDISCS:
            pts = sorted((k["classes"], k["cpu_ns_per_packet"]) for k in krows
                         if k["qdisc"] == q)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=q)
        bpts = sorted({(k["classes"], k["baseline_ns"]) for k in krows if k["baseline_ns"]})
        if bpts:
            ax.plot([p[0] for p in bpts], [p[1] for p in bpts], color="k", ls="--", lw=0.8,
                    label="no qdisc (baseline)")
        ax.set_xscale("log")
        ax.set_ylim(bottom=0)
        ax.set_xlabel("classes (fq: paced flows)")
        ax.set_ylabel("guest CPU ns per packet (sys+softirq)")
        ax.set_title("pktgen through the qdisc, emulated guest")
        ax.legend(fontsize="small")
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "kernel.png"), dpi=100)
        plt.close(fig)
        made.append("kernel.png")
    fig, ax = plt.subplots(figsize=(6, 4))
    for s in ("carousel", "rbtree", "heap"):
        pts = sorted((w["n"], w["ns_per_pair"]) for w in wheel if w["structure"] == s)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=s)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("packets queued (N)")
    ax.set_ylabel("ns per enqueue+dequeue pair")
    ax.set_title("EDT queue cost in steady state")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "wheel.png"), dpi=100)
    plt.close(fig)
    made.append("wheel.png")

    # Gap histogram: one class, most classes, highest rate, each qdisc.
    if acc:
        top_n = max(a["classes"] for a in acc)
        top_r = max(a["rate_mbit"] for a in acc)
        fig, ax = plt.subplots(figsize=(6, 4))
        # 0 .. 3x the ideal gap: the late-timer outliers (up to hundreds of
        # ms in this guest) would squash the rest; the legend counts them.
        exp = [a for a in acc if a["rate_mbit"] == top_r][0]["expected_gap_ns"] / 1000
        edges = [exp * 3 * i / 90 for i in range(91)]
        for a in acc:
            if a["classes"] == top_n and a["rate_mbit"] == top_r and a.get("gaps_ns"):
                g = [x / 1000 for x in a["gaps_ns"]]
                over = sum(1 for x in g if x > edges[-1])
                ax.hist([x for x in g if x <= edges[-1]], bins=edges, histtype="step",
                        label=f"{a['qdisc']} ({over} gaps > {edges[-1]:,.0f} µs)")
        ax.axvline(exp, color="k", ls="--", lw=0.8, label="ideal")
        ax.set_xlabel("inter-packet gap at the receiver (µs)")
        ax.set_ylabel("packets")
        ax.set_title(f"class 1:1, {top_n} active classes, {top_r} Mbit each")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, "gaps.png"), dpi=100)
        plt.close(fig)
        made.append("gaps.png")
    return made


def check(out, names):
    """Shape only: every file there, every row with its keys and types."""
    errs = []
    need = {
        "wheel.json": {"structure": str, "n": int, "ns_per_pair": (int, float),
                       "instr_per_pair": (int, float, type(None))},
        "accuracy.json": {"qdisc": str, "classes": int, "rate_mbit": int,
                          "mean_gap_ns": (int, float, type(None)),
                          "stddev_gap_ns": (int, float, type(None)),
                          "rel_error_pct": (int, float, type(None))},
        "memory.json": {"qdisc": str, "kind": str, "bytes_total": int},
        "kernel.json": {"qdisc": str, "classes": int, "cpu_ns_per_packet": int,
                        "packets": int},
    }
    try:
        with open(os.path.join(out, "insn.json")) as fh:
            doc = json.load(fh)
        rows = doc["results"]
        for r in rows:
            for k, t in {"load": str, "qdisc": str, "classes": int, "per_packet": (int, float),
                         "qdisc_only": (int, float, type(None))}.items():
                if not isinstance(r.get(k), t):
                    errs.append(f"insn.json: row {r!r:.80} bad or missing {k}")
        if not rows:
            errs.append("insn.json: no results")
        if not any(r.get("load") == "tcp" and r.get("qdisc") == "carousel" for r in rows):
            errs.append("insn.json: no TCP load through carousel")
        crowds = doc.get("crowd")
        if not crowds:
            errs.append("insn.json: no crowd (worst single dequeue)")
        for c in crowds or []:
            if (not isinstance(c.get("worst_dequeue"), int) or c.get("sent") != c.get("packets")
                    or not c.get("dequeues_over_thresh")):
                errs.append(f"insn.json: crowd {c!r:.80}: no figure, or not every packet left")
    except (OSError, ValueError, KeyError, TypeError) as e:
        errs.append(f"insn.json: {e}")
    for f, keys in need.items():
        try:
            with open(os.path.join(out, f)) as fh:
                rows = json.load(fh)
        except (OSError, ValueError) as e:
            errs.append(f"{f}: {e}")
            continue
        if not isinstance(rows, list) or not rows:
            errs.append(f"{f}: not a non-empty list")
            continue
        for r in rows:
            for k, t in keys.items():
                if k not in r or not isinstance(r[k], t):
                    errs.append(f"{f}: row {r!r:.80} bad or missing {k}")
    for f in ["README.md"] + names:
        p = os.path.join(out, f)
        if not os.path.exists(p) or os.path.getsize(p) == 0:
            errs.append(f"{f}: missing or empty")
        elif f.endswith(".png"):
            with open(p, "rb") as fh:
                if fh.read(8) != b"\x89PNG\r\n\x1a\n":
                    errs.append(f"{f}: not a PNG")
    return errs


def run_date(guest):
    """When the guest wrote its results (so a re-run of the report keeps it)."""
    t = max((os.path.getmtime(os.path.join(guest, f)) for f in os.listdir(guest)),
            default=None) if os.path.isdir(guest) else None
    d = (datetime.datetime.fromtimestamp(t, datetime.timezone.utc) if t
         else datetime.datetime.now(datetime.timezone.utc))
    return f"{d:%Y-%m-%d %H:%M} UTC"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--guest", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()

    with open(os.path.join(a.out, "wheel.json")) as fh:
        wheel = json.load(fh)
    acc = accuracy_rows(jsonl(os.path.join(a.guest, "accuracy.jsonl")))
    mem = jsonl(os.path.join(a.guest, "memory.jsonl"))
    krows = kernel_rows(jsonl(os.path.join(a.guest, "kernel.jsonl")))
    with open(os.path.join(a.out, "kernel.json"), "w") as fh:
        json.dump(krows, fh, indent=1)
        fh.write("\n")
    with open(os.path.join(a.out, "accuracy.json"), "w") as fh:
        json.dump([{k: v for k, v in r.items() if k != "gaps_ns"} for r in acc], fh, indent=1)
        fh.write("\n")
    with open(os.path.join(a.out, "memory.json"), "w") as fh:
        json.dump(mem, fh, indent=1)
        fh.write("\n")

    lines = ["# Benchmarks", "",
             f"Run: {run_date(a.guest)}, "
             f"by `make bench` (scripts/bench/). In-kernel figures: kernel {a.kernel} in a "
             "virtme-ng VM (2 vCPUs, 2 GiB). Userspace figures: the host.", "",
             "**The host is emulated.** There is no KVM here: the VM runs under QEMU TCG, a "
             "software CPU emulator, some 10-50× slower than hardware and with timer jitter "
             "of the order of a millisecond, on 2 host cores shared with other jobs. Absolute "
             "numbers mean little; every comparison below is a ratio taken side by side in "
             "one run (one wheelbench process, one VM boot). Instruction counts (callgrind "
             "for the wheel, the insncount plugin in the kernel, section 2) are the most "
             "repeatable figures.", ""]
    verdicts = []
    wheel_section(wheel, lines, verdicts)
    insn_section(a.out, lines, verdicts)
    kernel_section(krows, lines, verdicts)
    accuracy_section(acc, lines, verdicts)
    memory_section(mem, lines, verdicts)
    made = plots(a.out, wheel, acc, krows)
    lines += ["## Where we stand against the targets", "",
              "| target | measured | met? |", "|---|---|---|"]
    for t, m, ok in verdicts:
        lines.append(f"| {t} | {m} | {'yes' if ok else ('no' if ok is False else '—')} |")
    lines += [""]
    for m in made:
        lines += [f"![{m}]({m})", ""]
    lines += ["Only one kernel per run: `CAROUSEL_BENCH_KERNEL=6.1 make bench` for 6.1.", ""]
    # The analysis is written by hand from a run and its profiles; a later
    # run refreshes the tables above but not the text.
    notes = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                         "docs", "bench", "analysis.md")
    if os.path.exists(notes) and not a.check:
        with open(notes) as fh:
            lines += [fh.read().rstrip(), ""]
    with open(os.path.join(a.out, "README.md"), "w") as fh:
        fh.write("\n".join(lines))
    if a.check:
        errs = check(a.out, made)
        for e in errs:
            print("bench-smoke: " + e, file=sys.stderr)
        print(f"bench-smoke: {'FAIL' if errs else 'ok'}: {a.out}")
        sys.exit(1 if errs else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""insnlines.py: the module's guest instructions per packet by source line,
from the insncount plugin's windows (insnbench.sh).

  insnlines.py --plan PLAN --windows WINDOWS --kallsyms KALLSYMS --ko KO
               [--run LOAD/HASH/N/QDISC ...] [--top N] [--md OUT.md]

insnreport.py gives each translation block to the function at its start.
Here each of a block's instructions is placed: the block's start, as an
offset into its function (kallsyms, taken in the guest), is found in the
module's own disassembly (objdump -d -l of KO, which has the source line
of every instruction, the innermost inlined one's), and the block's
NINSNS instructions from there on are that block's.  Per packet, as in
insnreport.py: (window(2K) - window(K)) / K, the median over repetitions.
Only the module's code is placed by line; the rest of the kernel is
summed by function, beside it.

The module in the guest is the module on disk, but the kernel patches
some of its instructions at load (the __fentry__ call becomes a NOP of
the same length; return thunks and retpolines become plain returns and
indirect calls, which end a block anyway).  A block start that falls
between two instructions of the disassembly is counted in "unplaced":
that figure says how far to trust the rest.

Default runs: every carousel run of the light load in PLAN.
"""
import argparse
import bisect
import re
import statistics
import subprocess
import sys
from collections import defaultdict

from insnreport import Symbols, read_plan

MODULE = "sch_carousel"


def read_windows(path):
    """One {(vaddr, ninsns): execs} per window, in order."""
    out, tbs = [], defaultdict(int)
    with open(path) as fh:
        for line in fh:
            f = line.split()
            if f[0] == "tb":
                tbs[(int(f[1], 16), int(f[2]))] += int(f[3])
            elif f[0] == "window":
                out.append(tbs)
                tbs = defaultdict(int)
    return out


INSN = re.compile(r"^\s+([0-9a-f]+):\s")
FUNC = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
LINE = re.compile(r"^(/\S+|\S+\.[ch]):(\d+)")
INLINE = re.compile(r"^([A-Za-z_][\w.]*)\(\):$")


class Disasm:
    """Per function of KO: its instructions' offsets, each with its
    (function as the line table names it, file:line)."""

    def __init__(self, ko):
        out = subprocess.run(["objdump", "-d", "-l", "--no-show-raw-insn", ko],
                             check=True, capture_output=True, text=True).stdout
        self.funcs = {}
        name = base = None
        where = ("?", "?")
        inl = "?"
        for line in out.splitlines():
            m = FUNC.match(line)
            if m:
                base, name = int(m.group(1), 16), m.group(2)
                self.funcs[name] = ([], [])
                inl = name
                continue
            if name is None:
                continue
            m = INLINE.match(line)
            if m:
                inl = m.group(1)
                continue
            m = LINE.match(line)
            if m:
                path = m.group(1)
                for part in ("/" + MODULE + ".c", "/carousel_wheel.h", "/carousel_compat.h"):
                    if path.endswith(part):
                        path = part[1:]
                where = (inl, f"{path.rsplit('/', 1)[-1]}:{m.group(2)}")
                continue
            m = INSN.match(line)
            if m:
                offs, lines = self.funcs[name]
                offs.append(int(m.group(1), 16) - base)
                lines.append(where)


def place(tbs, ks, dis):
    """{key: instructions} for one window: ("line", func, file:line) for
    the module's code, ("kernel", name) for the rest, ("unplaced", name)
    for module blocks whose start is no instruction of the disassembly."""
    out = defaultdict(int)
    for (addr, n), execs in tbs.items():
        start, full = ks.lookup(addr)
        name, _, mod = full.partition(" [")
        if mod != MODULE + "]" or name not in dis.funcs:
            out[("kernel", full)] += n * execs
            continue
        offs, lines = dis.funcs[name]
        i = bisect.bisect_left(offs, addr - start)
        if i >= len(offs) or offs[i] != addr - start:
            out[("unplaced", name)] += n * execs
            continue
        for j in range(i, i + n):
            if j < len(lines):
                out[("line",) + lines[j]] += execs
            else:	# (past the function's end: the next symbol's)
                out[("unplaced", name)] += execs
    return out


def main():
    ap = argparse.ArgumentParser()
    for a in ("--plan", "--windows", "--kallsyms", "--ko"):
        ap.add_argument(a, required=True)
    ap.add_argument("--run", action="append")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--md")
    a = ap.parse_args()

    plan = read_plan(a.plan)
    wins = read_windows(a.windows)
    if len(plan) != len(wins):
        print(f"insnlines: {len(plan)} runs planned, {len(wins)} windows counted",
              file=sys.stderr)
        return 1
    ks = Symbols(a.kallsyms)
    dis = Disasm(a.ko)
    wanted = a.run or sorted({f"{p['load']}/{p['hash']}/{p['classes']}/{p['qdisc']}"
                              for p in plan
                              if p["load"] == "light" and p["qdisc"] == "carousel"},
                             key=lambda r: (r.split("/")[1], int(r.split("/")[2])))

    md = []
    for want in wanted:
        ld, h, n, q = want.split("/")
        runs = defaultdict(dict)	# rep -> packets -> window
        for p, w in zip(plan, wins):
            if (p["load"], p["hash"], str(p["classes"]), p["qdisc"]) == (ld, h, n, q) \
                    and p["rep"] >= 0:
                runs[p["rep"]][p["packets"]] = w
        if not runs:
            print(f"insnlines: no run {want} in {a.plan}", file=sys.stderr)
            return 1
        per = defaultdict(list)
        for rep, d in sorted(runs.items()):
            k1, k2 = sorted(d)
            c1, c2 = place(d[k1], ks, dis), place(d[k2], ks, dis)
            for key in set(c1) | set(c2):
                per[key].append((c2.get(key, 0) - c1.get(key, 0)) / (k2 - k1))
        nrep = len(runs)
        med = {k: statistics.median(v + [0] * (nrep - len(v))) for k, v in per.items()}
        mod = sum(v for k, v in med.items() if k[0] in ("line", "unplaced"))
        unplaced = sum(v for k, v in med.items() if k[0] == "unplaced")
        byfunc = defaultdict(float)
        for k, v in med.items():
            if k[0] == "line":
                byfunc[k[1]] += v
        md.append(f"### {want}: the module's {mod:.1f} instructions a packet "
                  f"({unplaced:.1f} unplaced), {nrep} repetition(s)\n")
        md.append("| instructions a packet | function (innermost inline) | line |")
        md.append("|---:|---|---|")
        lines = sorted(((v, k) for k, v in med.items() if k[0] == "line" and abs(v) >= 0.05),
                       key=lambda x: (-x[0], x[1]))
        for v, k in lines[:a.top]:
            md.append(f"| {v:.1f} | {k[1]} | {k[2]} |")
        md.append("\nBy function as the line table names it (inlined code counted where "
                  "it was written):\n")
        md.append("| instructions a packet | function |")
        md.append("|---:|---|")
        for f, v in sorted(byfunc.items(), key=lambda x: (-x[1], x[0])):
            if abs(v) >= 0.05:
                md.append(f"| {v:.1f} | {f} |")
        md.append("\nThe rest of the kernel, by function (top 15):\n")
        md.append("| instructions a packet | function |")
        md.append("|---:|---|")
        rest = sorted(((v, k[1]) for k, v in med.items() if k[0] == "kernel"),
                      key=lambda x: (-x[0], x[1]))
        for v, f in rest[:15]:
            md.append(f"| {v:.1f} | {f} |")
        md.append("")
    text = "\n".join(md) + "\n"
    if a.md:
        with open(a.md, "w") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

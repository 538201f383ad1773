#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Run the wheel microbenchmark (wheelbench) and write wheel.json.

  wheel.py --bin scripts/bench/wheelbench --out docs/bench/wheel.json [--smoke]

Wall time: one wheelbench run per N with the three structures interleaved
(5 runs each, median).  A run is at least one top-level period of the
wheel (1024^2 ticks of 1 us: every packet queued then is cascaded once per
period, so a shorter run would catch that cascade or miss it): at least
N * 1.05 pairs, as N packets are spread over H = 1 s.  Instructions: one callgrind run per N, the three
structures in it, only the measured loop instrumented; instr/pair is the
Ir of the loop divided by the pairs it did.  Writes a JSON list of
{"structure", "n", "ns_per_pair", "instr_per_pair", ...}.  Never judges a
figure; exits non-zero only if a tool failed or the structures disagreed.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

FULL = dict(ns=[1000, 10000, 100000, 1000000, 10000000], ops=1000000, runs=5,
            cg_ops=200000)
SMOKE = dict(ns=[1000, 10000], ops=20000, runs=5, cg_ops=20000)


# The wheel's top-level slot (3 levels of 1024 slots of 1 us: the qdisc's
# default for a 10 s horizon) over the spread of departure times (-H, 1 s).
PERIOD_OVER_H = 1024 * 1024 * 1000 / 1e9


def period_ops(n, ops):
    """ops, raised to one whole top-level period of the wheel for N packets."""
    return max(ops, int(n * PERIOD_OVER_H) + 1)


def run_wall(binary, n, ops, runs):
    out = subprocess.run([binary, "-v", "-n", str(n), "-o", str(ops), "-r", str(runs)],
                         check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def run_callgrind(binary, n, ops, structs):
    """{structure: Ir of `ops` pairs}, or {} without valgrind."""
    if not shutil.which("valgrind"):
        return {}
    with tempfile.TemporaryDirectory() as d:
        pat = os.path.join(d, "cg.out")
        subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                        "--callgrind-out-file=" + pat, binary, "-c", "-n", str(n),
                        "-o", str(ops), "-s", structs],
                       check=True, capture_output=True, text=True)
        res = {}
        for f in glob.glob(pat + ".*"):
            name = tot = None
            with open(f) as fh:
                for line in fh:
                    if line.startswith("desc: Trigger: Client Request: "):
                        name = line.split(": ", 2)[2].split(":", 1)[1].strip()
                    elif line.startswith("totals:"):
                        tot = int(line.split()[1])
            if name and tot is not None:
                res[name] = tot
        return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    p = SMOKE if a.smoke else FULL
    rows = []
    for n in p["ns"]:
        # Under callgrind only the wheel needs the whole period: the others
        # cost the same every pair, and a period of them at 10M takes minutes.
        ops, cg_ops = period_ops(n, p["ops"]), period_ops(n, p["cg_ops"])
        wall = run_wall(a.bin, n, ops, p["runs"])
        ir = run_callgrind(a.bin, n, cg_ops, "carousel")
        cg_other = min(cg_ops, p["cg_ops"])
        ir_other = run_callgrind(a.bin, n, cg_other, "rbtree,heap")
        for w in wall:
            wheel = w["structure"] == "carousel"
            instr = (ir if wheel else ir_other).get(w["structure"])
            cops = cg_ops if wheel else cg_other
            rows.append({
                "structure": w["structure"], "n": n,
                "ns_per_pair": w["ns_per_pair"],
                "instr_per_pair": round(instr / cops, 1) if instr else None,
                "ns_min": w["ns_min"], "ns_max": w["ns_max"],
                "cascades_per_pair": w.get("cascades_per_pair"),
                "runs": w["runs"], "ops": w["ops"], "callgrind_ops": cops,
            })
            print("wheel: %-8s n=%-8d %8.1f ns/pair %8s instr/pair" %
                  (w["structure"], n, w["ns_per_pair"],
                   rows[-1]["instr_per_pair"]), file=sys.stderr)
    with open(a.out, "w") as fh:
        json.dump(rows, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()

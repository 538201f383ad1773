#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Plot the qdisc backlog over time of a many-flows run.

  scripts/bench/plot-backlog.py BACKLOG_CSV FLOWS OUT_PNG [TITLE]

BACKLOG_CSV is the series selftests/17-many-flows.sh leaves in its
artifacts (tools/qstat.py --series: t_s,qlen,backlog,drops,flows).  Plots
the backlog in packets (qlen) and in MTU-sized packets (backlog / 1514 B),
both per flow, with the 2.5 packets-per-flow bound and the 2 s warm-up
the test leaves out.  Needs matplotlib (Debian: python3-matplotlib).
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    path, flows, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    title = sys.argv[4] if len(sys.argv) > 4 else None
    t, q, b, f = [], [], [], []
    with open(path) as fh:
        for row in csv.DictReader(fh):
            t.append(float(row["t_s"]))
            q.append(int(row["qlen"]) / flows)
            b.append(int(row["backlog"]) / 1514 / flows)
            f.append(int(row["flows"] or 0))

    fig, ax = plt.subplots(figsize=(8, 4), dpi=100)
    ax.plot(t, b, label="backlog / 1514 B per flow", color="tab:blue")
    ax.plot(t, q, label="qlen (skbs) per flow", color="tab:orange")
    ax.axhline(2.5, color="tab:red", linestyle="--", linewidth=1,
               label="bound: 2.5 packets per flow")
    ax.axvspan(0, 2, color="0.9", label="warm-up (initial windows)")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("packets per flow in the qdisc")
    ax.set_yscale("log")
    ax.set_ylim(0.5, max(max(b), max(q), 3) * 1.3)
    ax2 = ax.twinx()
    ax2.plot(t, f, color="0.5", linewidth=0.8, linestyle=":",
             label="flows in the wheel")
    ax2.set_ylabel("flows with packets in the wheel")
    ax2.set_ylim(0, flows * 1.1)
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="upper right",
              fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Plot per-flow delay over time of the sparse-flow test with a UDP flood.

  scripts/bench/plot-sparse.py ART_DIR OUT_PNG [TITLE]

ART_DIR holds the artifacts selftests/34-sparse-udp-flood.sh leaves: for
each of carousel, floor and htb, ping-NAME.seq (each reply's icmp_seq
and RTT in ms; pings sent 20 ms apart from 3 s into the flood, so a
lost one leaves a gap) and NAME-delay.csv
(tools/udpflood.py --series: t_s,port,delay_ms of every 20th flood
datagram).  Plots, on one log scale, the flood's one-way delay and the
pings' RTT over time for each.  Needs matplotlib (python3-matplotlib).
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

RUNS = (("carousel", "tab:blue"), ("htb", "tab:red"), ("floor", "tab:green"))
PING_START_S, PING_IVAL_S = 3.0, 0.02


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    art, out = sys.argv[1], sys.argv[2]
    title = sys.argv[3] if len(sys.argv) > 3 else None
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=100)
    for name, color in RUNS:
        path = os.path.join(art, f"{name}-delay.csv")
        if os.path.exists(path):
            t, d = [], []
            with open(path) as fh:
                for row in csv.DictReader(fh):
                    t.append(float(row["t_s"]))
                    d.append(max(float(row["delay_ms"]), 0.01))
            ax.scatter(t, d, s=2, color=color, alpha=0.25,
                       label=f"{name}: flood datagrams (one-way)")
        path = os.path.join(art, f"ping-{name}.seq")
        if os.path.exists(path):
            t, rtt = [], []
            with open(path) as fh:
                for line in fh:
                    seq, ms = line.split()
                    t.append(PING_START_S + (int(seq) - 1) * PING_IVAL_S)
                    rtt.append(float(ms))
            ax.plot(t, rtt, color=color, linewidth=1.2, marker=".",
                    markersize=2, label=f"{name}: ping (RTT)")
    ax.set_yscale("log")
    ax.set_xlabel("time since the flood started (s)")
    ax.set_ylabel("delay (ms)")
    ax.grid(True, which="both", linewidth=0.3)
    ax.legend(fontsize=7, loc="center right", markerscale=4)
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(out)


if __name__ == "__main__":
    main()

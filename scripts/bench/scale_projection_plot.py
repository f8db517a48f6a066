#!/usr/bin/python3
"""Plots the CSVs of `gradshare simulate --csv`: time per step and efficiency against workers,
one line per tree and link rate.  usage: scale_projection_plot.py OUT.png A.csv [B.csv ...]"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rate_label(bits):
    bits = float(bits)
    for scale, unit in ((1e9, "Gbit/s"), (1e6, "Mbit/s")):
        if bits >= scale:
            return f"{bits / scale:g} {unit}"
    return "unlimited"


TITLE = "gradshare simulate: asynchronous gradient sharing, one rank per node"


def main():
    out, paths = sys.argv[1], sys.argv[2:]
    fig, (time_axis, efficiency_axis) = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, path in enumerate(paths):
        rows = list(csv.DictReader(open(path)))
        for tree in sorted({r["topology"] for r in rows}):
            mine = [r for r in rows if r["topology"] == tree]
            workers = [int(r["workers"]) for r in mine]
            label = f"{tree}, {rate_label(mine[0]['link_bits_per_second'])}"
            style = {"mesh": "-", "aggregate": ":"}.get(tree, "--")
            color = colors[index % len(colors)]
            time_axis.plot(workers, [1e3 * float(r["step_seconds_flow"]) for r in mine], style,
                           color=color, marker="o", label=label)
            efficiency_axis.plot(workers, [100 * float(r["efficiency"]) for r in mine], style,
                                 color=color, marker="o", label=label)
    for axis in (time_axis, efficiency_axis):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("workers")
        axis.grid(True, which="both", alpha=0.3)
    time_axis.set_yscale("log")
    time_axis.set_ylabel("time per step (ms)")
    efficiency_axis.set_ylabel("scaling efficiency (% of a lone worker's speed)")
    efficiency_axis.axhline(50, color="grey", lw=0.8)
    efficiency_axis.legend(fontsize=8)
    fig.suptitle(TITLE)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()

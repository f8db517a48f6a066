#!/usr/bin/env python3
"""Table and plot for scripts/bench/cluster: reads OUT/<setting>/<strategy>/metrics.jsonl.

  cluster_report.py OUT TARGET

Settings are folders of OUT (one-host, 100mbit, 1gbit, ..., cnn-1gbit); every run directory
DIR has DIR.wall (seconds of the whole mpirun) and DIR.cpu ("ticks ticks_per_second" of rank 0)
beside it. A strategy whose full run is missing but whose DIR-1epoch exists is reported from
that epoch (allreduce where the full run would be too long).
"""
import json
import os
import sys

from training_rate import training_samples_per_second


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def read_number(path, index=0):
    try:
        with open(path) as f:
            return float(f.read().split()[index])
    except (OSError, ValueError, IndexError):
        return None


def summarize(run_dir, target):
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return None
    records = load(path)
    epochs = [r for r in records if r["kind"] == "epoch"]
    final = [r for r in records if r["kind"] == "final"]
    steps = [r for r in records if r["kind"] == "step"]
    summaries = [r for r in records if r["kind"].endswith("_summary")]
    wall = final[-1]["wall_seconds"] if final else None
    samples = sum(r.get("samples", 0) for r in epochs) if epochs and "samples" in epochs[0] else None
    rate = training_samples_per_second(steps)
    summary = summaries[-1] if summaries else {}
    if "bytes_per_worker_step" in summary:
        bytes_per_step = summary["bytes_per_worker_step"]
    else:
        values = [r["bytes_per_worker_step"] for r in steps if "bytes_per_worker_step" in r]
        bytes_per_step = sum(values) / len(values) if values else None
    ticks = read_number(run_dir + ".cpu", 0)
    per_second = read_number(run_dir + ".cpu", 1)
    mpirun_wall = read_number(run_dir + ".wall")
    cpu_share = ticks / per_second / mpirun_wall if ticks and per_second and mpirun_wall else None
    staleness = summary.get("staleness_mean")
    return {
        "accuracy": final[-1]["test_accuracy"] if final else None,
        # gradshare's last epoch has its evaluation in the final record only
        "time_to_target": next((r["wall_seconds"] for r in epochs + final
                                if r["test_accuracy"] >= target), None),
        "samples_per_second": rate if rate else (samples / wall if samples and wall else None),
        "bytes": bytes_per_step,
        "wall": wall,
        "cpu_share": cpu_share,
        "staleness": staleness,
        "curve": ([r["wall_seconds"] for r in epochs], [r["test_accuracy"] for r in epochs]),
    }


def fmt(value, spec, missing="-"):
    return missing if value is None else format(value, spec)


def main():
    out, target = sys.argv[1], float(sys.argv[2])
    order = ["one-host", "unlimited", "10gbit", "1gbit", "100mbit"]
    settings = sorted((d for d in os.listdir(out) if os.path.isdir(os.path.join(out, d))),
                      key=lambda d: (order.index(d) if d in order else len(order), d))
    strategies = ["allreduce", "sharing-plain", "sharing-mesh", "parameter_averaging", "downpour"]
    header = (f"{'setting':<11}{'strategy':<21}{'final acc':>10}"
              f"{'to ' + format(100 * target, '.0f') + '% s':>9}{'wall s':>8}{'samples/s':>11}"
              f"{'B/worker/step':>15}{'master CPU':>11}{'staleness':>10}")
    print("\n" + header)
    rows = {}
    for setting in settings:
        for name in strategies:
            run_dir = os.path.join(out, setting, name)
            row, note = summarize(run_dir, target), ""
            if row is None and os.path.isdir(run_dir + "-1epoch"):
                row, note = summarize(run_dir + "-1epoch", target), " (1 epoch)"
            if row is None:
                continue
            row["one_epoch"] = bool(note)
            rows[(setting, name)] = row
            print(f"{setting:<11}{name + note:<21}"
                  f"{fmt(row['accuracy'] and 100 * row['accuracy'], '.2f'):>10}"
                  f"{fmt(row['time_to_target'], '.1f', 'never'):>9}{fmt(row['wall'], '.1f'):>8}"
                  f"{fmt(row['samples_per_second'], '.0f'):>11}{fmt(row['bytes'], '.0f'):>15}"
                  f"{fmt(row['cpu_share'] and 100 * row['cpu_share'], '.0f'):>10}%"
                  f"{fmt(row['staleness'], '.2f'):>10}")

    # The issue's ratios, computed where both sides exist.
    one_host = rows.get(("one-host", "sharing-plain"))
    print()
    for setting in settings:
        sharing = rows.get((setting, "sharing-plain"))
        if not sharing or setting == "one-host":
            continue
        parts = []
        mlp = not setting.startswith("cnn")  # the one-host reference is the MLP
        if mlp and one_host and sharing["accuracy"] is not None and one_host["accuracy"] is not None:
            parts.append(f"accuracy {100 * (sharing['accuracy'] - one_host['accuracy']):+.2f} pp vs one host")
        if mlp and one_host and sharing["samples_per_second"] and one_host["samples_per_second"]:
            parts.append(f"samples/s {sharing['samples_per_second'] / one_host['samples_per_second']:.2f}x one host")
        allreduce = rows.get((setting, "allreduce"))
        if allreduce and sharing["samples_per_second"] and allreduce["samples_per_second"]:
            parts.append(f"{sharing['samples_per_second'] / allreduce['samples_per_second']:.1f}x allreduce's samples/s")
        if allreduce and sharing["time_to_target"] and allreduce["time_to_target"]:
            parts.append(f"time to target {sharing['time_to_target'] / allreduce['time_to_target']:.2f}x allreduce's")
        if (allreduce and not allreduce["one_epoch"] and sharing["accuracy"] is not None
                and allreduce["accuracy"] is not None):
            parts.append(f"accuracy {100 * (sharing['accuracy'] - allreduce['accuracy']):+.2f} pp vs allreduce")
        print(f"{setting}: sharing-plain " + ", ".join(parts))

    try:
        import matplotlib
    except ImportError:  # a machine the bench was staged onto (scripts/dev/stage-for-device)
        print("\nno plot: this python3 has no matplotlib (the table above is complete)")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    mlp_settings = [s for s in settings if not s.startswith("cnn")]
    figure, axes = plt.subplots(1, 2, figsize=(14, 5))
    for (setting, name), row in rows.items():
        wall, accuracy = row["curve"]
        if not wall:
            continue
        axis = axes[1] if setting.startswith("cnn") else axes[0]
        style = "-" if name.startswith("sharing") else "--"
        axis.plot(wall, [100 * a for a in accuracy], style, marker=".", label=f"{setting} {name}")
    for axis, title in zip(axes, ["MLP, 4 nodes by link rate", "CNN, 4 nodes"]):
        axis.axhline(100 * target, color="grey", linestyle=":", linewidth=0.8)
        axis.set_xscale("log")
        axis.set_xlabel("wall time (s, log)")
        axis.set_ylabel("test accuracy (%)")
        axis.set_title(title)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=6, ncol=2)
    png = os.path.join(out, "cluster.png")
    figure.savefig(png, dpi=120, bbox_inches="tight")
    print(f"\nplot: {png}  (settings: {', '.join(mlp_settings)})")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Table and plot for scripts/bench/strategies: reads OUT/<strategy>/metrics.jsonl.

  strategies_report.py OUT TARGET NAME...
"""
import json
import os
import sys

from training_rate import training_samples_per_second


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    out, target, names = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    rows, curves = [], {}
    for name in names:
        path = os.path.join(out, name, "metrics.jsonl")
        if not os.path.exists(path):
            rows.append((name, None))
            continue
        records = load(path)
        epochs = [r for r in records if r["kind"] == "epoch"]
        final = [r for r in records if r["kind"] == "final"]
        steps = [r for r in records if r["kind"] == "step"]
        summaries = [r for r in records if r["kind"].endswith("_summary")]
        curves[name] = ([r["wall_seconds"] for r in epochs], [r["test_accuracy"] for r in epochs])
        reached = next((r["wall_seconds"] for r in epochs if r["test_accuracy"] >= target), None)
        if summaries and "bytes_per_worker_step" in summaries[-1]:
            bytes_per_step = summaries[-1]["bytes_per_worker_step"]
        else:
            values = [r["bytes_per_worker_step"] for r in steps if "bytes_per_worker_step" in r]
            bytes_per_step = sum(values) / len(values) if values else 0.0
        staleness = next((s.get("staleness_mean") for s in summaries if "staleness_mean" in s), None)
        rows.append((name, {
            "accuracy": final[-1]["test_accuracy"] if final else None,
            "time_to_target": reached,
            "samples_per_second": training_samples_per_second(steps),
            "bytes": bytes_per_step,
            "wall": final[-1]["wall_seconds"] if final else None,
            "staleness": staleness,
        }))

    def fmt(value, spec, missing="-"):
        return missing if value is None else format(value, spec)

    print(f"\n{'strategy':<22}{'final acc':>10}{'time to ' + format(100 * target, '.0f') + '%':>13}"
          f"{'wall s':>9}{'samples/s':>11}{'B/worker/step':>15}{'staleness':>11}")
    for name, row in rows:
        if row is None:
            print(f"{name:<22}{'(no result)':>10}")
            continue
        print(f"{name:<22}{fmt(row['accuracy'] and 100 * row['accuracy'], '.2f'):>10}"
              f"{fmt(row['time_to_target'], '.1f', 'never'):>13}{fmt(row['wall'], '.1f'):>9}"
              f"{fmt(row['samples_per_second'], '.0f'):>11}{fmt(row['bytes'], '.0f'):>15}"
              f"{fmt(row['staleness'], '.2f'):>11}")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(figsize=(8, 5))
    for name, (wall, accuracy) in curves.items():
        if wall:
            axes.plot(wall, [100 * a for a in accuracy], marker="o", label=name)
    axes.axhline(100 * target, color="grey", linestyle="--", linewidth=0.8)
    axes.set_xlabel("wall time (s)")
    axes.set_ylabel("test accuracy (%)")
    axes.set_title("Fashion-MNIST: test accuracy against wall time")
    axes.legend()
    axes.grid(alpha=0.3)
    png = os.path.join(out, "accuracy-vs-time.png")
    figure.savefig(png, dpi=120, bbox_inches="tight")
    print(f"\nplot: {png}")


if __name__ == "__main__":
    main()

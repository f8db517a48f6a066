#!/usr/bin/python3
"""Table for scripts/bench/torch_models: reads OUT/<model>/<setting>/<runner>/metrics.jsonl.

  torch_models_report.py MODEL_DIR TARGET MODULE.pt

Settings: one-host, then the link rates; runners: pytorch (one process), ddp (4 processes,
gloo), local, allreduce, sharing (gradshare). Bytes per worker per step: for PyTorch DDP the
dense float32 gradient it all-reduces (4 bytes x parameters), the figure gradshare's allreduce
reports for itself (a ring all-reduce over 4 workers sends 1.5x that per worker, for both);
gradient sharing's are what its workers sent, from its summary record.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_report import fmt, summarize  # noqa: E402

RUNNERS = ["pytorch", "ddp", "local", "allreduce", "sharing"]
LABELS = {"pytorch": "PyTorch 1 process", "ddp": "PyTorch DDP 4", "local": "gradshare local",
          "allreduce": "gradshare allreduce", "sharing": "gradshare sharing"}


def main():
    model_dir, target, module = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    parameters = sum(p.numel() for p in torch.jit.load(module).parameters())
    name = os.path.basename(model_dir.rstrip("/"))
    settings = [s for s in ["one-host", "unlimited", "10gbit", "1gbit", "100mbit"]
                if os.path.isdir(os.path.join(model_dir, s))]
    rows = {}
    print(f"\n{name}: {parameters:,} parameters; time to {100 * target:.0f} %")
    print(f"{'setting':<10}{'runner':<22}{'samples/s':>10}{'to target s':>12}{'accuracy':>10}"
          f"{'bytes/worker/step':>19}")
    for setting in settings:
        for runner in RUNNERS:
            row = summarize(os.path.join(model_dir, setting, runner), target)
            if row is None:
                continue
            if runner == "ddp":
                row["bytes"] = 4 * parameters
            rows[(setting, runner)] = row
            accuracy = f"{100 * row['accuracy']:.2f}%" if row["accuracy"] is not None else "-"
            print(f"{setting:<10}{LABELS[runner]:<22}{fmt(row['samples_per_second'], '.0f'):>10}"
                  f"{fmt(row['time_to_target'], '.1f'):>12}{accuracy:>10}"
                  f"{fmt(row['bytes'], '.0f'):>19}")

    def ratio(a, b, key="samples_per_second"):
        x, y = rows.get(a), rows.get(b)
        return x[key] / y[key] if x and y and x.get(key) and y.get(key) else None

    lines = []
    r = ratio(("one-host", "local"), ("one-host", "pytorch"))
    if r:
        lines.append(f"local / PyTorch one process: {r:.2f}x samples/s")
    for setting in settings:
        r = ratio((setting, "sharing"), (setting, "ddp"))
        a, b = rows.get((setting, "sharing")), rows.get((setting, "ddp"))
        if r:
            gap = (100 * (a["accuracy"] - b["accuracy"])
                   if a["accuracy"] is not None and b["accuracy"] is not None else None)
            lines.append(f"{setting}: sharing / DDP {r:.2f}x samples/s"
                         + (f", accuracy {gap:+.2f} pp" if gap is not None else ""))
    for runner in ["sharing", "ddp"]:
        r = ratio(("100mbit", runner), ("unlimited", runner))
        if r:
            lines.append(f"{runner} at 100mbit / unlimited: {r:.2f}x samples/s")
    for line in lines:
        print("  " + line)


if __name__ == "__main__":
    main()

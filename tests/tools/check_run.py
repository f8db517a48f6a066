#!/usr/bin/env python3
"""Asserts facts about a finished gradshare run directory (used by the ctest training tests).

  check_run.py RUN_DIR [--min-accuracy A] [--loss-falls] [--equivalent] [--min-backpressure N]
                       [--max-bytes-ratio R] [--no-duplicates]

Reads RUN_DIR/metrics.jsonl; exits 1 with one line per failed assertion.
"""
import argparse
import json
import os
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir")
    parser.add_argument("--min-accuracy", type=float)
    parser.add_argument("--loss-falls", action="store_true")
    parser.add_argument("--equivalent", action="store_true")
    parser.add_argument("--min-backpressure", type=int)
    parser.add_argument("--max-bytes-ratio", type=float,
                        help="bytes per worker per step over dense float32 bytes must be below")
    parser.add_argument("--no-duplicates", action="store_true")
    args = parser.parse_args()

    path = os.path.join(args.run_dir, "metrics.jsonl")
    with open(path) as f:
        records = [json.loads(line) for line in f if line.strip()]
    failures = []
    final = [r for r in records if r.get("kind") == "final"]
    steps = [r for r in records if r.get("kind") == "step"]
    summary = [r for r in records if r.get("kind") == "sharing_summary"]
    if not final:
        failures.append("no final record in metrics.jsonl")
    if not os.path.exists(os.path.join(args.run_dir, "model.h5")):
        failures.append("no model.h5 in the run directory")
    if args.min_accuracy is not None and final:
        accuracy = final[-1]["test_accuracy"]
        print(f"final test accuracy {accuracy:.4f} (required >= {args.min_accuracy})")
        if accuracy < args.min_accuracy:
            failures.append(f"test accuracy {accuracy:.4f} < {args.min_accuracy}")
    if args.loss_falls:
        if len(steps) < 2:
            failures.append("fewer than two step records: cannot tell whether the loss falls")
        else:
            first, last = steps[0]["loss"], steps[-1]["loss"]
            print(f"loss {first:.4f} -> {last:.4f}")
            if not last < 0.8 * first:
                failures.append(f"loss did not fall enough: {first:.4f} -> {last:.4f}")
    if args.equivalent or args.min_backpressure is not None or args.max_bytes_ratio or args.no_duplicates:
        if not summary:
            failures.append("no sharing_summary record")
        else:
            s = summary[-1]
            if args.equivalent:
                print(f"model equivalence: max relative difference {s['equivalence_max_relative_difference']:.3e}")
                if not s.get("equivalent"):
                    failures.append("model-equivalence check failed: "
                                    f"{s['equivalence_max_relative_difference']}")
            if args.min_backpressure is not None and s["backpressure"] < args.min_backpressure:
                failures.append(f"back-pressure events {s['backpressure']} < {args.min_backpressure}")
            if args.max_bytes_ratio:
                ratio = s["bytes_per_worker_step"] / s["dense_bytes"]
                print(f"bytes per worker per step / dense = {ratio:.2e}")
                if ratio > args.max_bytes_ratio:
                    failures.append(f"bytes ratio {ratio:.2e} > {args.max_bytes_ratio}")
            if args.no_duplicates and s["duplicates"] != 0:
                failures.append(f"{s['duplicates']} duplicate updates seen")
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

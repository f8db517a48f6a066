#!/usr/bin/env python3
"""Asserts facts about a finished gradshare run directory (used by the ctest training tests).

  check_run.py RUN_DIR [--min-accuracy A] [--loss-falls] [--equivalent]
                       [--max-bytes-ratio R] [--no-duplicates] [--none-applied-twice]
                       [--recoveries N] [--replaced N] [--averaging-identical]
                       [--downpour-consistent] [--staleness-present]
                       [--minibatches-like OTHER_RUN_DIR] [--same-final OTHER_RUN_DIR]
                       [--encoding-debug WORKERS] [--relays-as-tree MAX_CHILDREN]
                       [--aggregated MAX_CHILDREN]

Reads RUN_DIR/metrics.jsonl; exits 1 with one line per failed assertion.
"""
import argparse
import json
import os
import sys


def check_recoveries(records, expected, replaced):
    done = [r for r in records if r.get("kind") == "recovery"]
    print(f"recoveries: {len(done)}: " + "; ".join(
        f"lost {r['lost']} replaced {r['replaced']} in {r['seconds']:.3f} s, "
        f"{r['retrained_minibatches']} minibatches again" for r in done))
    failures = []
    if expected is not None and len(done) != expected:
        failures.append(f"{len(done)} recoveries, expected {expected}")
    if replaced is not None:
        count = sum(len(json.loads(r["replaced"])) for r in done)
        if count != replaced:
            failures.append(f"{count} ranks replaced, expected {replaced}")
    return failures


def check_averaging(records):
    summary = [r for r in records if r.get("kind") == "averaging_summary"]
    if not summary:
        return ["no averaging_summary record"]
    s = summary[-1]
    print(f"averaging: {s['rounds']} rounds, {s.get('verified_rounds', 0)} verified, "
          f"{s.get('mismatched_rounds')} mismatched")
    if "averaging_identical" not in s:
        return ["averaging_identical missing (run with training.verify_averaging=true)"]
    failures = []
    if s["rounds"] < 1 or s["verified_rounds"] != s["rounds"]:
        failures.append(f"{s['verified_rounds']} of {s['rounds']} rounds verified")
    if s["averaging_identical"] is not True or s["mismatched_rounds"] != 0:
        failures.append(f"workers differed after {s['mismatched_rounds']} rounds")
    return failures


def check_downpour(records, steps, consistent, staleness):
    summary = [r for r in records if r.get("kind") == "downpour_summary"]
    if not summary:
        return ["no downpour_summary record"]
    s = summary[-1]
    failures = []
    if consistent:
        print(f"downpour: {s['pushes']} pushes, {s['pushes_applied']} applied, consistent "
              f"{s['consistent']} (max difference {s['consistency_max_difference']})")
        if s["consistent"] is not True:
            failures.append("a worker's final parameters differ from the servers' "
                            f"(max difference {s['consistency_max_difference']})")
        if s.get("pushes_applied_once") is not True:
            failures.append("a server applied a worker's pushes other than exactly once "
                            f"(pushes_applied_once {s.get('pushes_applied_once')})")
        # The reported count is exact only without a recovery: a lost worker's last report, and
        # reports in flight at a repair, are lost (the seq check above is exact regardless).
        recovered = any(r.get("kind") == "recovery" for r in records)
        if s["pushes"] < 1 or (not recovered and s["pushes_applied"] != s["pushes"]):
            failures.append(f"{s['pushes_applied']} of {s['pushes']} pushes applied")
    if staleness:
        mean, worst = s.get("staleness_mean"), s.get("staleness_max")
        print(f"staleness: mean {mean} max {worst} over {s.get('acknowledged_pushes')} pushes")
        if not isinstance(mean, (int, float)) or not isinstance(worst, int):
            failures.append(f"summary staleness missing: mean {mean} max {worst}")
        elif s["acknowledged_pushes"] < 1 or not 0 <= mean <= worst:
            failures.append(f"implausible staleness: mean {mean} max {worst} over "
                            f"{s['acknowledged_pushes']} pushes")
        if not steps or any("staleness_mean" not in r or "staleness_max" not in r for r in steps):
            failures.append("step records without staleness_mean / staleness_max")
        elif not any(isinstance(r["staleness_mean"], (int, float)) for r in steps):
            failures.append("no step record has a staleness value")
    return failures


def check_same_final(records, other_dir):
    """The final evaluation equals OTHER_RUN_DIR's, to the last printed digit (the same model)."""
    def final(recs):
        found = [r for r in recs if r.get("kind") == "final"]
        return (found[-1]["test_accuracy"], found[-1]["test_loss"]) if found else None
    with open(os.path.join(other_dir, "metrics.jsonl")) as f:
        other = final(json.loads(line) for line in f if line.strip())
    mine = final(records)
    print(f"final accuracy and loss: {mine}, other run {other}")
    if mine is None or other is None:
        return ["a run has no final record"]
    return [] if mine == other else [f"final evaluation {mine} differs from the other run's {other}"]


def check_minibatches(records, other_dir):
    """Every epoch trained at least as many minibatches as the same epoch of OTHER_RUN_DIR."""
    def per_epoch(recs):
        counts = {}
        for r in recs:
            if r.get("kind") == "epoch":
                counts[r["epoch"]] = r.get("minibatches")
            elif r.get("kind") == "final" and "minibatches" in r:
                counts["last"] = r["minibatches"]  # the last epoch, where the final record counts it
        return counts
    with open(os.path.join(other_dir, "metrics.jsonl")) as f:
        other = per_epoch(json.loads(line) for line in f if line.strip())
    mine = per_epoch(records)
    print("minibatches per epoch: " + ", ".join(
        f"epoch {e}: {mine.get(e)} (other run {other[e]})" for e in sorted(other, key=str)))
    failures = []
    for epoch, count in sorted(other.items(), key=lambda item: str(item[0])):
        if count is None:
            failures.append(f"epoch {epoch} of the other run has no minibatch count")
        elif mine.get(epoch) is None:
            failures.append(f"epoch {epoch}: no epoch record with a minibatch count")
        elif mine[epoch] < count:
            failures.append(f"epoch {epoch}: {mine[epoch]} minibatches trained, {count} in the other run")
    return failures


def check_encoding_debug(records, workers):
    """logging.encoding_debug: records from every worker, with plausible values."""
    debug = [r for r in records if r.get("kind") == "encoding_debug"]
    ranks = sorted({r["rank"] for r in debug})
    print(f"encoding_debug: {len(debug)} records from ranks {ranks}")
    failures = []
    if ranks != list(range(1, workers + 1)):
        failures.append(f"encoding_debug records from ranks {ranks}, expected 1..{workers}")
    for r in debug:
        where = f"rank {r['rank']} at step {r['step']}"
        if r["messages"] > 0 and not 0 < r["tau_min"] <= r["tau_max"]:
            failures.append(f"{where}: tau {r['tau_min']}..{r['tau_max']}")
        if r["messages"] > 0 and not 0 < r["sparsity"] < 1:
            failures.append(f"{where}: sparsity {r['sparsity']}")
        if r["sparse"] + r["bitmap"] + r["compressed"] != r["messages"]:
            failures.append(f"{where}: formats {r['sparse']}+{r['bitmap']}+{r['compressed']} "
                            f"!= {r['messages']} messages")
        if not r["residual_l2"] >= r["residual_max_abs"] > 0:
            failures.append(f"{where}: residual L2 {r['residual_l2']}, max |r| {r['residual_max_abs']}")
        if r["messages"] > 0 and r["bytes"] <= 0:
            failures.append(f"{where}: {r['messages']} messages in {r['bytes']} bytes")
    return failures[:10]


def check_checkpoints_after_records(records, epochs):
    """An asynchronous master evaluates an epoch before any checkpoint past its end is written:
    a master lost between the two would otherwise resume past an epoch nobody recorded."""
    recorded, failures = set(), []
    for r in records:
        if r.get("kind") == "epoch":
            recorded.add(r["epoch"])
        elif r.get("kind") == "checkpoint":
            missing = [e for e in range(1, min(r["epochs_done"], epochs - 1) + 1) if e not in recorded]
            if missing:
                failures.append(f"checkpoint at step {r['step']} holds {r['epochs_done']} whole "
                                f"epochs, written before the record of epoch {missing}")
    if not any(r.get("kind") == "checkpoint" for r in records):
        failures.append("no checkpoint record")
    return failures


def check_relays(records, max_children):
    """In the breadth-first tree (rank r's parent is (r - 1) // max_children) every message
    reaches every replica once: a replica with L links forwards the others' messages L - 1
    times each; the master publishes nothing."""
    relays = {r["rank"]: r for r in records if r.get("kind") == "relays"}
    failures = []
    ranks = len(relays)
    if ranks < 2 or sorted(relays) != list(range(ranks)):
        return [f"relays records of ranks {sorted(relays)}"]
    total = sum(r["published"] for r in relays.values())
    depth = lambda r: 0 if r == 0 else 1 + depth((r - 1) // max_children)
    for rank, r in sorted(relays.items()):
        children = sum(1 for c in range(1, ranks) if (c - 1) // max_children == rank)
        links = children + (1 if rank > 0 else 0)
        expected = (total - r["published"]) * (links - 1)
        if r["links"] != links or r["relayed"] != expected:
            failures.append(f"rank {rank}: {r['links']} links, {r['relayed']} relayed; the tree "
                            f"predicts {links} links, {expected} relayed")
    busiest = max((r for r in relays if r > 0), key=lambda r: relays[r]["relayed"])
    print(f"relays as the tree predicts: {ranks} ranks, depth {max(map(depth, relays))}, "
          f"{total} messages; master {relays[0]['relayed']} copies over {relays[0]['links']} "
          f"links, busiest worker {busiest} {relays[busiest]['relayed']} over "
          f"{relays[busiest]['links']}" + ("" if not failures else f"; {len(failures)} ranks differ"))
    return failures[:5]


def check_aggregated(records, max_children):
    """Aggregating (topology.aggregate) in the breadth-first tree: every rank has the links the
    tree predicts and forwards nothing (what it sends is its links' sums); every link carried at
    least one message each way (the drain's flush round sends a final on each)."""
    relays = {r["rank"]: r for r in records if r.get("kind") == "relays"}
    ranks = len(relays)
    if ranks < 2 or sorted(relays) != list(range(ranks)):
        return [f"relays records of ranks {sorted(relays)}"]
    failures = []
    for rank, r in sorted(relays.items()):
        children = sum(1 for c in range(1, ranks) if (c - 1) // max_children == rank)
        links = children + (1 if rank > 0 else 0)
        if r["links"] != links or r["relayed"] != 0:
            failures.append(f"rank {rank}: {r['links']} links, {r['relayed']} forwarded; "
                            f"aggregating in the tree: {links} links, none forwarded")
        if r["messages_sent"] < links or r["messages_received"] < links:
            failures.append(f"rank {rank}: {r['messages_sent']} sent, {r['messages_received']} "
                            f"received over {links} links: a flush round sends one each way")
    published = sum(r["published"] for r in relays.values())
    leaves = [rank for rank in relays if relays[rank]["links"] == 1 and rank > 0]
    print(f"aggregated in the tree: {ranks} ranks, {published} updates published; leaves "
          "received " + ", ".join(f"{rank}: {relays[rank]['messages_received']}" for rank in leaves)
          + " messages (relaying: each the others' updates)")
    return failures[:5]


def check_memory(records, ranks, limit):
    """Every finished run ends with the peak resident memory of the master (and of the ranks
    that reported theirs), each a plausible figure; with RANKS, of every rank; with LIMIT, each
    at most that."""
    memory = {r["rank"]: r["peak_resident_bytes"] for r in records if r.get("kind") == "memory"}
    failures = []
    if 0 not in memory:
        failures.append("no peak-memory record of the master")
    for rank, peak in sorted(memory.items()):
        if not 1e6 < peak < 1e12:
            failures.append(f"rank {rank}: implausible peak resident memory {peak} B")
        if limit is not None and peak > limit:
            failures.append(f"rank {rank}: peak resident memory {peak / 1e6:.0f} MB over "
                            f"{limit / 1e6:.0f} MB")
    if ranks is not None:
        print("peak resident memory (MB):",
              ", ".join(f"{rank} {peak / 1e6:.0f}" for rank, peak in sorted(memory.items())))
        if sorted(memory) != list(range(ranks)):
            failures.append(f"peak-memory records of ranks {sorted(memory)}, expected 0..{ranks - 1}")
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir")
    parser.add_argument("--min-accuracy", type=float)
    parser.add_argument("--loss-falls", action="store_true")
    parser.add_argument("--equivalent", action="store_true")
    parser.add_argument("--max-bytes-ratio", type=float,
                        help="bytes per worker per step over dense float32 bytes must be below")
    parser.add_argument("--no-duplicates", action="store_true")
    parser.add_argument("--none-applied-twice", action="store_true",
                        help="no replica applied an update twice (sharing summary)")
    parser.add_argument("--recoveries", type=int,
                        help="exactly this many recoveries from process failures")
    parser.add_argument("--replaced", type=int,
                        help="this many logical ranks were given to replacements in all")
    parser.add_argument("--conservation", type=float,
                        help="workers' sent quanta + residual must equal their summed updates "
                             "to this relative error (needs encoding.check_conservation=true)")
    parser.add_argument("--averaging-identical", action="store_true",
                        help="parameter averaging: every worker held bit-identical parameters "
                             "after every round (needs training.verify_averaging=true)")
    parser.add_argument("--downpour-consistent", action="store_true",
                        help="downpour: every push was applied exactly once (by seq, per worker "
                             "and shard) and after the final pull every worker held exactly the "
                             "servers' parameters")
    parser.add_argument("--staleness-present", action="store_true",
                        help="downpour: staleness mean/max in the step records and the summary")
    parser.add_argument("--same-final", metavar="OTHER_RUN_DIR",
                        help="the final test accuracy and loss equal OTHER_RUN_DIR's")
    parser.add_argument("--minibatches-like", metavar="OTHER_RUN_DIR",
                        help="every epoch trained at least as many minibatches as in that run")
    parser.add_argument("--encoding-debug", type=int, metavar="WORKERS",
                        help="logging.encoding_debug records from workers 1..WORKERS, plausible")
    parser.add_argument("--checkpoints-after-records", type=int, metavar="EPOCHS",
                        help="every checkpoint written after the records of the epochs it holds "
                             "whole (a run of EPOCHS epochs, whose last has the final record)")
    parser.add_argument("--memory-ranks", type=int, metavar="RANKS",
                        help="a peak-memory record from every rank 0..RANKS-1")
    parser.add_argument("--relays-as-tree", type=int, metavar="MAX_CHILDREN",
                        help="every rank's links and relayed copies as the breadth-first tree "
                             "with MAX_CHILDREN predicts (a run without failures)")
    parser.add_argument("--aggregated", type=int, metavar="MAX_CHILDREN",
                        help="topology.aggregate: every rank's links as the breadth-first tree "
                             "with MAX_CHILDREN predicts, nothing forwarded, every link used")
    parser.add_argument("--max-peak-memory", type=int, metavar="BYTES",
                        help="every rank's peak resident memory at most BYTES")
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
    if (args.equivalent or args.max_bytes_ratio
            or args.no_duplicates or args.conservation is not None or args.none_applied_twice):
        if not summary:
            failures.append("no sharing_summary record")
        else:
            s = summary[-1]
            if args.equivalent:
                print(f"model equivalence: max relative difference {s['equivalence_max_relative_difference']:.3e}")
                if not s.get("equivalent"):
                    failures.append("model-equivalence check failed: "
                                    f"{s['equivalence_max_relative_difference']}")
            print(f"back-pressure events: {s['backpressure']}")
            if args.max_bytes_ratio:
                ratio = s["bytes_per_worker_step"] / s["dense_bytes"]
                print(f"bytes per worker per step / dense = {ratio:.2e}")
                if ratio > args.max_bytes_ratio:
                    failures.append(f"bytes ratio {ratio:.2e} > {args.max_bytes_ratio}")
            if args.conservation is not None:
                error = s["conservation_max_relative_error"]
                print(f"conservation: max relative error {error:.3e}")
                if error < 0 or error > args.conservation:
                    failures.append(f"conservation error {error} (required 0 <= error <= {args.conservation})")
            if args.no_duplicates and s["duplicates"] != 0:
                failures.append(f"{s['duplicates']} duplicate updates seen")
            if args.none_applied_twice:
                print(f"updates applied twice: {s.get('applied_twice')}")
                if s.get("applied_twice") != 0:
                    failures.append(f"updates applied twice: {s.get('applied_twice')}")
    if args.recoveries is not None or args.replaced is not None:
        failures += check_recoveries(records, args.recoveries, args.replaced)
    if args.averaging_identical:
        failures += check_averaging(records)
    if args.downpour_consistent or args.staleness_present:
        failures += check_downpour(records, steps, args.downpour_consistent,
                                   args.staleness_present)
    if args.encoding_debug:
        failures += check_encoding_debug(records, args.encoding_debug)
    if final:
        failures += check_memory(records, args.memory_ranks, args.max_peak_memory)
    if args.relays_as_tree:
        failures += check_relays(records, args.relays_as_tree)
    if args.aggregated:
        failures += check_aggregated(records, args.aggregated)
    if args.checkpoints_after_records:
        failures += check_checkpoints_after_records(records, args.checkpoints_after_records)
    if args.minibatches_like:
        failures += check_minibatches(records, args.minibatches_like)
    if args.same_final:
        failures += check_same_final(records, args.same_final)
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

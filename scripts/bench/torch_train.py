#!/usr/bin/python3
"""torch_train.py: PyTorch's own training of a TorchScript module on Fashion-MNIST, one process
or DDP (gloo), for scripts/bench/torch_models to set beside gradshare on the same module.

  torch_train.py MODULE.pt RUN_DIR --config CONFIG.yaml [--epochs E] [--threads T]
                 [--train-subset N] [--test-subset N] [--seed S] [--master-addr A --master-port P]

The module file is the one gradshare trains (the same initial weights); data as gradshare's
data.normalize: scale (pixels to [0, 1] by the training set's range); Adam with the gradshare
config's learning rate, beta1, beta2 and epsilon, its constant or cosine schedule (over the
fraction of the run done); every worker takes minibatches of training.batch_size (as
gradshare's per-worker minibatch) from its shard of the epoch's shuffled order. Launched by mpirun (OMPI_COMM_WORLD_RANK/SIZE set)
with more than one process, it trains with DistributedDataParallel over gloo, rank 0 at
--master-addr. Rank 0 evaluates on the test set after every epoch and writes RUN_DIR/
metrics.jsonl in gradshare's record format (step, epoch, final), so one report reads both.

Under DDP the gradients are all-reduced by DDP's own reducer (--comm-hook builtin, the default)
or travel through a communication hook: allreduce (PyTorch's default all-reduce, as a hook),
fp16 (halves before the all-reduce) or powersgd (low rank --powersgd-rank, vanilla all-reduce
for the first --powersgd-warmup steps: by default a tenth of the run, PyTorch's advice). Every
all-reduce a hook starts is counted (the reducer's is the dense gradient), so the final summary
record ("ddp_summary") gives the bytes each worker all-reduced per step over the whole run, the
figure gradshare reports for its own strategies. --set key.path=value overrides the config as
gradshare's command line does (optimizer.* and training.batch_size are read).
"""
import argparse
import gzip
import json
import math
import os
import sys
import time


def _blas_threads():
    """--threads, read before numpy and torch load OpenBLAS."""
    for i, arg in enumerate(sys.argv):
        if arg == "--threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if arg.startswith("--threads="):
            return arg.split("=", 1)[1]
    return "1"


# OpenBLAS keeps a thread pool of its own, sized by the cores at load time; torch.set_num_threads
# does not size it. Left alone, one process multiplied the LSTM's matrices on both of this
# machine's cores (166 % CPU) while a gradshare rank, whose compute.threads sizes OpenBLAS too,
# used one: "PyTorch one process" was then 1.4x gradshare local, and 0.9x with one thread each.
os.environ["OPENBLAS_NUM_THREADS"] = _blas_threads()
os.environ["OMP_NUM_THREADS"] = _blas_threads()

import numpy as np  # noqa: E402  (after the thread counts above)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import yaml  # noqa: E402
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook  # noqa: E402


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(data_dir, train_subset, test_subset):
    def split(prefix, subset):
        x = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz")).astype(np.float32)
        y = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz")).astype(np.int64)
        if subset:
            x, y = x[:subset], y[:subset]
        return x.reshape(len(x), -1), y
    (xt, yt), (xe, ye) = split("train", train_subset), split("t10k", test_subset)
    low, high = xt.min(), xt.max()
    scale = 1.0 / (high - low) if high > low else 1.0
    return (torch.from_numpy((xt - low) * scale), torch.from_numpy(yt),
            torch.from_numpy((xe - low) * scale), torch.from_numpy(ye))


def evaluate(module, x, y, shape):
    module.eval()
    correct, loss = 0, 0.0
    with torch.no_grad():
        for first in range(0, len(x), 256):
            logits = module(x[first:first + 256].reshape([-1] + shape))
            target = y[first:first + 256]
            loss += torch.nn.functional.cross_entropy(logits, target, reduction="sum").item()
            correct += (logits.argmax(1) == target).sum().item()
    module.train()
    return correct / len(x), loss / len(x)


def apply_overrides(config, overrides):
    for override in overrides:
        path, sep, value = override.partition("=")
        if not sep:
            raise SystemExit(f"torch_train.py: --set {override}: expected key.path=value")
        node = config
        keys = path.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = yaml.safe_load(value)


class AllReduceCounter:
    """Counts the bytes of every all-reduce started through torch.distributed.all_reduce (the
    communication hooks call it) on this rank."""

    def __init__(self):
        self.bytes = 0
        self.original = dist.all_reduce

        def counted(tensor, *args, **kwargs):
            self.bytes += tensor.numel() * tensor.element_size()
            return self.original(tensor, *args, **kwargs)
        dist.all_reduce = counted


def register_hook(model, args, steps):
    if args.comm_hook == "allreduce":
        model.register_comm_hook(None, default_hooks.allreduce_hook)
    elif args.comm_hook == "fp16":
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    else:
        warmup = args.powersgd_warmup if args.powersgd_warmup is not None else max(2, steps // 10)
        state = powerSGD_hook.PowerSGDState(process_group=None,
                                            matrix_approximation_rank=args.powersgd_rank,
                                            start_powerSGD_iter=max(2, warmup))
        model.register_comm_hook(state, powerSGD_hook.powerSGD_hook)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("module")
    parser.add_argument("run_dir")
    parser.add_argument("--config", required=True)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--train-subset", type=int, default=0)
    parser.add_argument("--test-subset", type=int, default=0)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--input-shape", default="1,28,28")
    parser.add_argument("--master-addr", default="127.0.0.1")
    parser.add_argument("--master-port", type=int, default=29517)
    parser.add_argument("--log-every", type=int, default=20)
    parser.add_argument("--comm-hook", choices=["builtin", "allreduce", "fp16", "powersgd"],
                        default="builtin")
    parser.add_argument("--powersgd-rank", type=int, default=2)
    parser.add_argument("--powersgd-warmup", type=int)
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    args = parser.parse_args()

    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    shape = [int(d) for d in args.input_shape.split(",")]
    module = torch.jit.load(args.module)
    module.train()
    with open(args.config) as f:
        config = yaml.safe_load(f)
    apply_overrides(config, args.overrides)
    batch_size = config.get("training", {}).get("batch_size", 64)
    x, y, x_test, y_test = load(args.data_dir, args.train_subset, args.test_subset)
    model, counter = module, None
    if world > 1:
        dist.init_process_group("gloo", init_method=f"tcp://{args.master_addr}:{args.master_port}",
                                rank=rank, world_size=world)
        if args.comm_hook == "builtin":
            model = torch.nn.parallel.DistributedDataParallel(module)
        else:
            # One bucket (the first is 1 MB by default): with two, PowerSGD's all-reduces over
            # gloo went out in different orders on different ranks (torch 1.13:
            # "op.preamble.length <= op.nbytes" on the CNN). Every hook runs with it, so they
            # compare on one footing.
            dist._DEFAULT_FIRST_BUCKET_BYTES = 25 * 1024 * 1024
            model = torch.nn.parallel.DistributedDataParallel(module, bucket_cap_mb=25)
            counter = AllReduceCounter()
            register_hook(model, args, args.epochs * (len(x) // world // batch_size))
    opt = config.get("optimizer", {})
    if opt.get("type", "adam") != "adam" or opt.get("schedule", "constant") not in ("constant", "cosine"):
        raise SystemExit("torch_train.py: supports Adam with a constant or cosine schedule")
    lr = opt.get("learning_rate", 1e-3)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr,
                                 betas=(opt.get("beta1", 0.9), opt.get("beta2", 0.999)),
                                 eps=opt.get("epsilon", 1e-8))
    cosine = opt.get("schedule", "constant") == "cosine"
    floor = opt.get("min_learning_rate", 0.0)
    records = []
    start = time.time()

    def record(line):
        line["t"] = round(time.time() - start, 3)
        records.append(line)

    step, samples_since, since = 0, 0, time.time()
    for epoch in range(args.epochs):
        order = torch.from_numpy(np.random.default_rng(args.seed + epoch).permutation(len(x)))
        shard = order[rank::world]
        batches = len(shard) // batch_size
        for b in range(batches):
            if cosine:
                done = (epoch + b / batches) / args.epochs
                for group in optimizer.param_groups:
                    group["lr"] = floor + (lr - floor) * 0.5 * (1 + math.cos(math.pi * done))
            index = shard[b * batch_size:(b + 1) * batch_size]
            logits = model(x[index].reshape([-1] + shape))
            loss = torch.nn.functional.cross_entropy(logits, y[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            samples_since += len(index) * world
            if rank == 0 and step % args.log_every == 0:
                now = time.time()
                record({"kind": "step", "step": step, "loss": loss.item(),
                        "wall_seconds": now - start,
                        "samples_per_second": samples_since / (now - since)})
                samples_since, since = 0, now
        if rank == 0:
            accuracy, test_loss = evaluate(module, x_test, y_test, shape)
            record({"kind": "epoch", "epoch": epoch + 1, "step": step,
                    "wall_seconds": time.time() - start, "test_accuracy": accuracy,
                    "test_loss": test_loss, "samples": batches * batch_size * world,
                    "minibatches": batches * world})
            # The window that spans the evaluation keeps it, as gradshare's step records do.
            # It used to start again after it while still counting the steps before it:
            # 50,469 samples/s for that window of a DDP run of the LSTM, against 6,600.
            print(f"epoch {epoch + 1}: test accuracy {100 * accuracy:.2f}% "
                  f"({time.time() - start:.1f} s)", flush=True)
    if rank == 0 and world > 1:
        dense = sum(p.numel() * p.element_size() for p in module.parameters() if p.requires_grad)
        sent = counter.bytes / step if counter and step else dense
        record({"kind": "ddp_summary", "steps": step * world, "comm_hook": args.comm_hook,
                "bytes_per_worker_step": sent})
    if rank == 0:
        last = [r for r in records if r["kind"] == "epoch"][-1]
        record({"kind": "final", "test_accuracy": last["test_accuracy"],
                "test_loss": last["test_loss"], "wall_seconds": time.time() - start})
        os.makedirs(args.run_dir, exist_ok=True)
        with open(os.path.join(args.run_dir, "metrics.jsonl"), "w") as f:
            for line in records:
                f.write(json.dumps(line) + "\n")
    if world > 1:
        # Every rank past the barrier has nothing left to send; gloo's own teardown
        # (destroy_process_group, the interpreter's exit) now and then left a rank spinning
        # after its peers had gone, so the process ends here.
        dist.barrier()
        sys.stdout.flush()
        os._exit(0)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""engine_torch.py: PyTorch's training samples/s for gradshare experiment configs.

The twin of build/bench/engine_bench, for scripts/bench/engine: builds the same network from
the config's model section (dense/conv2d/maxpool2d/flatten/dropout, the same activations),
the same optimizer and batch size, trains on random data (16 random batches, cycled) with one
step = zero_grad + forward + cross-entropy + backward + optimizer.step, and reports the best
of --rounds timed rounds, in the same key=value format.

usage: engine_torch.py [--seconds S] [--rounds R] [--threads N] [--batch B] CONFIG.yaml ...
"""
import argparse
import math
import os
import sys
import time

import torch
import yaml


def activation(name, alpha):
    return {
        "none": None,
        "relu": torch.nn.ReLU(),
        "leaky_relu": torch.nn.LeakyReLU(alpha),
        "elu": torch.nn.ELU(alpha),
        "tanh": torch.nn.Tanh(),
        "sigmoid": torch.nn.Sigmoid(),
    }[name]


def build_model(model_cfg):
    shape = list(model_cfg.get("input_shape", [1, 28, 28]))
    layers = []
    for spec in model_cfg["layers"]:
        kind = spec["type"]
        act = activation(spec.get("activation", "none"), spec.get("alpha", 0.01))
        if kind == "dense":
            if len(shape) > 1:  # gradshare flattens an image input to a dense layer
                layers.append(torch.nn.Flatten())
            layers.append(torch.nn.Linear(math.prod(shape), spec["units"]))
            shape = [spec["units"]]
        elif kind == "conv2d":
            k, s, p = spec.get("kernel", 3), spec.get("stride", 1), spec.get("padding", 0)
            layers.append(torch.nn.Conv2d(shape[0], spec["filters"], k, stride=s, padding=p))
            shape = [spec["filters"], (shape[1] + 2 * p - k) // s + 1,
                     (shape[2] + 2 * p - k) // s + 1]
        elif kind == "maxpool2d":
            pool = spec.get("pool", 2)
            stride = spec.get("stride", 0) or pool
            layers.append(torch.nn.MaxPool2d(pool, stride))
            shape = [shape[0], (shape[1] - pool) // stride + 1, (shape[2] - pool) // stride + 1]
        elif kind == "flatten":
            layers.append(torch.nn.Flatten())
            shape = [math.prod(shape)]
        elif kind == "dropout":
            layers.append(torch.nn.Dropout(spec.get("rate", 0.5)))
        else:
            sys.exit(f"engine_torch.py: unknown layer type {kind}")
        if act is not None:
            layers.append(act)
    return torch.nn.Sequential(*layers), list(model_cfg.get("input_shape", [1, 28, 28]))


def build_optimizer(params, opt_cfg, l2):
    kind = opt_cfg.get("type", "adam")
    lr = opt_cfg.get("learning_rate", 1e-3)
    eps = opt_cfg.get("epsilon", 1e-8)
    betas = (opt_cfg.get("beta1", 0.9), opt_cfg.get("beta2", 0.999))
    momentum = opt_cfg.get("momentum", 0.9)
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=l2)
    if kind in ("momentum", "nesterov"):
        return torch.optim.SGD(params, lr=lr, momentum=momentum, nesterov=kind == "nesterov",
                               weight_decay=l2)
    if kind == "adam":
        return torch.optim.Adam(params, lr=lr, betas=betas, eps=eps, weight_decay=l2)
    if kind == "adamw":
        return torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps,
                                 weight_decay=opt_cfg.get("weight_decay", 0.0))
    if kind == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr, alpha=opt_cfg.get("rms_decay", 0.95), eps=eps,
                                   weight_decay=l2)
    if kind == "adagrad":
        return torch.optim.Adagrad(params, lr=lr, eps=eps, weight_decay=l2)
    sys.exit(f"engine_torch.py: unknown optimizer {kind}")


def bench(path, args):
    with open(path) as f:
        cfg = yaml.safe_load(f)
    model_cfg = cfg["model"]
    batch = args.batch or cfg.get("training", {}).get("batch_size", 64)
    classes = model_cfg.get("num_classes", 10)
    model, input_shape = build_model(model_cfg)
    model.train()
    optimizer = build_optimizer(model.parameters(), cfg.get("optimizer", {}),
                                model_cfg.get("l2", 0.0))
    loss_fn = torch.nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(1)
    batches = [(torch.rand([batch] + input_shape, generator=gen),
                torch.randint(0, classes, (batch,), generator=gen)) for _ in range(16)]
    step_index = 0

    def step():
        nonlocal step_index
        x, y = batches[step_index % len(batches)]
        step_index += 1
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()

    start = time.perf_counter()
    warm = 0
    while warm < 5 or time.perf_counter() - start < 0.3:
        step()
        warm += 1
    best = None
    for _ in range(args.rounds):
        steps = 0
        start = time.perf_counter()
        while time.perf_counter() - start < args.seconds / args.rounds:
            step()
            steps += 1
        per_step = (time.perf_counter() - start) / steps
        best = per_step if best is None else min(best, per_step)
    name = os.path.splitext(os.path.basename(path))[0]
    params = sum(p.numel() for p in model.parameters())
    print(f"model={name} batch={batch} threads={torch.get_num_threads()} parameters={params} "
          f"samples_per_s={batch / best:.1f} step_ms={best * 1e3:.3f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch", type=int, default=0)
    parser.add_argument("configs", nargs="+")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    for path in args.configs:
        bench(path, args)


if __name__ == "__main__":
    main()

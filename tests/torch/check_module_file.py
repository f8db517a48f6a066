#!/usr/bin/python3
"""check_module_file.py MODEL_PT MODEL_H5 DATA_DIR TEST_SAMPLES PREDICTIONS

A run's model.pt as a PyTorch user gets it: torch.jit.load opens it, its gradshare.json says
how to normalise the raw test pixels, and its predictions on the first TEST_SAMPLES test
images equal `gradshare eval`'s (PREDICTIONS, one class a line) on every sample. Its tensors
equal model.h5's /model/<module path>/<name> datasets.
"""
import gzip
import json
import os
import sys

import h5py
import numpy as np
import torch


def idx_images(data_dir, count):
    for name in ("t10k-images-idx3-ubyte", "t10k-images-idx3-ubyte.gz"):
        path = os.path.join(data_dir, name)
        if os.path.exists(path):
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rb") as f:
                raw = f.read()
            n, rows, cols = (int.from_bytes(raw[i:i + 4], "big") for i in (4, 8, 12))
            pixels = np.frombuffer(raw, np.uint8, offset=16).reshape(n, rows * cols)
            return pixels[:count].astype(np.float32)
    sys.exit(f"no t10k images in {data_dir}")


def main():
    model_pt, model_h5, data_dir, count, predictions_path = sys.argv[1:]
    extra = {"gradshare.json": ""}
    module = torch.jit.load(model_pt, _extra_files=extra)
    meta = json.loads(extra["gradshare.json"])
    module.eval()
    x = idx_images(data_dir, int(count))
    x = (x - meta["normalize_offset"]) * meta["normalize_scale"]
    x = torch.from_numpy(x).reshape([-1] + meta["input_shape"])
    with torch.no_grad():
        ours = module(x).argmax(1).numpy()
    theirs = np.loadtxt(predictions_path, dtype=np.int64)
    if ours.shape != theirs.shape:
        sys.exit(f"{len(ours)} predictions from model.pt, {len(theirs)} from gradshare eval")
    differ = int((ours != theirs).sum())
    print(f"model.pt and gradshare eval agree on {len(ours) - differ} of {len(ours)} samples "
          f"(normalize {meta['normalize']}: offset {meta['normalize_offset']}, "
          f"scale {meta['normalize_scale']})")
    if differ:
        sys.exit(1)
    with h5py.File(model_h5, "r") as f:
        for name, tensor in list(module.named_parameters()) + list(module.named_buffers()):
            path, _, leaf = name.rpartition(".")
            saved = f[f"model/{path or 'module'}/{leaf}"][...]
            if not np.array_equal(saved, tensor.detach().float().numpy().reshape(saved.shape)):
                sys.exit(f"model.h5's {name} differs from model.pt's")
    print("model.pt's tensors equal model.h5's")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""check_onnx.py: checks a model written by `gradshare export` with the ONNX project's own
checker (Debian's python3-onnx) and hands its metadata_props to onnx_predict.js as JSON.

  check_onnx.py MODEL.onnx METADATA_OUT.json DATA_DIR TRAIN_SUBSET OPS

Checks onnx.checker.check_model with full_check (strict shape inference), IR version 7, opset
13, the op types of the nodes (OPS, comma-separated), the output shape [batch, num_classes],
the metadata keys, and that normalize_offset and normalize_scale are the statistics of the first
TRAIN_SUBSET raw training images as computed here with numpy (scale: min and 1 / (max - min);
standardize: mean and 1 / standard deviation). Prints FAIL and exits 1 otherwise.
"""
import gzip
import json
import sys

import numpy as np
import onnx

KEYS = ["gradshare_version", "trained_with_version", "source_model", "dataset", "input_shape",
        "num_classes", "class_labels", "normalize", "normalize_offset", "normalize_scale"]


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def expected_normalization(data_dir, subset, mode):
    with gzip.open(data_dir + "/train-images-idx3-ubyte.gz") as f:
        raw = f.read()
    count, rows, cols = (int.from_bytes(raw[i:i + 4], "big") for i in (4, 8, 12))
    n = min(subset, count) if subset > 0 else count
    x = np.frombuffer(raw, np.uint8, n * rows * cols, 16).astype(np.float64)
    if mode == "scale":
        return x.min(), 1.0 / (x.max() - x.min())
    if mode == "standardize":
        return x.mean(), 1.0 / x.std()
    return 0.0, 1.0


def main():
    path, metadata_out, data_dir, subset, ops = sys.argv[1:6]
    model = onnx.load(path)
    try:
        onnx.checker.check_model(model, full_check=True)
    except onnx.checker.ValidationError as error:
        fail(f"{path}: onnx.checker: {error}")
    if model.ir_version != 7:
        fail(f"ir_version {model.ir_version}, expected 7")
    opsets = {o.domain: o.version for o in model.opset_import}
    if opsets != {"": 13}:
        fail(f"opset_import {opsets}, expected {{'': 13}}")
    got_ops = ",".join(node.op_type for node in model.graph.node)
    if got_ops != ops:
        fail(f"nodes {got_ops}, expected {ops}")

    metadata = {p.key: p.value for p in model.metadata_props}
    missing = [k for k in KEYS if k not in metadata]
    if missing:
        fail(f"metadata_props lack {missing}")
    classes = int(metadata["num_classes"])
    if len(json.loads(metadata["class_labels"])) != classes:
        fail(f"class_labels {metadata['class_labels']} for {classes} classes")

    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    output = inferred.graph.output[0]
    dims = [d.dim_param or d.dim_value for d in output.type.tensor_type.shape.dim]
    if output.name != "probabilities" or dims != ["batch", classes]:
        fail(f"output {output.name} {dims}, expected probabilities ['batch', {classes}]")

    offset, scale = expected_normalization(data_dir, int(subset), metadata["normalize"])
    got_offset, got_scale = float(metadata["normalize_offset"]), float(metadata["normalize_scale"])
    if not (np.isclose(got_offset, offset, rtol=1e-6) and np.isclose(got_scale, scale, rtol=1e-6)):
        fail(f"normalisation ({got_offset}, {got_scale}) in the metadata, the first {subset} "
             f"training images give ({offset}, {scale}) for {metadata['normalize']}")

    with open(metadata_out, "w") as f:
        json.dump(metadata, f)
    print(f"{path}: onnx.checker passed; {len(model.graph.node)} nodes; normalize "
          f"{metadata['normalize']} offset {got_offset} scale {got_scale} (numpy: {offset:.9g}, "
          f"{scale:.9g})")


if __name__ == "__main__":
    main()

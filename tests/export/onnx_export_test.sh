#!/usr/bin/env bash
# ONNX export end to end (issue 18): trains a short real run of the shipped MLP (with
# data.normalize=standardize) and of the shipped CNN (scale), exports each with
# `gradshare export`, checks the file with the ONNX checker (check_onnx.py, Debian's
# python3-onnx) and runs it in ONNX Runtime (onnx_predict.js, onnxruntime-node) on the whole
# Fashion-MNIST test set, normalising the raw pixels from the metadata: predictions agree with
# `gradshare eval` on >= 99.9 % of the samples and the accuracies within 0.05 pp. Also the
# command's errors: not a model file, unwritable output (exit 2, one line, nothing written).
#   onnx_export_test.sh GRADSHARE SOURCE_DIR NODE_MODULES
# Missing tools are a failure, not a skip: scripts/setup installs python3-onnx and
# (scripts/install-onnxruntime) onnxruntime-node into NODE_MODULES.
set -euo pipefail
gradshare=$1 source_dir=$2 node_modules=$3
here=$(cd "$(dirname "$0")" && pwd)
data_dir=/usr/share/datasets/fashion-mnist
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

/usr/bin/python3 -c "import onnx" 2>/dev/null || fail "python3-onnx is not installed (scripts/setup)"
[ -f "$node_modules/onnxruntime-node/package.json" ] ||
  fail "no onnxruntime-node in $node_modules (scripts/install-onnxruntime)"
command -v node >/dev/null || fail "node is not installed (scripts/setup)"

# NAME CONFIG TRAIN_SUBSET OPS [overrides...]: train, export, check, compare.
check_model() {
  local name=$1 config=$2 subset=$3 ops=$4
  shift 4
  "$gradshare" train "$source_dir/configs/$config" training.strategy=local training.epochs=1 \
    data.train_subset="$subset" data.dir="$data_dir" run.dir="$work/$name" "$@" \
    >"$work/$name.train.log" 2>&1 || { tail -n 20 "$work/$name.train.log"; fail "$name: training failed"; }
  "$gradshare" export "$work/$name/model.h5" -o "$work/$name.onnx" || fail "$name: export failed"
  /usr/bin/python3 "$here/check_onnx.py" "$work/$name.onnx" "$work/$name.json" "$data_dir" \
    "$subset" "$ops"
  "$gradshare" eval "$work/$name/model.h5" --predictions "$work/$name.predictions" \
    >"$work/$name.eval.log" || fail "$name: eval failed"
  local accuracy
  accuracy=$(sed -n 's/^test accuracy \([0-9.]*\)%.*/\1/p' "$work/$name.eval.log")
  [ -n "$accuracy" ] || fail "$name: no accuracy line in the eval output"
  NODE_PATH=$node_modules node "$here/onnx_predict.js" "$name" "$work/$name.onnx" \
    "$work/$name.json" "$data_dir" "$work/$name.predictions" "$accuracy"
}

check_model mlp fashion-mnist-mlp.yaml 12000 "Gemm,Relu,Gemm,Relu,Gemm,Softmax" \
  data.normalize=standardize
check_model cnn fashion-mnist-cnn.yaml 3000 \
  "Conv,Relu,MaxPool,Conv,Relu,MaxPool,Flatten,Gemm,Relu,Gemm,Softmax"

# User errors: exit 2, one line naming the file, no output file.
expect_user_error() {
  local what=$1 name=$2
  shift 2
  local rc=0
  "$gradshare" export "$@" >"$work/err.out" 2>"$work/err.log" || rc=$?
  [ "$rc" -eq 2 ] || fail "$what: exit code $rc, expected 2"
  [ "$(wc -l <"$work/err.log")" -eq 1 ] && grep -qF -- "$name" "$work/err.log" ||
    fail "$what: expected one line naming $name, got: $(cat "$work/err.log")"
  echo "$what: $(cat "$work/err.log")"
}
echo "not an HDF5 file" >"$work/bad.h5"
expect_user_error "not a model file" "$work/bad.h5" "$work/bad.h5" -o "$work/bad.onnx"
[ ! -e "$work/bad.onnx" ] || fail "an output was written for a bad model"
expect_user_error "unwritable output" "$work/none/x.onnx" "$work/mlp/model.h5" -o "$work/none/x.onnx"
expect_user_error "missing -o" "-o" "$work/mlp/model.h5"
ls -a "$work" | grep -q '\.tmp$' && fail "a temporary file was left behind"
echo PASS

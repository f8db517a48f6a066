#!/usr/bin/env bash
# model.torchscript end to end, through the real binary (issue 33):
#   torch_run_test.sh GRADSHARE MPIEXEC SOURCE_DIR MODULES_DIR SCENARIO
# SCENARIO:
#   outputs   the MLP module trained with 1 master + 2 workers (gradient sharing): model.pt
#             opens in Python (torch.jit.load) and, fed the test set normalised as its
#             gradshare.json says, predicts exactly what `gradshare eval` predicts on every
#             sample; model.h5 holds each tensor under its module name; `inspect` and `report`
#             work; `export` refuses in one line (exit 2, nothing written)
#   resume    the ResNet (batch norm) trained locally for 2 epochs, and again stopped after
#             epoch 1 and resumed: the same final accuracy (local training is deterministic),
#             the running statistics in every checkpoint and model.h5; a master's (gradient
#             sharing, 3 ranks) model.h5 holds statistics refreshed from the training data
#   kill      the ResNet under gradient sharing, `mpirun --with-ft ulfm`, 4 workers + 1 spare,
#             worker 2 killed with SIGKILL mid-run: the job ends by itself, the spare replaced
#             it, replicas equal, nothing applied twice, accuracy floor
#   bad       every bad module is one line naming model.torchscript, exit 2, no run directory:
#             missing, not an archive, no trainable parameter, forward returning a tuple, the
#             wrong input shape or class count, model.layers beside it, compute.device cuda,
#             and a checkpoint of another module (checkpoint.resume)
set -euo pipefail
gradshare=$1 mpiexec=$2 source_dir=$3 modules=$4 scenario=$5
here=$(cd "$(dirname "$0")" && pwd)
check_run=$source_dir/tests/tools/check_run.py
data_dir=/usr/share/datasets/fashion-mnist
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'pkill -9 -f "gradshare train .*$work" 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do [ -f "$f" ] && { echo "== $f"; tail -n 20 "$f"; }; done; exit 1; }
mlp=("$source_dir/configs/fashion-mnist-torch-mlp.yaml" model.torchscript="$modules/mlp.pt")
resnet=("$source_dir/configs/fashion-mnist-torch-resnet.yaml" model.torchscript="$modules/resnet.pt")

final_accuracy() {
  python3 -c "import json,sys; print([json.loads(l) for l in open(sys.argv[1]) if '\"final\"' in l][-1]['test_accuracy'])" "$1/metrics.jsonl"
}

case "$scenario" in
  outputs)
    "$mpiexec" --oversubscribe -n 3 "$gradshare" train "${mlp[@]}" run.dir="$work/run" \
      training.epochs=2 data.train_subset=12000 data.test_subset=2000 >"$work/train.log" 2>&1 ||
      fail "training failed"
    python3 "$check_run" "$work/run" --min-accuracy 0.75 --equivalent || fail "run checks"
    [ -f "$work/run/model.pt" ] || fail "no model.pt"
    "$gradshare" eval "$work/run/model.h5" --predictions "$work/predictions" >"$work/eval.log" ||
      fail "eval failed"
    grep -q "^test accuracy" "$work/eval.log" || fail "no accuracy line from eval"
    /usr/bin/python3 "$here/check_module_file.py" "$work/run/model.pt" "$work/run/model.h5" \
      "$data_dir" 10000 "$work/predictions" || fail "model.pt does not predict what eval does"
    "$gradshare" inspect "$work/run/model.h5" >"$work/inspect.log" || fail "inspect failed"
    grep -q "hidden1/weight" "$work/inspect.log" || fail "inspect does not list hidden1/weight"
    "$gradshare" report "$work/run" -o "$work/report.html" >"$work/report.log" 2>&1 || fail "report failed"
    [ -s "$work/report.html" ] || fail "no report"
    rc=0
    "$gradshare" export "$work/run/model.h5" -o "$work/model.onnx" 2>"$work/export.err" || rc=$?
    [ "$rc" -eq 2 ] || fail "export: exit $rc, expected 2"
    [ "$(wc -l <"$work/export.err")" -eq 1 ] && grep -q "torch.onnx.export" "$work/export.err" ||
      fail "export: $(cat "$work/export.err")"
    [ ! -e "$work/model.onnx" ] || fail "export wrote a file"
    echo "export: $(cat "$work/export.err")"
    ;;

  resume)
    common=(training.strategy=local data.train_subset=2000 data.test_subset=1000
            checkpoint.every_epoch=true)
    "$gradshare" train "${resnet[@]}" "${common[@]}" training.epochs=2 run.dir="$work/whole" \
      >"$work/whole.log" 2>&1 || fail "the undisturbed run failed"
    "$gradshare" train "${resnet[@]}" "${common[@]}" training.epochs=1 run.dir="$work/resumed" \
      >"$work/first.log" 2>&1 || fail "the first half failed"
    "$gradshare" train "${resnet[@]}" "${common[@]}" training.epochs=2 run.dir="$work/resumed" \
      >"$work/resumed.log" 2>&1 || fail "the resumed run failed"
    grep -q "resum" "$work/resumed.log" || fail "the second run did not resume"
    whole=$(final_accuracy "$work/whole") resumed=$(final_accuracy "$work/resumed")
    echo "final accuracy: undisturbed $whole, resumed $resumed"
    [ "$whole" = "$resumed" ] || fail "the resumed run ends at $resumed, the undisturbed at $whole"
    /usr/bin/python3 - "$work/whole/model.h5" "$work"/resumed/checkpoints/*.h5 <<'PY' || fail "buffers"
import sys, h5py
for path in sys.argv[1:]:
    with h5py.File(path, "r") as f:
        buffers = f["buffers"][...]
        mean = f["model/stem_bn/running_mean"]
        assert mean.attrs["buffer_offset"] == 0, path
        assert mean.shape == (32,), (path, mean.shape)
        assert abs(mean[...]).max() > 0, f"{path}: running mean never updated"
        assert f["model/stage1.conv1/weight"].shape == (32, 32, 3, 3), path
        print(f"{path}: {buffers.size} buffer values, stem_bn.running_mean set")
PY
    "$mpiexec" --oversubscribe -n 3 "$gradshare" train "${resnet[@]}" training.epochs=1 \
      data.train_subset=3000 data.test_subset=1000 run.dir="$work/shared" \
      >"$work/shared.log" 2>&1 || fail "the gradient-sharing run failed"
    python3 "$check_run" "$work/shared" --min-accuracy 0.5 --equivalent || fail "sharing checks"
    /usr/bin/python3 - "$work/shared/model.h5" <<'PY' || fail "the master's statistics were not refreshed"
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    var = f["model/stage3.bn2/running_var"][...]
    assert abs(var - 1.0).max() > 1e-3, "running_var still at its initial 1.0"
    print("master's stage3.bn2.running_var refreshed:", var[:3])
PY
    ;;

  kill)
    "$mpiexec" --with-ft ulfm --oversubscribe -n 6 "$gradshare" train "${resnet[@]}" \
      training.epochs=2 data.train_subset=3000 data.test_subset=1000 fault_tolerance.spares=1 \
      logging.every_steps=5 transport.timeout_ms=60000 run.dir="$work/killed" \
      >"$work/killed.log" 2>&1 &
    job=$!
    for _ in $(seq 3000); do
      last=$(grep -o '"kind":"step","step":[0-9]*' "$work/killed/metrics.jsonl" 2>/dev/null | tail -1 | grep -o '[0-9]*$' || true)
      [ -n "$last" ] && [ "$last" -ge 15 ] && break
      sleep 0.1
    done
    killed=0
    for pid in $(pgrep -f "gradshare train .*$work/killed"); do
      if tr '\0' '\n' </proc/"$pid"/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=2"; then
        echo "kill -9 rank 2 (pid $pid) after step $last"
        kill -9 "$pid"
        killed=1
      fi
    done
    [ "$killed" -eq 1 ] || fail "rank 2 not found"
    wait "$job" || fail "the job did not survive a killed worker"
    python3 "$check_run" "$work/killed" --min-accuracy 0.6 --equivalent --none-applied-twice \
      --recoveries 1 --replaced 1 || fail "checks"
    ;;

  bad)
    # NAME EXPECTED-TEXT [overrides...]: exit 2, one line with model.torchscript (or the key)
    # and the text, no run directory.
    refuse() {
      local name=$1 text=$2
      shift 2
      local rc=0
      "$gradshare" train "$@" run.output_dir="$work/out-$name" >"$work/$name.out" 2>"$work/$name.err" || rc=$?
      [ "$rc" -eq 2 ] || fail "$name: exit $rc, expected 2: $(cat "$work/$name.err")"
      [ "$(wc -l <"$work/$name.err")" -eq 1 ] || fail "$name: not one line: $(cat "$work/$name.err")"
      grep -qF -- "$text" "$work/$name.err" || fail "$name: no '$text' in: $(cat "$work/$name.err")"
      [ ! -e "$work/out-$name" ] || fail "$name: a run directory was created"
      echo "$name: $(cat "$work/$name.err")"
    }
    cfg=$source_dir/configs/fashion-mnist-torch-mlp.yaml
    refuse missing "model.torchscript: $modules/none.pt: no such file" "$cfg" model.torchscript="$modules/none.pt"
    refuse garbage "not a TorchScript archive" "$cfg" model.torchscript="$modules/garbage.pt"
    refuse frozen "no trainable float32 parameters" "$cfg" model.torchscript="$modules/frozen.pt"
    refuse tuple "not a tensor of logits" "$cfg" model.torchscript="$modules/tuple.pt"
    refuse shape "forward() failed on a batch of 2 zero samples shaped [2, 100]" "$cfg" \
      model.torchscript="$modules/mlp.pt" model.input_shape=[100]
    refuse classes "expected float logits [2, 7]" "$cfg" model.torchscript="$modules/mlp.pt" model.num_classes=7
    refuse layers "model.layers" "$cfg" model.torchscript="$modules/mlp.pt" \
      'model.layers=[{type: dense, units: 10}]'
    refuse cuda "compute.device" "$cfg" model.torchscript="$modules/mlp.pt" compute.device=cuda
    "$gradshare" train "$cfg" model.torchscript="$modules/mlp.pt" training.strategy=local \
      training.epochs=1 data.train_subset=640 data.test_subset=100 run.dir="$work/first" \
      >"$work/first.log" 2>&1 || fail "training the MLP module failed"
    refuse renamed "does not match the module's fc1.weight" "$cfg" \
      model.torchscript="$modules/renamed_mlp.pt" checkpoint.resume="$work/first/model.h5"
    ;;

  *)
    echo "unknown scenario $scenario"
    exit 2
    ;;
esac
echo "PASS: $scenario"

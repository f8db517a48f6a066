#!/usr/bin/env bash
# Early stopping and best.h5 (issue 18, item 6), for every strategy: with a min_delta no epoch
# can reach (0.5 = 50 pp of accuracy) and patience 1, epoch 1 is the best and the run must stop
# after epoch 2 of 6: exit code 0, an "early_stop" record naming epoch 2 and best epoch 1, no
# epoch record past 3 (the asynchronous strategies may finish an epoch already in flight), a
# "final" record with stopped_early, model.h5 written, best.h5 holding epoch 1, and the reason
# in the log. A resumed run (local, 2 more epochs allowed) restores the best from best.h5 and
# stops at once. With validation data the validation split is watched.
#   early_stopping_test.sh GRADSHARE MPIEXEC CONFIG
set -euo pipefail
gradshare=$1 mpiexec=$2 config=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; [ -f "$work/$name.log" ] && tail -n 25 "$work/$name.log"; exit 1; }
small=(data.train_subset=3000 data.test_subset=500 training.epochs=6 logging.every_steps=10
       early_stopping.metric=accuracy early_stopping.patience=1 early_stopping.min_delta=0.5)

# check NAME SPLIT: the facts above about run directory $work/NAME.
check() {
  local name=$1 split=$2 dir=$work/$1
  /usr/bin/env python3 - "$dir" "$split" <<'PY' || fail "$name: metrics.jsonl"
import json, sys
run, split = sys.argv[1], sys.argv[2]
records = [json.loads(line) for line in open(run + "/metrics.jsonl")]
stops = [r for r in records if r["kind"] == "early_stop"]
epochs = [r["epoch"] for r in records if r["kind"] == "epoch"]
final = [r for r in records if r["kind"] == "final"]
assert len(stops) == 1, f"{len(stops)} early_stop records"
stop = stops[0]
assert stop["epoch"] == 2 and stop["best_epoch"] == 1, stop
assert stop["split"] == split and stop["metric"] == "accuracy", stop
assert 2 <= max(epochs) <= 3, f"epoch records {epochs}: training went on after the stop"
assert final and final[-1]["stopped_early"] is True, final
print(f"early stop after epoch {stop['epoch']} (best {stop['best_value']:.4f} at epoch "
      f"{stop['best_epoch']} on {split}); epoch records {epochs}; final accuracy "
      f"{final[-1]['test_accuracy']:.4f}")
PY
  [ -f "$dir/model.h5" ] || fail "$name: no model.h5"
  [ -f "$dir/best.h5" ] || fail "$name: no best.h5"
  "$gradshare" inspect "$dir/best.h5" | grep -Eq "^ *epoch:? +1$" || fail "$name: best.h5 is not epoch 1"
  grep -q "early stopping after epoch 2 of 6: $split accuracy has not improved" "$work/$name.log" ||
    fail "$name: no early-stopping line in the log"
}

run() {  # run NAME RANKS [overrides...]
  name=$1
  local ranks=$2
  shift 2
  local code=0
  if [ "$ranks" -eq 0 ]; then
    "$gradshare" train "$config" run.dir="$work/$name" "${small[@]}" "$@" >"$work/$name.log" 2>&1 || code=$?
  else
    "$mpiexec" --oversubscribe -n "$ranks" "$gradshare" train "$config" run.dir="$work/$name" \
      "${small[@]}" "$@" >"$work/$name.log" 2>&1 || code=$?
  fi
  [ "$code" -eq 0 ] || fail "$name: exit code $code"
}

run local 0 training.strategy=local
check local test
run validation 0 training.strategy=local data.validation_fraction=0.1
check validation validation
run sharing 3 training.strategy=gradient_sharing
check sharing test
run averaging 3 training.strategy=parameter_averaging
check averaging test
run downpour 3 training.strategy=downpour
check downpour test
run allreduce 3 training.strategy=allreduce
check allreduce test

# Resume the local run with more epochs: best.h5 is read back (epoch 1) and, patience spent,
# the first epoch of the resumed run stops it again.
name=local
code=0
"$gradshare" train "$config" run.dir="$work/local" "${small[@]}" training.strategy=local \
  training.epochs=9 checkpoint.resume=auto >"$work/resumed.log" 2>&1 || code=$?
name=resumed
[ "$code" -eq 0 ] || fail "resumed: exit code $code"
grep -q "early stopping: the best so far is epoch 1 (test accuracy .*from best.h5)" "$work/resumed.log" ||
  fail "resumed: best.h5 not restored"
grep -q "early stopping after epoch" "$work/resumed.log" || fail "resumed: no early stop"
echo PASS

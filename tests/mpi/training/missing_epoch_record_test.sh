#!/usr/bin/env bash
# A master lost between the checkpoint at an epoch's end and that epoch's evaluation (the chaos
# bench found it: the rerun resumed at the next epoch and metrics.jsonl never got the epoch's
# record). Reproduced without a kill: a run of 2 epochs, then a new run directory holding only
# its checkpoint at the end of epoch 1, run again. The resumed run must evaluate the
# checkpoint's model for epoch 1 (a synchronous strategy's: the same accuracy as the first run's
# epoch 1), record it with every minibatch of the epoch, say so, and finish. Resumed from a
# checkpoint at the very end, the final record must count the last epoch's minibatches.
#   missing_epoch_record_test.sh GRADSHARE MPIEXEC CONFIG STRATEGY
set -euo pipefail
gradshare=$1 mpiexec=$2 config=$3 strategy=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(training.strategy="$strategy" training.epochs=2 data.train_subset=6400
      checkpoint.every_epoch=true)
run() { "$mpiexec" --oversubscribe -n 3 "$gradshare" train "$config" run.dir="$1" "${args[@]}"; }

run "$work/first" >"$work/first.log" 2>&1 || { cat "$work/first.log"; exit 1; }
epoch_record() { grep '"kind":"epoch","epoch":1,' "$1/metrics.jsonl" || true; }
first=$(epoch_record "$work/first")
[ -n "$first" ] || { echo "FAIL: the first run has no epoch-1 record"; exit 1; }
# copy_checkpoint NAME DEST: the checkpoint and the parts its workers wrote beside it, if any.
copy_checkpoint() {
  mkdir -p "$2/checkpoints"
  cp "$work/first/checkpoints/$1" "$2/checkpoints/"
  [ ! -d "$work/first/checkpoints/${1%.h5}.parts" ] ||
    cp -r "$work/first/checkpoints/${1%.h5}.parts" "$2/checkpoints/"
}
checkpoints() { (cd "$work/first/checkpoints" && ls -- *.h5 | sort); }
checkpoint=$(checkpoints | head -1)
copy_checkpoint "$checkpoint" "$work/resumed"

run "$work/resumed" >"$work/resumed.log" 2>&1 || { cat "$work/resumed.log"; exit 1; }
resumed=$(epoch_record "$work/resumed")
field() { echo "$1" | grep -o "\"$2\":[0-9.e+-]*" | cut -d: -f2; }
status=0
[ -n "$resumed" ] || { echo "FAIL: the resumed run wrote no epoch-1 record"; exit 1; }
grep -q "has no record of epoch 1" "$work/resumed.log" ||
  { echo "FAIL: the resumed run did not say it evaluated epoch 1 again"; status=1; }
[ "$(field "$first" test_accuracy)" = "$(field "$resumed" test_accuracy)" ] ||
  { echo "FAIL: epoch 1 accuracy $(field "$resumed" test_accuracy), first run $(field "$first" test_accuracy)"; status=1; }
[ "$(field "$first" minibatches)" = "$(field "$resumed" minibatches)" ] ||
  { echo "FAIL: epoch 1 minibatches $(field "$resumed" minibatches), first run $(field "$first" minibatches)"; status=1; }
grep -q '"kind":"final"' "$work/resumed/metrics.jsonl" || { echo "FAIL: no final record"; status=1; }

# A checkpoint at the very end (allreduce writes one; averaging ends with model.h5 only): the
# rerun only evaluates, and its final record, the last epoch's, counts every minibatch of it.
last=$(checkpoints | tail -1)
if [ "$last" != "$checkpoint" ]; then
  copy_checkpoint "$last" "$work/at-end"
  run "$work/at-end" >"$work/at-end.log" 2>&1 || { cat "$work/at-end.log"; exit 1; }
  final_first=$(grep '"kind":"final"' "$work/first/metrics.jsonl")
  final_end=$(grep '"kind":"final"' "$work/at-end/metrics.jsonl" || true)
  [ "$(field "$final_first" minibatches)" = "$(field "$final_end" minibatches)" ] ||
    { echo "FAIL: resumed at the end, the final record counts $(field "$final_end" minibatches) minibatches, the first run $(field "$final_first" minibatches)"; status=1; }
  ! grep -q '"kind":"epoch","epoch":2,' "$work/at-end/metrics.jsonl" ||
    { echo "FAIL: an epoch record for the last epoch, whose record is the final one"; status=1; }
fi
[ $status -eq 0 ] && echo "OK: epoch 1 recorded from the checkpoint: $resumed"
exit $status

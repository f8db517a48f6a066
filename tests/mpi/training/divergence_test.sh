#!/usr/bin/env bash
# The divergence guard (issue 14), 1 master + 4 workers of gradient sharing:
#   1. a good epoch, then the same run resumed with optimizer.learning_rate=50: it must end with
#      exit code 3 and one error line naming the rank, the step and the learning rate; neither
#      its checkpoints nor model.h5 may change, and the newest checkpoint must still load and
#      evaluate to the accuracy it had before;
#   2. local, allreduce, parameter averaging and Downpour forced to diverge the same way: exit 3,
#      one error line, no model.h5;
#   3. the same forced divergence with training.on_divergence=rollback restarts with a smaller
#      learning rate (each try logged) and must finish at FLOOR or above (full data, 3 epochs).
#   divergence_test.sh GRADSHARE MPIEXEC CONFIG FLOOR
set -euo pipefail
gradshare=$1 mpiexec=$2 config=$3 floor=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
subset=(data.train_subset=12000 data.test_subset=2000 logging.every_steps=20 checkpoint.every_steps=50)
run() { "$mpiexec" --oversubscribe -n 5 "$gradshare" train "$config" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
final_accuracy() {  # final_accuracy METRICS: the final record's test accuracy
  python3 -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1]) if "\"final\"" in l][-1]["test_accuracy"])' "$1"
}

echo "== a good epoch"
run run.dir="$work/run" "${subset[@]}" training.epochs=1 >"$work/good.log" 2>&1 ||
  { cat "$work/good.log"; fail "the good epoch failed"; }
evaluate_newest() {
  local newest
  newest=$(cd "$work/run/checkpoints" && ls -- *.h5 | sort | tail -1)
  "$gradshare" eval "$work/run/checkpoints/$newest" data.test_subset=2000 |
    sed -n 's/^test accuracy \([0-9.]*\)%.*/\1/p'
}
good_accuracy=$(evaluate_newest)
# Every file: the checkpoints and the parts their workers wrote beside them.
fingerprint() { (cd "$work/run" && find model.h5 checkpoints -type f | sort | xargs md5sum); }
before=$(fingerprint)

echo "== resumed with optimizer.learning_rate=50"
code=0
run run.dir="$work/run" "${subset[@]}" training.epochs=2 optimizer.learning_rate=50 \
  >"$work/diverged.log" 2>&1 || code=$?
[ "$code" -eq 3 ] || { cat "$work/diverged.log"; fail "exit code $code, expected 3 (diverged)"; }
errors=$(grep -a -c " ERROR \[master\]" "$work/diverged.log" || true)
[ "$errors" -eq 1 ] || { cat "$work/diverged.log"; fail "$errors error lines from the master, expected 1"; }
line=$(grep -a " ERROR \[master\]" "$work/diverged.log")
echo "$line"
for word in "training diverged on rank" "at its step" "optimizer.learning_rate 50" "newest good checkpoint kept"; do
  [[ $line == *"$word"* ]] || fail "the error line does not say '$word'"
done
after=$(fingerprint)
[ "$before" = "$after" ] || { echo "before: $before"; echo "after: $after"; fail "the diverged run changed the checkpoints or model.h5"; }
evaluated=$(evaluate_newest)
echo "the newest checkpoint evaluates to $evaluated % (before the diverged run: $good_accuracy %)"
[ -n "$evaluated" ] && [ "$evaluated" = "$good_accuracy" ] ||
  fail "the newest checkpoint evaluates to '$evaluated' %, not $good_accuracy %"

# The other strategies with the guard: exit 3, one error line, no model.h5.
for strategy in local allreduce parameter_averaging downpour; do
  echo "== $strategy with optimizer.learning_rate=50"
  dir="$work/$strategy"
  code=0
  if [ "$strategy" = local ]; then
    "$gradshare" train "$config" run.dir="$dir" "${subset[@]}" optimizer.learning_rate=50 \
      >"$dir.log" 2>&1 || code=$?
  else
    "$mpiexec" --oversubscribe -n 3 "$gradshare" train "$config" run.dir="$dir" "${subset[@]}" \
      training.strategy="$strategy" optimizer.learning_rate=50 >"$dir.log" 2>&1 || code=$?
  fi
  [ "$code" -eq 3 ] || { cat "$dir.log"; fail "$strategy: exit code $code, expected 3"; }
  [ "$(grep -a -c " ERROR \[master\] training diverged" "$dir.log" || true)" -eq 1 ] ||
    { cat "$dir.log"; fail "$strategy: not exactly one 'training diverged' line"; }
  [ ! -e "$dir/model.h5" ] || fail "$strategy: a diverged model.h5 was written"
done

echo "== optimizer.learning_rate=50 with training.on_divergence=rollback"
run run.dir="$work/rollback" training.epochs=3 logging.every_steps=100 optimizer.learning_rate=50 \
  training.on_divergence=rollback >"$work/rollback.log" 2>&1 ||
  { cat "$work/rollback.log"; fail "the rollback run failed"; }
grep -a "rollback [0-9]*/" "$work/rollback.log" | cut -c1-160
[ "$(grep -a -c "rollback [0-9]*/" "$work/rollback.log")" -ge 1 ] || fail "no rollback was logged"
accuracy=$(final_accuracy "$work/rollback/metrics.jsonl")
echo "after the rollbacks: final test accuracy $accuracy (required >= $floor)"
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)' "$accuracy" "$floor" ||
  fail "final accuracy $accuracy < $floor"
echo "PASS"

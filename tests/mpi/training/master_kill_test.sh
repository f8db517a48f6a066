#!/usr/bin/env bash
# Losing the master: an undisturbed run, then the same run with its master SIGKILLed mid-way and
# started again with the same command. Asserts that the rerun resumed from the newest
# checkpoint, repeated at most checkpoint.every_steps steps of work, finished, and reached
#   ACCURACY = within:F  the undisturbed run's test accuracy within F (0.005 = 0.5 pp), or
#              floor:F   at least F (for strategies whose undisturbed runs vary more than the
#                        bound that matters: asynchronous training)
#   master_kill_test.sh GRADSHARE MPIEXEC CONFIG STRATEGY ACCURACY
set -euo pipefail
gradshare=$1 mpiexec=$2 config=$3 strategy=$4 accuracy_rule=$5
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'pkill -9 -f "gradshare train .*$work" 2>/dev/null || true; rm -rf "$work"' EXIT
every=100
args=(training.strategy="$strategy" training.epochs=2 logging.every_steps=10
      checkpoint.every_steps=$every checkpoint.every_epoch=false)
run() {  # run DIR: one job of 3 ranks writing into DIR
  "$mpiexec" --oversubscribe -n 3 "$gradshare" train "$config" run.dir="$1" "${args[@]}"
}

echo "== undisturbed run"
run "$work/undisturbed" >"$work/undisturbed.log" 2>&1 || { cat "$work/undisturbed.log"; exit 1; }

echo "== run whose master is killed"
run "$work/killed" >"$work/killed-1.log" 2>&1 &
job=$!
# Wait until the run is past its second checkpoint, then SIGKILL rank 0.
for _ in $(seq 1500); do
  last=$(grep -o '"kind":"step","step":[0-9]*' "$work/killed/metrics.jsonl" 2>/dev/null | tail -1 | grep -o '[0-9]*$' || true)
  [ -n "$last" ] && [ "$last" -ge $((2 * every + 20)) ] && break
  sleep 0.2
done
master=""
for pid in $(pgrep -f "gradshare train .*$work/killed"); do
  if tr '\0' '\n' </proc/"$pid"/environ 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=0'; then master=$pid; fi
done
[ -n "$master" ] || { echo "FAIL: master process not found (did the run end early?)"; cat "$work/killed-1.log"; exit 1; }
kill -9 "$master"
if wait "$job"; then echo "FAIL: the job survived its master"; exit 1; fi
last_logged=$(grep -o '"kind":"step","step":[0-9]*' "$work/killed/metrics.jsonl" | tail -1 | grep -o '[0-9]*$')
echo "master killed after step $last_logged"
ls "$work/killed/checkpoints"

echo "== the same command again"
start=$(date +%s.%N)
run "$work/killed" >"$work/killed-2.log" 2>&1 || { cat "$work/killed-2.log"; exit 1; }
echo "rerun took $(echo "$(date +%s.%N) - $start" | bc) s"

python3 - "$work" "$every" "$last_logged" "$accuracy_rule" <<'PY'
import json, sys
work, every, last_logged, rule = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
kind, bound = rule.split(":")
bound = float(bound)
def records(run):
    with open(f"{work}/{run}/metrics.jsonl") as f:
        return [json.loads(line) for line in f if line.strip()]
undisturbed = [r for r in records("undisturbed") if r["kind"] == "final"][-1]["test_accuracy"]
killed = records("killed")
resumes = [r for r in killed if r["kind"] == "resume"]
finals = [r for r in killed if r["kind"] == "final"]
failures = []
if not resumes:
    failures.append("the rerun did not resume from a checkpoint")
if not finals:
    failures.append("the resumed run did not finish")
if resumes and finals:
    repeated = last_logged - resumes[-1]["iteration"]
    accuracy = finals[-1]["test_accuracy"]
    print(f"undisturbed {undisturbed:.4f}, resumed {accuracy:.4f}, resumed at step "
          f"{resumes[-1]['iteration']}, killed after step {last_logged}: {repeated} steps repeated")
    if repeated > every:
        failures.append(f"{repeated} steps of work repeated, more than checkpoint.every_steps={every}")
    if kind == "within" and abs(accuracy - undisturbed) > bound:
        failures.append(f"accuracy {accuracy:.4f} not within {100 * bound:.1f} pp of {undisturbed:.4f}")
    if kind == "floor" and accuracy < bound:
        failures.append(f"accuracy {accuracy:.4f} below {bound:.4f}")
for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
PY

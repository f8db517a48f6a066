#!/usr/bin/env bash
# Losing the master: an undisturbed run, then the same run with its master SIGKILLed mid-way and
# started again with the same command. Asserts that the rerun resumed from the newest
# checkpoint, repeated at most checkpoint.every_steps steps of work, finished, and reached
#   ACCURACY = within:F  the undisturbed run's test accuracy within F (0.005 = 0.5 pp), or
#              floor:F   at least F (for strategies whose undisturbed runs vary more than the
#                        bound that matters: asynchronous training)
# The strategies that hand out data partitions (gradient sharing, Downpour) must also have
# trained every epoch's minibatches at least as often as the undisturbed run (issue 15: whole
# partitions used to go missing after a resume).
# With SIGNAL TERM or USR1 (a stop, as Slurm sends before the time limit) sent to RANK instead,
# the interrupted job must exit with the requeue code 75 after a checkpoint, and the rerun
# repeat no logged step.
#   master_kill_test.sh GRADSHARE MPIEXEC CONFIG STRATEGY ACCURACY [SIGNAL [RANK]]
set -euo pipefail
gradshare=$1 mpiexec=$2 config=$3 strategy=$4 accuracy_rule=$5 signal=${6:-KILL} rank=${7:-0}
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

echo "== run interrupted by SIG$signal to rank $rank"
run "$work/killed" >"$work/killed-1.log" 2>&1 &
job=$!
# Find the rank's process, then wait until the run is past its second checkpoint and a fifth to
# a half of the checkpoint spacing beyond its newest one (in the records' unit, minibatches: for
# allreduce checkpoint.every_steps all-reduce steps are every_steps x workers minibatches): well
# before the next is due, so the bound on repeated work is what is tested, not the timing of
# the poll. Rank 0 writes both the step records and the checkpoints, so it runs only in short
# slices between two checks (SIGSTOP, SIGCONT): the run cannot pass a window, or end, while
# the test is not looking, however loaded the machine.
target=""
checkpoints() {
  ls "$work/killed/checkpoints" 2>/dev/null | sed -n 's/^ckpt-0*\([0-9][0-9]*\)\.h5$/\1/p' | sort -n || true
}
newest_checkpoint() { checkpoints | tail -1; }
# The distance between the two newest checkpoints (empty before there are two).
spacing() {
  local two
  two=$(checkpoints | tail -2 | tr '\n' ' ')
  set -- $two
  [ $# -eq 2 ] && echo $(($2 - $1)) || true
}
last_step() {
  grep -o '"kind":"step","step":[0-9]*' "$work/killed/metrics.jsonl" 2>/dev/null | tail -1 | grep -o '[0-9]*$' || true
}
in_window() {
  local last newest gap
  last=$(last_step) newest=$(newest_checkpoint) gap=$(spacing)
  [ -n "$last" ] && [ -n "$newest" ] && [ -n "$gap" ] &&
    [ "$last" -ge $((newest + gap / 5)) ] && [ "$last" -lt $((newest + gap / 2)) ]
}
master=""
for _ in $(seq 6000); do
  for pid in $(pgrep -f "gradshare train .*$work/killed" || true); do
    [ -n "$target" ] && [ -n "$master" ] && break
    env=$(tr '\0' '\n' </proc/"$pid"/environ 2>/dev/null || true)
    if grep -qx "OMPI_COMM_WORLD_RANK=$rank" <<<"$env"; then target=$pid; fi
    if grep -qx "OMPI_COMM_WORLD_RANK=0" <<<"$env"; then master=$pid; kill -STOP "$master"; fi
  done
  [ -n "$target" ] && [ -n "$master" ] && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.01
done
windowed=""
while [ -n "$target" ] && [ -n "$master" ] && kill -0 "$master" 2>/dev/null; do
  if in_window; then windowed=yes; break; fi
  kill -CONT "$master"
  # Longer slices until the second checkpoint (MPI start-up, data, the first steps).
  if [ -n "$(spacing)" ]; then sleep 0.005; else sleep 0.02; fi
  kill -STOP "$master" 2>/dev/null || true
done
[ -n "$windowed" ] && kill -0 "$target" 2>/dev/null ||
  { kill -CONT "$master" 2>/dev/null || true
    echo "FAIL: the run ended (or rank $rank was not found) before it could be interrupted"
    wait "$job" || true; cat "$work/killed-1.log"; exit 1; }
signalled=$(date +%s.%N)
kill -s "$signal" "$target"
kill -CONT "$master" 2>/dev/null || true
code=0
wait "$job" || code=$?
if [ "$signal" = KILL ]; then
  [ "$code" -ne 0 ] || { echo "FAIL: the job survived its rank $rank"; exit 1; }
  lost_bound=$(spacing)
else
  [ "$code" -eq 75 ] || { echo "FAIL: exit code $code after SIG$signal, expected 75"; cat "$work/killed-1.log"; exit 1; }
  echo "SIG$signal to rank $rank: job exited 75 after $(echo "$(date +%s.%N) - $signalled" | bc) s"
  lost_bound=0
fi
last_logged=$(grep -o '"kind":"step","step":[0-9]*' "$work/killed/metrics.jsonl" | tail -1 | grep -o '[0-9]*$')
echo "rank $rank got SIG$signal after step $last_logged"
ls "$work/killed/checkpoints"

echo "== the same command again"
steps_before=$(grep -c '"kind":"step"' "$work/killed/metrics.jsonl" || true)
start=$(date +%s.%N)
run "$work/killed" >"$work/killed-2.log" 2>&1 &
rerun=$!
training_again=""
while kill -0 "$rerun" 2>/dev/null; do
  if [ -z "$training_again" ] &&
     [ "$(grep -c '"kind":"step"' "$work/killed/metrics.jsonl" || true)" -gt "$steps_before" ]; then
    training_again=$(echo "$(date +%s.%N) - $start" | bc)
  fi
  sleep 0.05
done
wait "$rerun" || { cat "$work/killed-2.log"; exit 1; }
echo "rerun: training again (first progress line) after ${training_again:-?} s, finished after $(echo "$(date +%s.%N) - $start" | bc) s"

python3 - "$work" "$lost_bound" "$last_logged" "$accuracy_rule" <<'PY'
import json, sys
work, bound_steps, last_logged, rule = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
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
          f"{resumes[-1]['iteration']}, interrupted after step {last_logged}: {repeated} steps repeated")
    if repeated > bound_steps:
        failures.append(f"{repeated} steps of work repeated, more than {bound_steps}")
    if kind == "within" and abs(accuracy - undisturbed) > bound:
        failures.append(f"accuracy {accuracy:.4f} not within {100 * bound:.1f} pp of {undisturbed:.4f}")
    if kind == "floor" and accuracy < bound:
        failures.append(f"accuracy {accuracy:.4f} below {bound:.4f}")
for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
PY
case "$strategy" in
  gradient_sharing | downpour)
    python3 "$(dirname "$0")/../../tools/check_run.py" "$work/killed" \
      --minibatches-like "$work/undisturbed"
    ;;
esac

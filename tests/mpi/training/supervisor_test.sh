#!/usr/bin/env bash
# `gradshare run` restarts a crashed job (issue 17, item 5):
#   1. the master of a real 3-rank job is SIGKILLed after its first checkpoint: the supervisor
#      restarts the job, which resumes run.dir and finishes (exit 0, one "restart" record,
#      every epoch reported, model.h5);
#   2. SIGTERM to the supervisor reaches the job, which checkpoints and exits 75: no restart;
#   3. a job that always crashes is started 1 + --max-restarts times, then its code is returned;
#   4. bad input is not retried (exit 2, one attempt); a command without run.dir=, or one that
#      cannot be executed, is one error line and exit 2.
#   supervisor_test.sh GRADSHARE MPIEXEC CONFIG
set -euo pipefail
gradshare=$1 mpiexec=$2 config=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'pkill -9 -f "gradshare train .*$work" 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "== $f"; tail -n 20 "$f"; done; exit 1; }
small=(data.train_subset=12000 data.test_subset=1000 logging.every_steps=20)
supervised() {  # supervised DIR EPOCHS: a supervised 3-rank job in the background; sets $job
  "$gradshare" run --max-restarts 2 --backoff 0.5 -- "$mpiexec" --oversubscribe -n 3 \
    "$gradshare" train "$config" run.dir="$1" training.epochs="$2" "${small[@]}" \
    >"$work/$(basename "$1").log" 2>&1 &
  job=$!
}
rank0_pid() {  # the master process of the job training in DIR
  local pid
  for pid in $(pgrep -f "gradshare train .*run.dir=$1" || true); do
    if tr '\0' '\n' </proc/"$pid"/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=0"; then
      echo "$pid"
      return
    fi
  done
}
wait_for_checkpoint() {  # wait_for_checkpoint DIR: until a checkpoint exists (or the job ended)
  for _ in $(seq 2400); do
    compgen -G "$1/checkpoints/ckpt-*.h5" >/dev/null && return 0
    kill -0 "$job" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# 1. The master is killed: one restart, then the run resumes and finishes.
dir=$work/crash
supervised "$dir" 6
wait_for_checkpoint "$dir" || fail "the job wrote no checkpoint before it ended"
master=$(rank0_pid "$dir")
[ -n "$master" ] || fail "no master process found"
kill -9 "$master"
code=0
wait "$job" || code=$?
[ "$code" -eq 0 ] || fail "supervised job: exit code $code after the master was killed"
grep -q "restart 1 of 2 in 0.5 s, resuming $dir" "$work/crash.log" || fail "no restart line"
/usr/bin/env python3 - "$dir" <<'PY' || fail "metrics of the restarted run"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1] + "/metrics.jsonl")]
restarts = [r for r in records if r["kind"] == "restart"]
assert len(restarts) == 1 and restarts[0]["exit_code"] != 0, restarts
epochs = sorted({r["epoch"] for r in records if r["kind"] == "epoch"})
assert epochs == list(range(1, 7)), f"epochs reported: {epochs}"
final = [r for r in records if r["kind"] == "final"]
assert len(final) == 1 and final[0]["test_accuracy"] > 0.75, final
print(f"restarted once (attempt 1 ended with {restarts[0]['exit_code']}); epochs {epochs}; "
      f"final accuracy {final[0]['test_accuracy']:.4f}")
PY
[ -f "$dir/model.h5" ] || fail "no model.h5 after the restart"
grep -q "resum" "$work/crash.log" || fail "the restarted job did not resume the checkpoint"

# 2. A stop signal to the supervisor: the job checkpoints and exits 75; nothing restarts.
dir=$work/stopped
supervised "$dir" 200
wait_for_checkpoint "$dir" || fail "the stopped job wrote no checkpoint"
kill -TERM "$job"
code=0
wait "$job" || code=$?
[ "$code" -eq 75 ] || fail "SIGTERM to the supervisor: exit code $code, expected 75"
[ "$(grep -c 'attempt [0-9]* of 3' "$work/stopped.log")" -eq 1 ] || fail "a stopped job was restarted"

# 3. Always crashing: 1 + 2 attempts, then the job's own code.
mkdir -p "$work/loop"
code=0
"$gradshare" run --max-restarts 2 --backoff 0 -- sh -c 'exit 7' sh run.dir="$work/loop" \
  >"$work/loop.log" 2>&1 || code=$?
[ "$code" -eq 7 ] || fail "crash loop: exit code $code, expected 7"
[ "$(grep -c 'attempt [0-9] of 3' "$work/loop.log")" -eq 3 ] || fail "crash loop: not 3 attempts"
[ "$(grep -c '"kind":"restart"' "$work/loop/metrics.jsonl")" -eq 2 ] || fail "crash loop: not 2 restart records"
grep -q "no restart is left (--max-restarts 2)" "$work/loop.log" || fail "crash loop: no final line"

# 4. Bad input is not retried; a command without run.dir= or one that cannot run is refused.
code=0
"$gradshare" run --backoff 0 -- "$gradshare" train "$work/missing.yaml" run.dir="$work/bad" \
  >"$work/bad.log" 2>&1 || code=$?
[ "$code" -eq 2 ] && [ "$(grep -c 'attempt' "$work/bad.log")" -eq 1 ] || fail "bad config: exit $code or retried"
code=0
"$gradshare" run -- "$gradshare" train "$config" >"$work/nodir.log" 2>&1 || code=$?
[ "$code" -eq 2 ] && [ "$(wc -l <"$work/nodir.log")" -eq 1 ] && grep -q "no run.dir=DIR argument" "$work/nodir.log" ||
  fail "no run.dir: exit $code, $(cat "$work/nodir.log")"
code=0
"$gradshare" run --backoff 0 -- "$work/no-such-program" run.dir="$work/x" >"$work/noexec.log" 2>&1 || code=$?
[ "$code" -eq 2 ] && grep -q "cannot execute" "$work/noexec.log" || fail "unrunnable command: exit $code"
echo PASS

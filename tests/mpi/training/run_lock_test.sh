#!/usr/bin/env bash
# One job per run directory, and resuming with another config (issue 15, item 7):
#   - a second job on a live job's run.dir exits 2 naming the owner (pid and host); the first
#     job, stopped with SIGTERM afterwards, exits 75 and removes its lock;
#   - a stale lock is taken over with a line saying why: this host and a dead pid; another
#     host and not refreshed for over a minute (a fresh one from another host is respected);
#   - resuming with another learning rate and run.seed names both keys (training.epochs, which
#     one changes to resume, is not named); resuming with another model exits 2 naming
#     model.layers and changes nothing; checkpoint.resume naming a file compares against the
#     config stored in that checkpoint.
#   run_lock_test.sh GRADSHARE MPIEXEC CONFIG
set -euo pipefail
gradshare=$1 mpiexec=$2 config=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'pkill -9 -f "gradshare train .*$work" 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "== $f"; tail -n 15 "$f"; done; exit 1; }
small=(data.train_subset=6000 data.test_subset=1000 logging.every_steps=20)
local_run() {  # local_run NAME DIR [overrides...]: one process, log in $work/NAME.log; echoes the exit code
  local name=$1 dir=$2
  shift 2
  local code=0
  "$gradshare" train "$config" run.dir="$dir" training.strategy=local "${small[@]}" "$@" \
    >"$work/$name.log" 2>&1 || code=$?
  echo "$code"
}
error_lines() { grep -c '^gradshare: error' "$1" || true; }

# 1. Two jobs on one run directory. The first trains long enough to be alive throughout, and
# is then stopped with SIGTERM (exit 75 after a checkpoint), which must release the lock too.
dir=$work/shared
"$mpiexec" --oversubscribe -n 3 "$gradshare" train "$config" run.dir="$dir" logging.every_steps=20 \
  training.epochs=200 >"$work/first.log" 2>&1 &
first=$!
for _ in $(seq 1200); do grep -qs '"kind":"step"' "$dir/metrics.jsonl" && break; sleep 0.05; done
[ -e "$dir/run.lock" ] || fail "the first job made no run.lock"
owner_pid=$(awk '$1 == "pid" {print $2}' "$dir/run.lock")
code=0
"$mpiexec" --oversubscribe -n 3 "$gradshare" train "$config" run.dir="$dir" "${small[@]}" \
  >"$work/second.log" 2>&1 || code=$?
kill -0 "$first" 2>/dev/null || fail "the first job ended before the second was refused"
[ "$code" -eq 2 ] || fail "the second job: exit code $code, expected 2"
[ "$(error_lines "$work/second.log")" -eq 1 ] || fail "the second job: not one error line"
grep -q "^gradshare: error: run.dir $dir is in use by another job: pid $owner_pid on $(hostname)" \
  "$work/second.log" || fail "the second job's line does not name the owner"
echo "second job: $(grep '^gradshare: error' "$work/second.log")"
kill -TERM "$owner_pid"
code=0
wait "$first" || code=$?
[ "$code" -eq 75 ] || fail "the first job: exit code $code after SIGTERM, expected 75"
[ ! -e "$dir/run.lock" ] || fail "the first job left its lock"

# 2. Stale locks.
dead_pid=$(sh -c 'echo $$')
mkdir -p "$work/stale"
printf 'pid %s\nhost %s\nstarted 2026-01-01T00:00:00Z\n' "$dead_pid" "$(hostname)" >"$work/stale/run.lock"
[ "$(local_run stale "$work/stale" training.epochs=1)" -eq 0 ] || fail "a dead owner's lock blocked the run"
grep -q "took over the stale run lock of pid $dead_pid on $(hostname).*: its process is gone" \
  "$work/stale.log" || fail "no line about the dead owner's lock"
mkdir -p "$work/remote"
printf 'pid 1\nhost node-elsewhere\nstarted 2026-01-01T00:00:00Z\n' >"$work/remote/run.lock"
[ "$(local_run remote-fresh "$work/remote" training.epochs=1)" -eq 2 ] \
  || fail "a fresh lock of another host was not respected"
grep -q "is in use by another job: pid 1 on node-elsewhere" "$work/remote-fresh.log" \
  || fail "the line does not name the other host's owner"
touch -d '-120 seconds' "$work/remote/run.lock"
[ "$(local_run remote-old "$work/remote" training.epochs=1)" -eq 0 ] \
  || fail "an old lock of another host blocked the run"
grep -q "took over the stale run lock of pid 1 on node-elsewhere.*not refreshed for" \
  "$work/remote-old.log" || fail "no line about the old lock"

# 3. Resuming with another config.
dir=$work/resumed
[ "$(local_run base "$dir" training.epochs=1)" -eq 0 ] || fail "the run to resume failed"
[ "$(local_run resume-changed "$dir" training.epochs=2 optimizer.learning_rate=0.0005 run.seed=7)" -eq 0 ] \
  || fail "resuming with another learning rate failed"
grep -q '"kind":"resume"' "$dir/metrics.jsonl" || fail "the run did not resume"
grep -q "resuming with a config that differs from $dir/config.yaml: optimizer.learning_rate: 0.001 -> 5e-04" \
  "$work/resume-changed.log" || fail "the learning rate change is not named"
grep -q "differs from .*: run.seed: 42 -> 7" "$work/resume-changed.log" || fail "the seed change is not named"
if grep -q "differs from .*training.epochs" "$work/resume-changed.log"; then fail "training.epochs named"; fi
before=$(find "$dir" -type f | sort | xargs md5sum)
[ "$(local_run resume-model "$dir" training.epochs=3 \
     'model.layers=[{type: dense, units: 64, activation: relu}, {type: dense, units: 10}]')" -eq 2 ] \
  || fail "resuming with another model did not exit 2"
[ "$(error_lines "$work/resume-model.log")" -eq 1 ] || fail "another model: not one error line"
grep -q "^gradshare: error: cannot resume from $dir/config.yaml with a different model (model.layers: " \
  "$work/resume-model.log" || fail "the line does not name model.layers"
[ "$before" = "$(find "$dir" -type f | sort | xargs md5sum)" ] || fail "another model changed the run directory"
checkpoint=$(ls "$dir"/checkpoints/*.h5 | tail -1)
[ "$(local_run resume-file "$work/from-file" checkpoint.resume="$checkpoint" training.epochs=3)" -eq 0 ] \
  || fail "resuming from a named checkpoint failed"
grep -q "differs from $checkpoint: optimizer.learning_rate: 5e-04 -> 0.001" "$work/resume-file.log" \
  || fail "the named checkpoint's config was not compared"
echo PASS

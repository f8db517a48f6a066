#!/usr/bin/env bash
# slurm_train_test.sh: slurm/train.sbatch on a real local Slurm cluster (scripts/slurm-local).
#
#   slurm_train_test.sh GRADSHARE_BIN REPO_ROOT [STRATEGY]
#
#  1. starts a private cluster and runs a trivial job (start to first finished job);
#  2. trains the MLP config on a subset for 2 epochs with 3 tasks (1 master + 2 workers): the
#     job must end COMPLETED and metrics.jsonl in runs/fashion-mnist-mlp-slurm-<id> must hold a
#     final test accuracy >= 0.7;
#  3. trains again (40 epochs), sends the batch shell Slurm's warning signal
#     (`scancel -b -s USR1`) after the first epoch: gradshare must checkpoint and exit 75, the
#     script requeue the job; the
#     test releases it (`scontrol update StartTime=...`, Slurm would wait ~2 min), and the job
#     must resume from the checkpoint (no epoch logged again), finish COMPLETED and reach the
#     same accuracy;
#  4. stops the cluster and removes everything it wrote, also when a step fails.
# Exit 0 pass, 1 fail, 77 skipped (Slurm or munge not installed: scripts/setup installs them).
# Waits are bounded polls of `scontrol show job` (no accounting database), never sleeps that
# decide the outcome; the bounds only keep a broken cluster from hanging the test.
set -uo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 GRADSHARE_BIN REPO_ROOT [STRATEGY]" >&2
  exit 2
fi
bin=$1
repo=$2
strategy=${3:-gradient_sharing}
readonly skip_code=77
readonly min_accuracy=0.7
readonly job_bound_s=900  # a hang guard per wait, not a performance limit
readonly config=$repo/configs/fashion-mnist-mlp.yaml
# The subset of the MPI training tests: 2 epochs of asynchronous gradient sharing on 6000
# samples end anywhere between 0.68 and 0.75, on 12000 near 0.80, clear of the threshold.
readonly common_overrides=(data.train_subset=12000 data.test_subset=2000
                           "training.strategy=$strategy")

for tool in slurmctld slurmd sbatch scontrol munged; do
  if ! command -v "$tool" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$tool" ]; then
    echo "SKIP: $tool is not installed (apt-get install slurmctld slurmd slurm-client munge)"
    exit $skip_code
  fi
done
export PATH=$PATH:/usr/sbin

say() { echo "slurm_train_test: $*"; }
# Also used inside $(...): the message goes to stderr, and the caller adds `|| exit 1`.
fail() {
  say "FAIL: $*" >&2
  exit 1
}
[ -x "$bin" ] || fail "no gradshare binary at $bin"
[ -f "$config" ] || fail "no config at $config"

work=$(mktemp -d /tmp/gradshare-slurm-test.XXXXXX) || fail "mktemp failed"
chmod 755 "$work"  # munged (user munge) must reach its directory inside
export GRADSHARE_SLURM_DIR=$work/cluster
# 3 tasks on a 2-core machine: the node claims 3 CPUs, mpirun oversubscribes the cores.
cpus=$(nproc)
export GRADSHARE_SLURM_CPUS=$((cpus > 3 ? cpus : 3))
# Ports: the first free pair from 6817 on, so that a cluster someone else runs (or another
# checkout's test) does not make this test fail; slurm-local still refuses taken ports.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for ((port = 6817; port < 6917; port += 10)); do
  port_free $port && port_free $((port + 1)) && break
done
export GRADSHARE_SLURM_PORT=$port
export GRADSHARE_BIN=$bin
export GRADSHARE_MPIRUN_ARGS=--oversubscribe
started=0

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ $rc -ne 0 ]; then
    for out in "$work"/job-*.out; do
      [ -f "$out" ] || continue
      say "---- $(basename "$out") (last 40 lines)"
      tail -n 40 "$out"
    done
    if [ -f "$GRADSHARE_SLURM_DIR/log/slurmctld.log" ]; then
      say "---- slurmctld.log (last 15 lines)"
      tail -n 15 "$GRADSHARE_SLURM_DIR/log/slurmctld.log"
    fi
  fi
  if [ $started -eq 1 ]; then
    "$repo/scripts/slurm-local" stop || say "warning: stopping the cluster failed"
  fi
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT
trap 'fail "interrupted"' INT TERM

now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" \
  "$1" "$2"; }

# One field of `scontrol show job` (JobState, Restarts, ExitCode, ...), or "" if gone.
job_field() {
  scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}
is_final_state() {
  case $1 in
    COMPLETED | FAILED | CANCELLED* | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | \
      DEADLINE | PREEMPTED) return 0 ;;
    *) return 1 ;;
  esac
}

# Polls until job $1 is in a final state; sets final_state.
final_state=
wait_final() {
  local deadline=$((SECONDS + job_bound_s)) state
  while [ $SECONDS -lt $deadline ]; do
    state=$(job_field "$1" JobState)
    [ -n "$state" ] || fail "job $1 vanished from slurmctld"
    if is_final_state "$state"; then
      final_state=$state
      return 0
    fi
    sleep 0.5
  done
  fail "job $1 still $(job_field "$1" JobState) after ${job_bound_s} s"
}

submit_training() {
  local name=$1
  shift
  sbatch --parsable --job-name="gs-$name" --nodes=1 --ntasks-per-node=3 \
    --output="$work/job-%j.out" "$repo/slurm/train.sbatch" "$config" \
    "${common_overrides[@]}" "$@" || fail "sbatch of the $name job failed"
}

# Checks the final test accuracy in metrics file $1; prints it.
check_accuracy() {
  python3 - "$1" "$min_accuracy" <<'EOF' || fail "accuracy check failed for $1"
import json, sys
path, minimum = sys.argv[1], float(sys.argv[2])
with open(path) as f:
    records = [json.loads(line) for line in f if line.strip()]
finals = [r for r in records if r.get("kind") == "final"]
if not finals:
    sys.exit(f"{path}: no 'final' record")
accuracy = finals[-1].get("test_accuracy")
if not isinstance(accuracy, (int, float)) or accuracy < minimum:
    sys.exit(f"{path}: final test accuracy {accuracy} < {minimum}")
print(f"{accuracy:.4f}")
EOF
}

cd "$work" || fail "cannot enter $work"

# 1. Cluster and a trivial job.
say "strategy $strategy, work directory $work, slurmctld port $GRADSHARE_SLURM_PORT"
t_start=$(now)
started=1  # from here on, cleanup stops whatever of the cluster is running
env_lines=$("$repo/scripts/slurm-local" start) || fail "scripts/slurm-local start failed"
eval "$env_lines"
[ -n "${SLURM_CONF:-}" ] || fail "slurm-local start printed no SLURM_CONF"
hello=$(sbatch --parsable --output="$work/job-%j.out" --wrap 'hostname') ||
  fail "sbatch --wrap failed"
wait_final "$hello"
[ "$final_state" = COMPLETED ] || fail "trivial job $hello ended $final_state"
say "figure: cluster start to first finished job: $(elapsed "$t_start" "$(now)") s"

# 2. A small training job.
t_submit=$(now)
job=$(submit_training train training.epochs=2) || exit 1
say "submitted training job $job"
wait_final "$job"
t_done=$(now)
[ "$final_state" = COMPLETED ] ||
  fail "training job $job ended $final_state (exit $(job_field "$job" ExitCode))"
run_dir=$work/runs/fashion-mnist-mlp-slurm-$job
[ -f "$run_dir/metrics.jsonl" ] || fail "no $run_dir/metrics.jsonl"
accuracy=$(check_accuracy "$run_dir/metrics.jsonl") || exit 1
say "job $job COMPLETED, final test accuracy $accuracy"
say "figure: training job submit to completion: $(elapsed "$t_submit" "$t_done") s"

# 2b. The same from an installation (`cmake --install`), found through its environment module
# (Lmod): the installed train.sbatch, submitted from a directory without a build, must find the
# installed gradshare on the module's PATH.
if [ -f /usr/share/lmod/lmod/init/bash ]; then
  prefix=$work/prefix
  cmake --install "$(dirname "$bin")" --prefix "$prefix" >"$work/install.log" 2>&1 ||
    fail "cmake --install failed: $(tail -n 3 "$work/install.log")"
  mkdir -p "$work/elsewhere"
  job=$(cd "$work/elsewhere" && env -u GRADSHARE_BIN -u GRADSHARE_MPI_PREFIX bash --noprofile --norc -c '
      source /usr/share/lmod/lmod/init/bash && module use "$1/modulefiles" && module load gradshare &&
      sbatch --parsable --job-name=gs-installed --nodes=1 --ntasks-per-node=3 \
        --output="$2/job-%j.out" "$GRADSHARE_ROOT/share/gradshare/slurm/train.sbatch" \
        "$GRADSHARE_ROOT/share/gradshare/configs/fashion-mnist-mlp.yaml" "${@:3}"' \
      _ "$prefix" "$work" "${common_overrides[@]}" training.epochs=2) ||
    fail "sbatch of the installed script failed"
  wait_final "$job"
  [ "$final_state" = COMPLETED ] || fail "installed-script job $job ended $final_state"
  grep -q "$prefix/bin/gradshare" "$work/job-$job.out" ||
    fail "job $job did not run the installed gradshare"
  accuracy=$(check_accuracy "$work/elsewhere/runs/fashion-mnist-mlp-slurm-$job/metrics.jsonl") || exit 1
  say "installed train.sbatch (module load gradshare): job $job COMPLETED, accuracy $accuracy"
else
  say "Lmod not installed: the installed-script step is skipped (scripts/setup installs lmod)"
fi

# 3. Warning signal mid-training, requeue, resume.
# Many short epochs: the signal lands after the first one, long before the run could end.
job=$(submit_training requeue training.epochs=40) || exit 1
run_dir=$work/runs/fashion-mnist-mlp-slurm-$job
metrics=$run_dir/metrics.jsonl
say "submitted job $job; signalling it after its first epoch"
deadline=$((SECONDS + job_bound_s))
until [ -f "$metrics" ] && grep -q '"kind":"epoch"' "$metrics"; do
  state=$(job_field "$job" JobState)
  is_final_state "$state" && fail "job $job ended $state before its first epoch"
  [ $SECONDS -lt $deadline ] || fail "job $job logged no epoch in ${job_bound_s} s"
  sleep 0.2
done
t_signal=$(now)
scancel -b -s USR1 "$job" || fail "scancel -b -s USR1 $job failed"

# The script requeues on exit 75: the job comes back PENDING (BeginTime) with Restarts=1.
deadline=$((SECONDS + job_bound_s))
while :; do
  state=$(job_field "$job" JobState)
  [ "$state" = PENDING ] && [ "$(job_field "$job" Restarts)" = 1 ] && break
  if is_final_state "$state"; then
    grep -q "got SIGUSR1" "$work/job-$job.out" || fail "job $job ended $state before the signal"
    fail "job $job ended $state (exit $(job_field "$job" ExitCode)) instead of being requeued:" \
         "gradshare must checkpoint and exit 75 on SIGUSR1"
  fi
  [ $SECONDS -lt $deadline ] || fail "job $job not requeued after ${job_bound_s} s (state $state)"
  sleep 0.2
done
t_requeued=$(now)
cp "$metrics" "$work/metrics-before-requeue.jsonl" || fail "no $metrics after the first start"
grep -q "exit 75" "$work/job-$job.out" || fail "job output does not show exit 75 before the requeue"
ls "$run_dir"/checkpoints/*.h5 >/dev/null 2>&1 || fail "no checkpoint in $run_dir/checkpoints"

# Slurm holds a requeued job ~2 min because the node revokes the credential of its first run
# when cleaning it up and rejects a new one issued up to that same second ("Job credential
# revoked": the job FAILS; a restart racing the cleanup was also seen to get a stray SIGUSR1).
# So release it once the node is idle again (cleanup and revocation done) and the clock has
# moved on to the next second.
deadline=$((SECONDS + job_bound_s))
until [ "$(sinfo -h -N -o %T)" = idle ]; do
  [ $SECONDS -lt $deadline ] || fail "node not idle ${job_bound_s} s after the requeue"
  sleep 0.2
done
idle_at=$(date +%s)
while [ "$(date +%s)" -le "$idle_at" ]; do sleep 0.1; done
scontrol update JobId="$job" StartTime=now || fail "could not release job $job"
deadline=$((SECONDS + job_bound_s))
while :; do
  state=$(job_field "$job" JobState)
  [ "$state" = PENDING ] || break
  [ $SECONDS -lt $deadline ] || fail "requeued job $job still pending after ${job_bound_s} s"
  sleep 0.2
done
t_resumed=$(now)
# For the figures only: when the resumed run logs its first metrics line.
before_lines=$(wc -l <"$work/metrics-before-requeue.jsonl")
until [ "$(wc -l <"$metrics")" -gt "$before_lines" ] ||
      is_final_state "$(job_field "$job" JobState)"; do
  [ $SECONDS -lt $deadline ] || fail "resumed job $job logged nothing in ${job_bound_s} s"
  sleep 0.2
done
t_training=$(now)
wait_final "$job"
t_done=$(now)
[ "$final_state" = COMPLETED ] ||
  fail "resumed job $job ended $final_state (exit $(job_field "$job" ExitCode))"
restarts=$(job_field "$job" Restarts)
[ "$restarts" = 1 ] || fail "job $job restarted $restarts times, expected 1"
accuracy=$(check_accuracy "$metrics") || exit 1

# Resumed, not restarted: every epoch the second start logs comes after the last one the first
# start logged (metrics.jsonl is appended to; a rewritten file is compared as a whole).
python3 - "$work/metrics-before-requeue.jsonl" "$metrics" <<'EOF' || fail "job $job did not resume"
import json, sys
def read(path):
    with open(path) as f:
        return [line for line in f if line.strip()]
before, after = read(sys.argv[1]), read(sys.argv[2])
if after[:len(before)] == before:
    after = after[len(before):]
epochs_before = [json.loads(l)["epoch"] for l in before if json.loads(l).get("kind") == "epoch"]
epochs_after = [json.loads(l)["epoch"] for l in after if json.loads(l).get("kind") == "epoch"]
if not epochs_before:
    sys.exit("no epoch logged before the signal")
if not after:
    sys.exit("nothing logged after the restart")
repeated = [e for e in epochs_after if e <= max(epochs_before)]
if repeated:
    sys.exit(f"epochs {repeated} logged again after the restart"
             f" (last before: {max(epochs_before)})")
print(f"epochs before the signal: {epochs_before}, after the restart: {epochs_after}")
EOF
say "job $job requeued once, resumed and COMPLETED, final test accuracy $accuracy"
say "figure: USR1 to requeued (pending): $(elapsed "$t_signal" "$t_requeued") s"
say "figure: USR1 to running again (release included): $(elapsed "$t_signal" "$t_resumed") s"
say "figure: USR1 to the resumed run's first metrics line: $(elapsed "$t_signal" "$t_training") s"
say "figure: release to completion: $(elapsed "$t_resumed" "$t_done") s"
say "PASS"

#!/usr/bin/env bash
# Partitioned reading (issue 19): a synthetic HDF5 training set of 1.23 GB (300000 samples of
# 1024 float32 features, made block by block by scripts/make-example-hdf5) trained by
# 1 master + 4 workers whose memory is limited to 200 MB a rank, 6 times less than the data:
# the whole job runs in a memory cgroup of 5 x 200 MB (where the machine has one; the
# whole-file load needs 1.3 GB a rank and is killed there). data.read is left at auto, which
# must pick partitions for a file this large. Asserts: the run finished, every rank's peak
# resident memory is under 200 MB, the model learned the blobs (>= 90 %), every rank read
# ahead, and every minibatch it trained had been queued for reading before it was needed
# (its partition and the next: data.prefetch_partitions).
#   partitioned_reading_test.sh GRADSHARE MPIEXEC SOURCE_DIR
set -euo pipefail
gradshare=$1 mpiexec=$2 source_dir=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
cgroup=""
cleanup() {
  pkill -9 -f "gradshare train .*$work" 2>/dev/null || true
  if [ -n "$cgroup" ]; then
    sleep 0.5
    rmdir "$cgroup" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
limit_mb=200 ranks=5

# shellcheck source=../../tools/synthetic_blobs.sh
. "$source_dir/tests/tools/synthetic_blobs.sh"
synthetic_blobs "$source_dir" "$work" 300000 5000 1024 10 16

launch=("$mpiexec" --oversubscribe -n "$ranks" "$gradshare" train "$work/config.yaml" run.dir="$work/run"
        optimizer.learning_rate=0.001 training.batch_size=64)
if [ -w /sys/fs/cgroup/memory ] && mkdir "/sys/fs/cgroup/memory/gradshare-test-$$" 2>/dev/null; then
  cgroup=/sys/fs/cgroup/memory/gradshare-test-$$
  echo $((ranks * limit_mb * 1000 * 1000)) >"$cgroup/memory.limit_in_bytes"
  echo "memory cgroup $cgroup: $((ranks * limit_mb)) MB for the job"
  sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' sh "$cgroup" "${launch[@]}" >"$work/run.log" 2>&1 ||
    { tail -n 30 "$work/run.log"; echo "FAIL: the job failed under the memory limit"; exit 1; }
else
  echo "no writable memory cgroup here: the peak memory each rank reports is the check"
  "${launch[@]}" >"$work/run.log" 2>&1 || { tail -n 30 "$work/run.log"; echo "FAIL: the job failed"; exit 1; }
fi
grep "data: the training set stays in" "$work/run.log" ||
  { echo "FAIL: data.read auto did not read the 1.23 GB file by partitions"; exit 1; }
python3 "$source_dir/tests/tools/check_run.py" "$work/run" --min-accuracy 0.9 \
  --memory-ranks "$ranks" --max-peak-memory $((limit_mb * 1000 * 1000))
for rank in 1 2 3 4; do
  grep -h "read ahead:" "$work/run/rank-$rank.log" | sed "s/^/rank $rank: /"
  grep -q "read ahead: [1-9][0-9]* minibatches ready" "$work/run/rank-$rank.log" ||
    { echo "FAIL: rank $rank found no minibatch read ahead"; exit 1; }
  # With the next partition reserved and queued for reading (data.prefetch_partitions, default
  # 1), every minibatch a worker trains was queued before it was needed: none is missing from
  # the queue. How many the reader thread had not reached yet (read on the spot) is timing's.
  unqueued=$(sed -n 's/.*read on the spot (\([0-9]*\) never queued).*/\1/p' "$work/run/rank-$rank.log")
  [ "$unqueued" = 0 ] ||
    { echo "FAIL: rank $rank trained ${unqueued:-?} minibatches never queued for reading"; exit 1; }
done
echo "PASS"

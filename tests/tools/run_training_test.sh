#!/usr/bin/env bash
# Runs one training job into a fresh temporary output folder and checks the run directory.
#   run_training_test.sh GRADSHARE MPIEXEC RANKS CONFIG "CHECK ARGS" [overrides...]
# RANKS 0 runs without mpirun (one process). Extra mpirun options come from GS_MPIRUN_ARGS.
set -euo pipefail
gradshare=$1 mpiexec=$2 ranks=$3 config=$4 checks=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ "$ranks" -eq 0 ]; then
  "$gradshare" train "$config" run.output_dir="$out" "$@"
else
  # shellcheck disable=SC2086
  "$mpiexec" --oversubscribe ${GS_MPIRUN_ARGS:-} -n "$ranks" "$gradshare" train "$config" \
    run.output_dir="$out" "$@"
fi
run_dir=$(find "$out" -mindepth 1 -maxdepth 1 -type d | head -1)
[ -n "$run_dir" ] || { echo "FAIL: no run directory was created"; exit 1; }
# shellcheck disable=SC2086
python3 "$here/check_run.py" "$run_dir" $checks

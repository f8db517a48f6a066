#!/usr/bin/env bash
# `gradshare report` end to end:
#   1. trains a gradient-sharing run (1 master + 3 workers under mpirun, Fashion-MNIST subset,
#      3 epochs, logging.encoding_debug, a checkpoint every epoch) and an allreduce run
#      (1 master + 2 workers, 2 epochs) to overlay on it;
#   2. a missing run directory and a malformed metrics.jsonl line: exit 2, one line naming the
#      directory / file:line, nothing written;
#   3. the report of both runs: the HTML (one <svg> per chart, a PNG per chart, a worker-table
#      row per worker, both configs, nothing external) and a headless-Chromium screenshot whose
#      charts are drawn (check_report.py).
#   report_test.sh GRADSHARE MPIEXEC MLP_CONFIG   (Debian's chromium and /usr/bin/python3 with PIL)
set -euo pipefail
gradshare=$1 mpiexec=$2 config=$3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
command -v chromium >/dev/null || fail "chromium not found (scripts/setup installs Debian's chromium)"
subset=(data.train_subset=12000 data.test_subset=2000 logging.every_steps=20 checkpoint.every_epoch=true)

# 1. Two real runs.
"$mpiexec" --oversubscribe -n 4 "$gradshare" train "$config" run.dir="$work/sharing" "${subset[@]}" \
  training.epochs=3 logging.encoding_debug=true >"$work/sharing.log" 2>&1 ||
  { tail -n 20 "$work/sharing.log"; fail "the gradient-sharing run failed"; }
"$mpiexec" --oversubscribe -n 3 "$gradshare" train "$config" run.dir="$work/allreduce" "${subset[@]}" \
  training.epochs=2 training.strategy=allreduce >"$work/allreduce.log" 2>&1 ||
  { tail -n 20 "$work/allreduce.log"; fail "the allreduce run failed"; }

# 2. Bad input: one line, exit 2, nothing written.
expect_user_error() {  # expected-text command...
  local expected=$1 code=0
  shift
  "$@" >"$work/stdout" 2>"$work/stderr" || code=$?
  cat "$work/stderr"
  [ "$code" -eq 2 ] || fail "exit code $code, expected 2, for: $*"
  [ "$(wc -l <"$work/stderr")" -eq 1 ] || fail "$(wc -l <"$work/stderr") lines on stderr, expected 1"
  grep -qF -- "$expected" "$work/stderr" || fail "stderr does not say '$expected'"
}
mkdir -p "$work/bad-out"
expect_user_error "$work/nowhere: no such run directory" \
  "$gradshare" report "$work/sharing" "$work/nowhere" -o "$work/bad-out/report.html"
mkdir -p "$work/broken"
cp "$work/sharing/config.yaml" "$work/sharing/metrics.jsonl" "$work/broken/"
echo '{"kind":"step","step":' >>"$work/broken/metrics.jsonl"
lines=$(wc -l <"$work/broken/metrics.jsonl")
expect_user_error "$work/broken/metrics.jsonl:$lines: malformed JSON" \
  "$gradshare" report "$work/sharing" "$work/broken" -o "$work/bad-out/report.html"
[ -z "$(ls -A "$work/bad-out")" ] || fail "a failed report wrote: $(ls -A "$work/bad-out")"

# 3. The report, rendered.
mkdir -p "$work/out"
"$gradshare" report "$work/sharing" "$work/allreduce" -o "$work/out/report.html" ||
  fail "gradshare report failed"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/chromium" \
  --screenshot="$work/out/screenshot.png" --window-size=1400,3000 "file://$work/out/report.html" \
  >"$work/chromium.log" 2>&1 || { tail -n 20 "$work/chromium.log"; fail "chromium failed"; }
/usr/bin/python3 "$here/check_report.py" "$work/out/report.html" "$work/out/screenshot.png" \
  --workers 3 2 --strategies gradient_sharing allreduce
# Kept for a person to look at: the page and its screenshot, in the test's working directory.
keep=$PWD/report-real-runs
rm -rf "$keep" && cp -r "$work/out" "$keep"
echo "screenshot: $keep/screenshot.png (page: $keep/report.html)"
echo PASS

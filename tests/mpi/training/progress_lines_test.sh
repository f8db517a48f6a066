#!/usr/bin/env bash
# Progress lines by time (issue 18, item 7): every logging.every_steps step goes to
# metrics.jsonl as a record, but the log gets a progress line at most every
# logging.every_seconds: with an hour, one line (the first); with 0, one per record. On a
# terminal (`script` gives the run a pseudo-terminal) the line is redrawn in place: carriage
# returns and erase-to-end-of-line, and the next ordinary line starts on a line of its own.
#   progress_lines_test.sh GRADSHARE CONFIG
set -euo pipefail
gradshare=$1 config=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
small=(training.strategy=local data.train_subset=6000 data.test_subset=500 training.epochs=2
       logging.every_steps=10)
records() { grep -c '"kind":"step"' "$1/metrics.jsonl"; }
progress_lines() { grep -c 'samples/s' "$1/rank-0.log" || true; }

"$gradshare" train "$config" run.dir="$work/hour" "${small[@]}" logging.every_seconds=3600 \
  >"$work/hour.log" 2>&1 || fail "run with every_seconds=3600 failed: $(tail -3 "$work/hour.log")"
[ "$(records "$work/hour")" -ge 18 ] || fail "only $(records "$work/hour") step records"
[ "$(progress_lines "$work/hour")" -eq 1 ] ||
  fail "every_seconds=3600: $(progress_lines "$work/hour") progress lines in the log, expected 1"
[ "$(grep -c samples/s "$work/hour.log")" -eq 1 ] || fail "every_seconds=3600: terminal output not throttled"

"$gradshare" train "$config" run.dir="$work/all" "${small[@]}" logging.every_seconds=0 \
  >"$work/all.log" 2>&1 || fail "run with every_seconds=0 failed"
[ "$(progress_lines "$work/all")" -eq "$(records "$work/all")" ] ||
  fail "every_seconds=0: $(progress_lines "$work/all") progress lines for $(records "$work/all") records"
echo "every_seconds 3600: 1 line for $(records "$work/hour") records; 0: $(records "$work/all") lines"

script -qec "$gradshare train $config run.dir=$work/tty ${small[*]} logging.every_seconds=0" \
  "$work/tty.typescript" >/dev/null || fail "run on a pseudo-terminal failed"
redraws=$(grep -c $'\r[0-9:]* INFO \[master\] epoch [0-9]*/2  step .*\e\[K' "$work/tty.typescript" || true)
[ "$redraws" -ge 1 ] || fail "no progress line redrawn in place on the terminal"
# Each in-place line is ended by a newline before the epoch line: no epoch line is glued to it.
if grep -q $'\e\[K[0-9:]* INFO' "$work/tty.typescript"; then fail "an ordinary line follows a progress line on the same line"; fi
grep -q "INFO \[master\] epoch 1 done" "$work/tty.typescript" || fail "no epoch line on the terminal"
echo "terminal: progress redrawn in place ($redraws lines with a carriage return)"
echo PASS

#!/usr/bin/env bash
# A checkpoint that does not fit the disk (a 2 MiB tmpfs; needs root, skipped otherwise):
# exit 1, one message naming the cause ("No space left on device"), no temporary file left.
#   disk_full_test.sh GRADSHARE CONFIG
set -euo pipefail
gradshare=$1 config=$2
[ "$(id -u)" -eq 0 ] || { echo "SKIP: mounting a small tmpfs needs root"; exit 77; }
small=$(mktemp -d)
trap 'umount "$small" 2>/dev/null || true; rm -rf "$small"' EXIT
mount -t tmpfs -o size=2m tmpfs "$small" || { echo "SKIP: cannot mount a tmpfs here"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
code=0
"$gradshare" train "$config" run.output_dir="$small" data.train_subset=640 data.test_subset=100 \
  training.epochs=1 >"$small.log" 2>&1 || code=$?
grep -a "checkpoint not written" "$small.log" | tail -1 | cut -c1-240
[ "$code" -eq 1 ] || { tail -20 "$small.log"; fail "exit code $code, expected 1"; }
grep -q "No space left on device" "$small.log" || fail "the message does not name the cause"
leftover=$(find "$small" -name '*.tmp' | head -1)
[ -z "$leftover" ] || fail "a temporary file was left: $leftover"
rm -f "$small.log"
echo PASS

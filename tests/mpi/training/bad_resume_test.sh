#!/usr/bin/env bash
# checkpoint.resume naming a missing file, a file that is not HDF5, or a checkpoint of another
# model: one line naming the key and the file, exit code 2, and no run directory written.
#   bad_resume_test.sh GRADSHARE MLP_CONFIG CNN_CONFIG
set -euo pipefail
gradshare=$1 mlp=$2 cnn=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
echo "not a checkpoint" >"$work/text.h5"
# A real checkpoint of the MLP, for the CNN to refuse.
"$gradshare" train "$mlp" run.dir="$work/mlp" data.train_subset=640 data.test_subset=100 \
  training.epochs=1 >"$work/mlp.log" 2>&1 || { cat "$work/mlp.log"; fail "the MLP run failed"; }
mlp_checkpoint=$(ls "$work"/mlp/checkpoints/*.h5 2>/dev/null | head -1)
[ -n "$mlp_checkpoint" ] || mlp_checkpoint="$work/mlp/model.h5"
for case in "$mlp|$work/missing.h5|no such checkpoint" "$mlp|$work/text.h5|not an HDF5 file" \
            "$cnn|$mlp_checkpoint|parameters, the model of this config has"; do
  IFS='|' read -r config file expected <<<"$case"
  out="$work/out-$RANDOM"
  code=0
  "$gradshare" train "$config" run.output_dir="$out" checkpoint.resume="$file" \
    >"$work/stdout" 2>"$work/stderr" || code=$?
  echo "$(cat "$work/stderr")"
  [ "$code" -eq 2 ] || fail "$file: exit code $code, expected 2"
  [ "$(wc -l <"$work/stderr")" -eq 1 ] || fail "$file: $(wc -l <"$work/stderr") lines on stderr, expected 1"
  grep -q "checkpoint.resume: .*$expected" "$work/stderr" || fail "$file: the line does not say '$expected'"
  [ ! -e "$out" ] || fail "$file: $out was created"
done
echo PASS

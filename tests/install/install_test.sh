#!/usr/bin/env bash
# `cmake --install` and the environment module (issue 18): installs the build into a fresh
# prefix; in a clean shell (no inherited environment) Debian's Lmod loads the installed
# modulefile, `gradshare --version` runs from the prefix, and the installed binary trains one
# short epoch from the installed config (model.h5 written). Exit 77 (skipped) without Lmod.
#   install_test.sh BUILD_DIR
set -euo pipefail
build=$1
lmod_init=/usr/share/lmod/lmod/init/bash
[ -f "$lmod_init" ] || { echo "SKIP: Lmod is not installed (apt-get install lmod)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || fail "cmake --install failed"
for file in bin/gradshare share/gradshare/configs/fashion-mnist-mlp.yaml \
            share/gradshare/slurm/train.sbatch share/doc/gradshare/README.md \
            share/doc/gradshare/docs/design.md share/doc/gradshare/CHANGELOG.md modulefiles/gradshare/*.lua; do
  compgen -G "$prefix/$file" >/dev/null || fail "$file not installed"
done
out=$(env -i HOME="$work" bash --noprofile --norc -c '
  source "$1" && module use "$2/modulefiles" && module load gradshare && module list 2>&1 &&
  echo "which: $(command -v gradshare)" && gradshare --version &&
  cd "$3" && gradshare train "$GRADSHARE_ROOT/share/gradshare/configs/fashion-mnist-mlp.yaml" \
    training.strategy=local data.train_subset=640 data.test_subset=200 training.epochs=1 \
    run.dir="$3/run" >"$3/train.log" 2>&1 && echo "trained"' _ "$lmod_init" "$prefix" "$work") ||
  fail "module load / run failed: $out $(tail -n 5 "$work/train.log" 2>/dev/null)"
echo "$out"
grep -q "^which: $prefix/bin/gradshare$" <<<"$out" || fail "gradshare is not the installed one"
grep -q "^gradshare [0-9]" <<<"$out" || fail "no version line"
grep -q "gradshare/" <<<"$out" || fail "module list does not show gradshare"
grep -q "^trained$" <<<"$out" && [ -f "$work/run/model.h5" ] || fail "the installed binary did not train"
echo PASS

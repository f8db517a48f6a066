#!/usr/bin/env bash
# gradshare simulate from the command line: a projection with its table, saturation lines and
# CSV (the star's master copies W x (W - 1) per step, the mesh's depth as breadth-first filling
# gives); bad arguments give one line naming the option or file, exit code 2, and no CSV.
#   simulate_command_test.sh GRADSHARE CONFIG
set -euo pipefail
gradshare=$1 config=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$gradshare" simulate "$config" --workers 8,64,512 --events-up-to 8 --steps 20 --link 1gbit \
  --csv "$work/out.csv" >"$work/out.txt" || { cat "$work/out.txt"; fail "simulate failed"; }
cat "$work/out.txt"
[ "$(grep -c '^plain ' "$work/out.txt")" = 3 ] || fail "expected 3 plain rows"
[ "$(grep -c '^mesh ' "$work/out.txt")" = 3 ] || fail "expected 3 mesh rows"
grep -Eq '^plain +512 +1 .* 261632 ' "$work/out.txt" || fail "the star's master must send 512 x 511 copies"
grep -Eq '^mesh +512 +3 ' "$work/out.txt" || fail "512 workers at fan-out 8 fill 3 levels"
grep -Eq '^plain: (saturates at [0-9]+ workers|efficiency stays)' "$work/out.txt" || fail "no plain saturation line"
[ "$(wc -l <"$work/out.csv")" = 7 ] || fail "the CSV needs a header and 6 rows"

# The aggregating mesh: each link sends the measured messages per link and step, so the master
# sends 8 times that many copies (its 8 children's links) at 4096 workers as at 32768, and a
# leaf, whose messages carry every other worker's content up to the link's cap, takes in the same
# bytes.
"$gradshare" simulate "$config" --workers 4096,32768 --topology aggregate --events-up-to 8 \
  --steps 20 --link 10gbit >"$work/agg.txt" || { cat "$work/agg.txt"; fail "simulate aggregate failed"; }
cat "$work/agg.txt"
grep -q '^aggregate (8 workers): .* messages per link per worker step, .* after the drain.s flush round replicas differ' \
  "$work/agg.txt" || fail "no aggregate summary line"
leaf_in() { awk -v w="$1" '$1 == "aggregate" && $2 == w { print $11 }' "$work/agg.txt"; }
master_copies() { awk -v w="$1" '$1 == "aggregate" && $2 == w { print $7 }' "$work/agg.txt"; }
[ -n "$(leaf_in 4096)" ] && [ "$(leaf_in 4096)" = "$(leaf_in 32768)" ] ||
  fail "a leaf's bytes per step must stop growing at the bitmap: $(leaf_in 4096) vs $(leaf_in 32768)"
per_link=$(sed -n 's/^aggregate (8 workers): \([0-9.]*\) messages per link per worker step.*/\1/p' "$work/agg.txt")
# (the table rounds the copies to a whole number, the summary the rate to 0.01)
[ -n "$per_link" ] && [ "$(master_copies 4096)" = "$(master_copies 32768)" ] &&
  awk -v m="$per_link" -v c="$(master_copies 4096)" 'BEGIN { d = c - 8 * m; exit !(d <= 0.55 && d >= -0.55) }' ||
  fail "the master sends its 8 links' messages, 8 x $per_link: not $(master_copies 4096) and $(master_copies 32768)"

expect_usage_error() {  # expect_usage_error WORD ARGS...: exit 2, one line naming WORD
  local word=$1 rc=0
  shift
  "$gradshare" simulate "$@" >"$work/err.out" 2>"$work/err.txt" || rc=$?
  [ $rc = 2 ] || { cat "$work/err.txt"; fail "simulate $* exited $rc, not 2"; }
  [ "$(wc -l <"$work/err.txt")" = 1 ] || { cat "$work/err.txt"; fail "simulate $*: not one line"; }
  grep -q -- "$word" "$work/err.txt" || { cat "$work/err.txt"; fail "simulate $*: does not name $word"; }
}
expect_usage_error --link "$config" --link fast
expect_usage_error --link-burst "$config" --link-burst lots
expect_usage_error --workers "$config" --workers 8,0
expect_usage_error --topology "$config" --topology ring
expect_usage_error --csv "$config" --csv "$work/missing/out.csv"
[ ! -e "$work/missing" ] || fail "a bad --csv created something"
expect_usage_error missing.yaml "$work/missing.yaml"
expect_usage_error --validate --validate "$work/no-run"
mkdir "$work/empty-run"
expect_usage_error config.yaml --validate "$work/empty-run"
echo PASS

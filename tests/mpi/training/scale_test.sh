#!/usr/bin/env bash
# 65 ranks on one machine (issue 19): 1 master + 64 workers of gradient sharing, oversubscribed,
# on a tiny model (compute is cheap: what is tested is the topology, the relays and the update
# exchange). Every scenario asserts model equivalence, no update applied twice, a peak-memory
# record from every rank, and for the runs without a failure the relay count of every rank as
# the tree predicts: in a tree each message reaches every replica once, so a replica with L links
# forwards (messages of the others) x (L - 1) copies, and its links are what the tree built
# breadth-first with topology.max_children gives, and every rank's bytes as the simulator's
# flow model predicts them (gradshare simulate --validate).
#   scale_test.sh GRADSHARE MPIEXEC SOURCE_DIR SCENARIO
# SCENARIO:
#   plain       the star: the master has 64 links and forwards every message 63 times
#   mesh-8      max_children 8: depth 2, the master and workers 1..7 have 9 links
#   mesh-4      max_children 4: depth 3
#   mesh-4-kill max_children 4 + 1 spare under `mpirun --with-ft ulfm`: inner node 2 (depth 1,
#               with two levels below it) killed at its 20th step (of about 40); its children re-attached,
#               the spare takes its rank, the job finishes equal and with nothing applied twice
#   mesh-8-aggregate, mesh-4-aggregate   the meshes with topology.aggregate (issue 37): nothing
#               forwarded, every link used, the replicas equal after the drain's flush round
#   mesh-4-aggregate-kill   mesh-4-kill aggregating: every survivor's relay starts again on the
#               repaired tree from the master's parameters (a worker still loading starts as a
#               replacement does); equal, nothing applied twice
set -euo pipefail
gradshare=$1 mpiexec=$2 source_dir=$3 scenario=$4
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
trap 'pkill -9 -f "gradshare train .*$work" 2>/dev/null || true; rm -rf "$work"' EXIT
ranks=65

# shellcheck source=../../tools/scale_job.sh
. "$source_dir/tests/tools/scale_job.sh"
scale_job "$source_dir" "$work"

ft=()
args=("${scale_args[@]}")
max_children=64
case "$scenario" in
  plain) args+=(topology.mode=plain) ;;
  mesh-8) max_children=8 args+=(topology.mode=mesh topology.max_children=8 topology.aggregate=false) ;;
  mesh-4) max_children=4 args+=(topology.mode=mesh topology.max_children=4 topology.aggregate=false) ;;
  mesh-8-aggregate)
    max_children=8 args+=(topology.mode=mesh topology.max_children=8 topology.aggregate=true) ;;
  mesh-4-aggregate)
    max_children=4 args+=(topology.mode=mesh topology.max_children=4 topology.aggregate=true) ;;
  mesh-4-aggregate-kill)
    max_children=4
    args+=(topology.mode=mesh topology.max_children=4 topology.aggregate=true
           fault_tolerance.spares=1 fault_tolerance.timeout_ms=60000)
    ft=(--with-ft ulfm)
    export GRADSHARE_INJECT=2:20:sigkill
    ranks=66
    ;;
  mesh-4-kill)
    max_children=4
    args+=(topology.mode=mesh topology.max_children=4 topology.aggregate=false fault_tolerance.spares=1
           fault_tolerance.timeout_ms=60000)
    ft=(--with-ft ulfm)
    export GRADSHARE_INJECT=2:20:sigkill
    ranks=66
    ;;
  *) echo "unknown scenario $scenario"; exit 2 ;;
esac
start=$(date +%s.%N)
"$mpiexec" "${ft[@]}" --oversubscribe -n "$ranks" "$gradshare" train "$work/config.yaml" \
  run.dir="$work/run" "${args[@]}" >"$work/run.log" 2>&1 ||
  { tail -n 40 "$work/run.log"; echo "FAIL: the $ranks-rank job failed"; exit 1; }
echo "$scenario: $ranks ranks finished in $(echo "$(date +%s.%N) - $start" | bc) s wall"
grep -E "sharing summary|relays( \(aggregating\))?:|peak resident memory per rank|recovered in|final test" "$work/run/rank-0.log" |
  sed 's/^[0-9:]* INFO \[master\] //' | cut -c1-400

checks=(--equivalent --none-applied-twice --memory-ranks 65 --min-accuracy 0.8)
if [[ "$scenario" == *-kill ]]; then
  python3 "$source_dir/tests/tools/check_run.py" "$work/run" "${checks[@]}" --recoveries 1 --replaced 1
  grep -q '"tree_version":2' "$work/run/metrics.jsonl" || { echo "FAIL: the tree was not repaired"; exit 1; }
  if [[ "$scenario" == *-aggregate-kill ]]; then
    grep -q "rank 2 died holding its relay residuals" "$work/run/rank-0.log" ||
      { echo "FAIL: the lost relay residuals are not reported"; exit 1; }
    # Every worker rank starts again exactly once: a survivor's relay on the repaired tree, or,
    # for the spare in rank 2's place and any worker still loading when the repair came (how
    # many depends on the machine's load), a replacement from the master's model.
    for ((rank = 1; rank < 65; rank++)); do
      log="$work/run/rank-$rank.log"
      restarts=$(grep -c "relay restarted on tree version 2\|replacement started from the master's model" "$log" || true)
      [ "$restarts" = 1 ] || { echo "FAIL: rank $rank started again $restarts times after the repair"; exit 1; }
    done
    grep -q "replacement started from the master's model" "$work/run/rank-2.log" ||
      { echo "FAIL: the spare did not start in rank 2's place"; exit 1; }
    restarted=$(grep -l "relay restarted on tree version 2" "$work"/run/rank-*.log | wc -l)
    sent=$(grep -o "[0-9]* whole replica states sent" "$work/run/rank-0.log" | cut -d' ' -f1)
    late=$(grep -o "[0-9]* workers still starting up" "$work/run/rank-0.log" | cut -d' ' -f1 || true)
    echo "relays restarted: $restarted survivors, the master sent $sent whole replica states," \
      "${late:-0} workers still starting up"
    [ "$restarted" = "$sent" ] || { echo "FAIL: $sent survivors were told to restart, $restarted did"; exit 1; }
    [ $((sent + ${late:-0} + 1)) = 64 ] ||
      { echo "FAIL: $sent restarted, ${late:-0} late starts and the spare are not the 64 workers"; exit 1; }
  fi
elif [[ "$scenario" == *-aggregate ]]; then
  python3 "$source_dir/tests/tools/check_run.py" "$work/run" "${checks[@]}" --aggregated "$max_children"
  # What aggregates carry depends on timing: the simulator sets its figures beside the run's.
  "$gradshare" simulate --validate "$work/run" --link unlimited --nodes 1 --cores "$(nproc)" \
    >"$work/validation.txt" || { cat "$work/validation.txt"; echo "FAIL: simulate --validate"; exit 1; }
  grep -E "^aggregates:|time per step" "$work/validation.txt"
else
  python3 "$source_dir/tests/tools/check_run.py" "$work/run" "${checks[@]}" \
    --relays-as-tree "$max_children"
  # The simulator's flow model, given what each worker published, must predict every rank's
  # data-plane bytes and messages, sent and received, exactly (gradshare simulate --validate
  # exits 1 otherwise).
  "$gradshare" simulate --validate "$work/run" --link unlimited --nodes 1 --cores "$(nproc)" \
    >"$work/validation.txt" || { cat "$work/validation.txt"; echo "FAIL: simulator bytes differ"; exit 1; }
  grep -E "ranks exact|time per step" "$work/validation.txt"
fi
echo PASS

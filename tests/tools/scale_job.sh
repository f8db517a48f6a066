# scale_job.sh: sourced by the 65-rank scale test and its bench (scripts/bench/scale_seeds).
#   scale_job SOURCE_DIR WORK: the blobs data and config in WORK (synthetic_blobs), and
#   scale_args: the overrides every scale run uses (a run adds its topology)
# shellcheck source=synthetic_blobs.sh
. "$(dirname "${BASH_SOURCE[0]}")/synthetic_blobs.sh"
scale_job() {
  synthetic_blobs "$1" "$2" 20000 2000 16 4 8
}
# shellcheck disable=SC2034  # read by the scripts that source this file
scale_args=(optimizer.learning_rate=0.003 training.batch_size=8 data.partition_batches=2
            logging.every_steps=200 transport.timeout_ms=120000)

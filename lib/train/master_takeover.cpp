// master_takeover.cpp: become_master, read_run_so_far (see master_takeover.h).
#include "train/master_takeover.h"

#include <fstream>
#include <string>

#include "core/log.h"
#include "data/loader.h"
#include "report/json_value.h"

namespace gradshare::train {

namespace {

// A record the lost master was writing when it died has no end: end it, so the next record
// starts on a line of its own (readers skip the broken one).
void end_cut_line(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in || in.tellg() <= 0) return;
  in.seekg(-1, std::ios::end);
  if (in.get() == '\n') return;
  std::ofstream(path, std::ios::binary | std::ios::app) << '\n';
}

}  // namespace

RunSoFar read_run_so_far(const RunContext& context) {
  RunSoFar so_far;
  for (const auto& record : report::read_records(context.run_directory.file("metrics.jsonl"))) {
    const auto kind = record.string_at("kind");
    if (kind == "epoch") {
      so_far.epochs_evaluated = std::max(
          so_far.epochs_evaluated, static_cast<std::int64_t>(record.number_at("epoch").value_or(0)));
      so_far.wall_seconds = std::max(so_far.wall_seconds, record.number_at("wall_seconds").value_or(0));
    }
    so_far.stopped_early = so_far.stopped_early || kind == "early_stop";
    so_far.steps =
        std::max(so_far.steps, static_cast<std::int64_t>(record.number_at("step").value_or(0)));
  }
  return so_far;
}

std::unique_ptr<RunLock> become_master(RunContext& context, const RepairOutcome& repair) {
  auto& logger = core::Logger::instance();
  logger.set_tag("master");
  logger.set_terminal(true);
  logger.open_file(context.run_directory.file("rank-0.log"));
  core::log_warn("the master (rank 0) was lost: " + new_master_name(repair.former_rank) +
                 " takes its place inside the job");
  auto lock = RunLock::take_from_lost_master(context.run_directory.path());
  const auto metrics = context.run_directory.file("metrics.jsonl");
  end_cut_line(metrics);
  context.metrics = report::MetricsLog(metrics);
  return lock;
}

void load_evaluation_sets(RunContext& context) {
  if (context.data.test.size() > 0) return;
  auto evaluation = data::load_data(context.config.data,
                                    static_cast<std::uint64_t>(context.config.run.seed),
                                    /*evaluation_sets=*/true, context.data.normalization);
  context.data.validation = std::move(evaluation.validation);
  context.data.test = std::move(evaluation.test);
}

std::string new_master_name(int former_rank) {
  return former_rank < 0 ? std::string("a spare") : "worker rank " + std::to_string(former_rank);
}

std::string takeover_note(const RepairOutcome& repair) {
  return "the master (rank 0) was lost; " + new_master_name(repair.former_rank) +
         " became the master inside the job and the workers went on from the newest state any "
         "of them held";
}

}  // namespace gradshare::train

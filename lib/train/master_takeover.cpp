// master_takeover.cpp: become_master, read_run_so_far (see master_takeover.h).
#include "train/master_takeover.h"

#include <fstream>
#include <set>
#include <string>
#include <utility>

#include "ckpt/checkpoint.h"
#include "core/log.h"
#include "data/loader.h"
#include "report/json_value.h"
#include "runtime/checkpointer.h"
#include "runtime/model_file.h"

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

// The newest checkpoint's position: the run directory's, else the one the run resumed from.
std::optional<runtime::DataPosition> checkpoint_position(const runtime::RunContext& context) {
  auto path = runtime::newest_checkpoint(context.run_directory);
  const auto& resume = context.config.checkpoint.resume;
  if (!path && resume != "auto" && resume != "never") path = resume;
  if (!path) return std::nullopt;
  try {
    return runtime::data_position(ckpt::read_checkpoint(*path));
  } catch (const core::UserError& error) {
    core::log_warn("cannot read checkpoint " + *path + " (" + error.what() +
                   "): partitions done before it that no worker reports are trained again");
    return std::nullopt;
  }
}

}  // namespace

runtime::DataPosition rebuilt_position(const runtime::RunContext& context, const RunSoFar& so_far,
                                       std::int64_t per_epoch,
                                       const std::vector<runtime::PartitionGrant>& reported) {
  const std::int64_t epochs = context.config.training.epochs;
  const std::int64_t first = so_far.epochs_evaluated;
  std::set<std::pair<std::int64_t, std::int64_t>> done;
  const auto add = [&](const runtime::PartitionGrant& grant) {
    if (grant.epoch >= first && grant.epoch < epochs && grant.partition >= 0 &&
        grant.partition < per_epoch)
      done.insert({grant.epoch, grant.partition});
  };
  if (const auto checkpoint = checkpoint_position(context)) {
    for (auto epoch = first; epoch < checkpoint->first_epoch; ++epoch)  // complete in it
      for (std::int64_t partition = 0; partition < per_epoch; ++partition) add({epoch, partition});
    for (const auto index : checkpoint->partitions_done)
      add({checkpoint->first_epoch + index / per_epoch, index % per_epoch});
  }
  for (const auto& grant : reported) add(grant);
  runtime::DataPosition position{first, {}};
  for (const auto& [epoch, partition] : done)
    position.partitions_done.push_back((epoch - first) * per_epoch + partition);
  return position;
}

RunSoFar read_run_so_far(const runtime::RunContext& context) {
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

std::unique_ptr<runtime::RunLock> become_master(runtime::RunContext& context,
                                                const RepairOutcome& repair) {
  auto& logger = core::Logger::instance();
  logger.set_tag("master");
  logger.set_terminal(true);
  logger.open_file(context.run_directory.file("rank-0.log"));
  core::log_warn("the master (rank 0) was lost: " + new_master_name(repair.former_rank) +
                 " takes its place inside the job");
  auto lock = runtime::RunLock::take_from_lost_master(context.run_directory.path());
  const auto metrics = context.run_directory.file("metrics.jsonl");
  end_cut_line(metrics);
  context.metrics = report::MetricsLog(metrics);
  return lock;
}

void load_evaluation_sets(runtime::RunContext& context) {
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

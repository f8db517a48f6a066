// replacement.cpp: run_replacement_worker.
#include "comm/mpi/train/replacement.h"

#include <string>

#include "comm/mpi/train/mpi_group_session.h"
#include "comm/mpi/train/mpi_sharing_session.h"
#include "data/loader.h"
#include "core/errors.h"
#include "train/join_info.h"
#include "train/strategy_registry.h"
#include "runtime/worker_log.h"

namespace gradshare::cli {

namespace {

// The training split with the master's normalisation (partitioned reading then reads no
// feature at start-up), and this process's log as the worker's.
void become_worker(runtime::RunContext& context, const train::JoinInfo& info) {
  context.data = data::load_data(context.config.data,
                                 static_cast<std::uint64_t>(context.config.run.seed),
                                 /*evaluation_sets=*/false, info.normalization);
  context.run_directory = report::RunDirectory::attach(info.run_path);
  runtime::log_as_worker(context);
}

}  // namespace

int run_replacement_worker(runtime::RunContext& context, comm::RepairedJob joined) {
  const auto info = train::parse_join_info(joined.join_info);
  context.size = info.size;
  context.phase = runtime::RunContext::kTraining;
  const auto& strategy = train::strategy_named(context.config.training.strategy);
  if (strategy.replace_in_sharing) {
    // Collective with the survivors' repair.
    train::MpiSharingSession session(context, std::move(joined));
    become_worker(context, info);
    return strategy.replace_in_sharing(context, session);
  }
  GS_CHECK(strategy.replace_in_group != nullptr,
           std::string("a replacement joined a '") + strategy.name + "' job");
  train::MpiGroupSession session(context, joined);  // collective with the survivors' repair
  become_worker(context, info);
  return strategy.replace_in_group(context, session);
}

}  // namespace gradshare::cli

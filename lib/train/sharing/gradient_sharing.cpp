#include "train/sharing/gradient_sharing.h"

#include <algorithm>
#include <cmath>

#include "comm/byte_io.h"
#include "core/log.h"
#include "data/loader.h"
#include "train/normalization_message.h"
#include "train/sharing/in_process_session.h"
#include "train/sharing/mpi_session.h"
#include "train/sharing/roles.h"

namespace gradshare::train {

double relative_max_difference(std::span<const float> a, std::span<const float> b) {
  double difference = 0, scale = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    difference = std::max(difference, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  if (a.size() != b.size()) return INFINITY;
  return scale > 0 ? difference / scale : difference;
}

namespace {

// The log of a process that took a worker's place goes to that worker's file.
void log_as_worker(RunContext& context) {
  auto& logger = core::Logger::instance();
  logger.set_tag("rank " + std::to_string(context.rank));
  logger.open_file(context.run_directory.file("rank-" + std::to_string(context.rank) + ".log"));
}

}  // namespace

int run_gradient_sharing(RunContext& context) {
  if (auto* threads = dynamic_cast<comm::InProcessJob*>(context.job)) {
    InProcessSharingSession session(context, *threads);
    context.phase = RunContext::kTraining;
    return context.is_master() ? run_sharing_master(context, session)
                               : run_sharing_worker(context, session, /*replacement=*/false);
  }
  MpiSharingSession session(context);
  context.phase = RunContext::kTraining;
  if (session.is_spare()) {
    core::log_info("spare: waiting to replace a worker that fails");
    if (!session.wait_for_assignment()) {
      core::log_info("spare: released, not needed");
      return 0;
    }
    log_as_worker(context);
    core::log_info("spare: taking the place of rank " + std::to_string(context.rank));
    return run_sharing_worker(context, session, /*replacement=*/true);
  }
  return context.is_master() ? run_sharing_master(context, session)
                             : run_sharing_worker(context, session, /*replacement=*/false);
}

int run_sharing_replacement(RunContext& context, comm::RepairedJob joined) {
  comm::ByteReader info(joined.join_info, "join info");
  const std::string run_path = info.get_string();
  context.size = info.get<std::int32_t>();
  // The master's normalisation: partitioned reading then reads no feature at start-up.
  const auto normalization = parse_normalization(info.get_vector<std::uint8_t>());
  info.expect_end();
  MpiSharingSession session(context, std::move(joined));  // collective with the survivors' repair
  context.data = data::load_data(context.config.data,
                                 static_cast<std::uint64_t>(context.config.run.seed),
                                 /*evaluation_sets=*/false, normalization);
  context.run_directory = RunDirectory::attach(run_path);
  log_as_worker(context);
  return run_sharing_worker(context, session, /*replacement=*/true);
}

}  // namespace gradshare::train

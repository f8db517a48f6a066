// downpour/takeover.cpp: take_over_downpour (see takeover.h).
#include "train/downpour/takeover.h"

#include <algorithm>

#include "core/errors.h"
#include "core/log.h"
#include "data/epoch_plan.h"
#include "runtime/checkpointer.h"
#include "train/downpour/shard_zero_file.h"
#include "train/messages.h"
#include "runtime/partition_data.h"

namespace gradshare::train {

DownpourTakeover take_over_downpour(runtime::RunContext& context, DownpourNetwork& network,
                                    const std::optional<DownpourHandover>& handover) {
  const auto& layout = network.layout();
  const auto& repair = network.session().last_repair();
  DownpourTakeover takeover;
  takeover.so_far = read_run_so_far(context);
  ShardSnapshot snapshot;
  try {
    snapshot = read_shard_zero(shard_zero_path(context.run_directory));
  } catch (const core::RuntimeError& error) {
    throw core::JobCannotGoOn(std::string(error.what()) +
                              ": the new master cannot rebuild shard 0; rerun the same command to "
                              "resume every shard from " +
                              runtime::resume_point(context.run_directory));
  }
  std::map<int, DownpourPushLog> kept;
  if (handover) kept[layout.worker_index(handover->worker_rank)] = handover->shard_zero_log;
  takeover.server = rebuild_shard(context, network, snapshot, kept);
  std::vector<runtime::PartitionGrant> reported;
  if (handover) reported = handover->done;
  for (int rank : network.live_workers()) {
    if (repair.was_replaced(rank)) continue;  // a replacement of this repair knows nothing yet
    const auto status =
        receive<DownpourTakeoverStatus>(network.control(), rank, "the partitions it knows done");
    reported.insert(reported.end(), status.done.begin(), status.done.end());
  }
  const auto per_epoch = static_cast<std::int64_t>(
      runtime::epoch_shape(context.config, context.data.train).partition_count());
  takeover.position = rebuilt_position(context, takeover.so_far, per_epoch, reported);
  core::log_info("the schedule goes on at epoch " +
                 std::to_string(takeover.position.first_epoch + 1) + " with " +
                 std::to_string(takeover.position.partitions_done.size()) +
                 " partitions of it and later epochs done, as the checkpoint and the workers "
                 "report");
  return takeover;
}

}  // namespace gradshare::train

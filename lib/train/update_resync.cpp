// update_resync.cpp: resync_updates (see update_resync.h).
#include "train/update_resync.h"

#include <set>
#include <string>
#include <vector>

#include "core/errors.h"

namespace gradshare::train {

namespace {

// IDs `theirs` applied and `mine` did not, at most one holder asked for each.
std::map<int, std::vector<UpdateId>> wanted_by_master(const AppliedIds& mine,
                                                      const std::map<int, WorkerStatus>& survivors) {
  std::map<int, std::vector<UpdateId>> wanted;
  std::set<UpdateId> asked;
  for (const auto& [worker, status] : survivors)
    for (std::size_t origin = 1; origin < mine.upto.size(); ++origin) {
      const int o = static_cast<int>(origin);
      for (std::uint64_t seq = mine.upto[origin] + 1; seq <= status.applied.highest(o); ++seq) {
        const UpdateId id{static_cast<std::uint32_t>(origin), seq};
        if (status.applied.contains(o, seq) && !mine.contains(o, seq) && asked.insert(id).second)
          wanted[worker].push_back(id);
      }
    }
  return wanted;
}

// How many updates the master applied that `theirs` did not.
std::size_t lacking(const AppliedIds& mine, const AppliedIds& theirs) {
  std::size_t count = 0;
  for (std::size_t origin = 1; origin < mine.upto.size(); ++origin) {
    const int o = static_cast<int>(origin);
    const std::uint64_t from = origin < theirs.upto.size() ? theirs.upto[origin] + 1 : 1;
    for (std::uint64_t seq = from; seq <= mine.highest(o); ++seq)
      if (mine.contains(o, seq) && !theirs.contains(o, seq)) ++count;
  }
  return count;
}

}  // namespace

std::int64_t resync_updates(comm::ControlPlane& control, UpdateExchange& exchange,
                            std::span<float> parameters,
                            const std::map<int, WorkerStatus>& survivors) {
  std::int64_t moved = 0;
  for (const auto& [worker, ids] : wanted_by_master(exchange.applied_ids(), survivors)) {
    control.send(worker, comm::Tag::kResyncFetch, serialize_ids(ids));
    const auto reply = control.receive(worker, comm::Tag::kResyncUpdates, "updates for the resync");
    for (const auto& message : deserialize_messages(reply.payload)) {
      if (!exchange.deliver(message, parameters))
        throw core::RuntimeError("resync: rank " + std::to_string(worker) + " sent " +
                                 exchange.last_error());
      ++moved;
    }
    for (const auto& [origin, seq] : ids)
      if (!exchange.has_applied(static_cast<int>(origin), seq))
        throw core::RuntimeError("resync: update (" + std::to_string(origin) + ", " +
                                 std::to_string(seq) + ") was applied by rank " +
                                 std::to_string(worker) + " but is no longer kept there: the "
                                 "replicas cannot be made equal");
  }
  const auto mine = exchange.applied_ids();
  for (const auto& [worker, status] : survivors) {
    const auto missing = exchange.kept_missing_from(status.applied);
    const std::size_t needed = lacking(mine, status.applied);
    if (missing.size() != needed)
      throw core::RuntimeError("resync: rank " + std::to_string(worker) + " lacks " +
                               std::to_string(needed) + " updates but only " +
                               std::to_string(missing.size()) + " are still kept here");
    moved += static_cast<std::int64_t>(missing.size());
    control.send(worker, comm::Tag::kResyncUpdates, serialize_messages(missing));
  }
  return moved;
}

}  // namespace gradshare::train

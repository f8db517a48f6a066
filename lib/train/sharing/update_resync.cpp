// sharing/update_resync.cpp: resync_updates (see update_resync.h).
#include "train/sharing/update_resync.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "core/errors.h"

namespace gradshare::train {

namespace {

// IDs `theirs` applied and `mine` did not, at most one holder asked for each.
std::map<int, std::vector<UpdateId>> wanted_by_master(const AppliedIds& mine,
                                                      const std::map<int, ResyncStatus>& survivors) {
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

// The master takes `worker`'s whole state, then re-applies the messages it keeps that the state
// lacks; updates it applied before and keeps no longer are fetched again from their holders.
void adopt_worker_state(comm::ControlChannel& control, UpdateExchange& exchange,
                        std::span<float> parameters, int worker, ResyncCounts& counts) {
  send(control, worker, ResyncStateFetch{});
  const auto state = receive<ReplicaState>(control, worker, "its whole state for the resync");
  if (state.parameters.size() != parameters.size())
    throw core::RuntimeError("resync: rank " + std::to_string(worker) + " sent " +
                             std::to_string(state.parameters.size()) + " parameters, expected " +
                             std::to_string(parameters.size()));
  std::copy(state.parameters.begin(), state.parameters.end(), parameters.begin());
  exchange.adopt(state.applied);
  for (const auto& message : exchange.kept_missing_from(state.applied)) {
    if (!exchange.deliver(message, parameters))
      throw core::RuntimeError("resync: a kept message no longer decodes: " + exchange.last_error());
    ++counts.updates;
  }
  ++counts.whole_states;
}

}  // namespace

ResyncCounts resync_updates(comm::ControlChannel& control, UpdateExchange& exchange,
                            std::span<float> parameters,
                            const std::map<int, ResyncStatus>& survivors) {
  ResyncCounts counts;
  const auto before = exchange.applied_ids();
  // Each round fetches what the master lacks; a holder that no longer keeps some of it hands
  // over its whole state (at most once: afterwards it holds nothing the master lacks), and what
  // the master had applied and that state lacked is fetched in the next round.
  for (std::size_t round = 0; round <= survivors.size(); ++round) {
    const auto wanted = wanted_by_master(exchange.applied_ids(), survivors);
    if (wanted.empty()) break;
    for (const auto& [worker, ids] : wanted) {
      send(control, worker, ResyncFetch{ids});
      const auto reply = receive<ResyncUpdates>(control, worker, "updates for the resync");
      for (const auto& message : reply.messages) {
        if (!exchange.deliver(message, parameters))
          throw core::RuntimeError("resync: rank " + std::to_string(worker) + " sent " +
                                   exchange.last_error());
        ++counts.updates;
      }
      const bool complete = std::all_of(ids.begin(), ids.end(), [&](const UpdateId& id) {
        return exchange.has_applied(static_cast<int>(id.first), id.second);
      });
      if (!complete) adopt_worker_state(control, exchange, parameters, worker, counts);
    }
  }
  const auto mine = exchange.applied_ids();
  const std::size_t lost = lacking(before, mine);
  if (lost > 0 || !wanted_by_master(mine, survivors).empty())
    throw core::RuntimeError("resync: " +
                             (lost > 0 ? std::to_string(lost) + " updates the master had applied"
                                       : std::string("updates a survivor applied")) +
                             " are kept by no replica any more: the replicas cannot be made equal "
                             "without losing them (raise fault_tolerance.keep_bytes)");
  for (const auto& [worker, status] : survivors) {
    const auto missing = exchange.kept_missing_from(status.applied);
    if (missing.size() == lacking(mine, status.applied)) {
      counts.updates += static_cast<std::int64_t>(missing.size());
      send(control, worker, ResyncUpdates{missing});
    } else {
      send(control, worker, ReplicaState{{parameters.begin(), parameters.end()}, mine});
      ++counts.whole_states;
    }
  }
  return counts;
}

}  // namespace gradshare::train

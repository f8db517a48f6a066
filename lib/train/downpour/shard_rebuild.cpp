// downpour/shard_rebuild.cpp: snapshots, push logs and the replay that rebuild a lost
// parameter server's shard (see shard_rebuild.h).
#include "train/downpour/shard_rebuild.h"

#include <algorithm>
#include <string>

#include "core/errors.h"
#include "core/log.h"
#include "runtime/checkpointer.h"
#include "train/downpour/network.h"
#include "train/downpour/server.h"
#include "train/messages.h"

namespace gradshare::train {

namespace {
// A log holds at most this many pushes on the wire (a worker keeps one per n_push steps).
constexpr std::uint64_t kMaxLoggedPushes = std::uint64_t{1} << 24;
}  // namespace

void ShardSnapshot::write(comm::ByteWriter& writer) const {
  writer.put(shard).put(version).put_vector(parameters);
  optimizer.write(writer);
  writer.put_vector(applied).put<std::uint64_t>(own.size());
  for (const auto& versions : own) writer.put_vector(versions);
}

ShardSnapshot ShardSnapshot::read(comm::ByteReader& reader) {
  ShardSnapshot snapshot;
  snapshot.shard = reader.get<std::int32_t>();
  snapshot.version = reader.get<std::uint64_t>();
  snapshot.parameters = reader.get_vector<float>();
  snapshot.optimizer = WorkerState::read(reader);
  snapshot.applied = reader.get_vector<std::uint64_t>();
  const auto workers = reader.get<std::uint64_t>();
  if (workers != snapshot.applied.size())
    throw core::RuntimeError("malformed shard snapshot: " + std::to_string(workers) +
                             " workers' own versions for " +
                             std::to_string(snapshot.applied.size()) + " workers");
  for (std::uint64_t w = 0; w < workers; ++w)
    snapshot.own.push_back(reader.get_vector<std::uint64_t>());
  return snapshot;
}

void PushLog::record(const PushHeader& header, std::span<const std::uint8_t> payload) {
  std::vector<std::uint8_t> copy;
  if (!spare_.empty()) {
    copy = std::move(spare_.back());
    spare_.pop_back();
  }
  copy.assign(payload.begin(), payload.end());
  pushes_.push_back({header, std::move(copy), std::nullopt});
  bytes_ += payload.size();
  while (bytes_ > budget_ && !pushes_.empty()) {
    dropped_through_ = pushes_.front().header.seq;
    drop_front();
  }
}

void PushLog::drop_front() {
  bytes_ -= pushes_.front().payload.size();
  if (spare_.size() < 4) spare_.push_back(std::move(pushes_.front().payload));
  pushes_.pop_front();
}

void PushLog::acknowledged(std::uint64_t seq, std::uint64_t age, std::uint64_t base) {
  while (!own_.empty() && own_.front() <= base) own_.pop_front();
  const std::uint64_t version = base + age + own_.size() + 1;
  own_.push_back(version);
  for (auto it = pushes_.rbegin(); it != pushes_.rend(); ++it)
    if (it->header.seq == seq) {
      it->age = age;
      it->version = version;
      return;
    }
}

void PushLog::held_through(std::uint64_t seq) {
  while (!pushes_.empty() && pushes_.front().header.seq <= seq) drop_front();
}

void DownpourPushLog::write(comm::ByteWriter& writer) const {
  writer.put(posted).put(dropped_through).put<std::uint64_t>(pushes.size());
  for (const auto& push : pushes) {
    writer.put(push.header.seq).put(push.header.format).put(push.header.bytes).put(push.header.base);
    writer.put<std::uint8_t>(push.age.has_value()).put(push.age.value_or(0)).put(push.version);
    writer.put_vector(push.payload);
  }
}

DownpourPushLog DownpourPushLog::read(comm::ByteReader& reader) {
  DownpourPushLog log;
  log.posted = reader.get<std::uint64_t>();
  log.dropped_through = reader.get<std::uint64_t>();
  const auto count = reader.get<std::uint64_t>();
  if (count > kMaxLoggedPushes)
    throw core::RuntimeError("malformed push log: " + std::to_string(count) + " pushes");
  for (std::uint64_t i = 0; i < count; ++i) {
    LoggedPush push;
    push.header.seq = reader.get<std::uint64_t>();
    push.header.format = reader.get<std::uint64_t>();
    push.header.bytes = reader.get<std::uint64_t>();
    push.header.base = reader.get<std::uint64_t>();
    const bool has_age = reader.get<std::uint8_t>() != 0;
    const auto age = reader.get<std::uint64_t>();
    if (has_age) push.age = age;
    push.version = reader.get<std::uint64_t>();
    push.payload = reader.get_vector<std::uint8_t>();
    log.pushes.push_back(std::move(push));
  }
  return log;
}

namespace {

// The pushes of `log` the snapshot does not hold, in seq order; JobCannotGoOn when one is
// missing (dropped beyond the budget), RuntimeError when the log is not a run of seqs.
std::vector<const LoggedPush*> pushes_to_replay(int shard, int worker_rank, std::uint64_t held,
                                                const DownpourPushLog& log) {
  // A worker replaced in the same repair has posted nothing yet: its predecessor's pushes since
  // the snapshot are lost with it, as its unpushed updates are.
  if (log.posted == 0 && log.pushes.empty()) return {};
  std::vector<const LoggedPush*> replay;
  std::uint64_t next = held + 1;
  for (const auto& push : log.pushes) {
    if (push.header.seq <= held) continue;
    if (push.header.seq != next) break;
    replay.push_back(&push);
    ++next;
  }
  if (next - 1 == log.posted) return replay;
  // Not malformed: the pushes after held are missing from the front, the rest lead to posted.
  const bool lacks_the_front =
      log.posted > held &&
      (log.pushes.empty() || (log.pushes.front().header.seq > held + 1 &&
                              log.pushes.back().header.seq == log.posted));
  if (!lacks_the_front)
    throw core::RuntimeError("worker rank " + std::to_string(worker_rank) +
                             " sent a malformed push log for shard " + std::to_string(shard) +
                             ": not its pushes " + std::to_string(held + 1) + ".." +
                             std::to_string(log.posted) + " in order");
  throw core::JobCannotGoOn(
      "parameter server " + std::to_string(shard) + " cannot be rebuilt: worker rank " +
      std::to_string(worker_rank) + " no longer holds its pushes from " +
      std::to_string(held + 1) + " to it, which the newest snapshot lacks (" +
      (log.dropped_through > held
           ? "it dropped those through " + std::to_string(log.dropped_through) +
                 " to stay within fault_tolerance.keep_bytes / downpour.servers"
           : std::string("a replaced worker's predecessor's pushes are lost with it")) +
      "); raise fault_tolerance.keep_bytes, or checkpoint more often with "
      "checkpoint.every_steps");
}

}  // namespace

ReplayCount replay_pushes(ShardUpdater& updater, const ShardSnapshot& snapshot,
                          const std::map<int, DownpourPushLog>& logs,
                          std::span<float> parameters) {
  updater.restore(snapshot);
  const auto& layout = updater.layout();
  std::map<int, std::vector<const LoggedPush*>> queues;
  for (const auto& [worker, log] : logs)
    queues[worker] = pushes_to_replay(snapshot.shard, layout.worker_rank(worker),
                                      snapshot.applied.at(static_cast<std::size_t>(worker)), log);
  ReplayCount count;
  std::map<int, std::size_t> next;  // per worker: its first push not replayed yet
  const auto replay = [&](int worker, const LoggedPush& push, std::optional<std::uint64_t> age) {
    updater.prepare(worker, push.header, push.payload, parameters, age);
    updater.apply(parameters);
    ++next[worker];
  };
  // The acknowledged pushes first, in the order of the versions they made (they lead each
  // queue: a push is acknowledged before its worker posts the next).
  for (;;) {
    int earliest = -1;
    for (const auto& [worker, queue] : queues) {
      const std::size_t at = next[worker];
      if (at == queue.size() || !queue[at]->age) continue;
      if (earliest < 0 || queue[at]->version < queues[earliest][next[earliest]]->version)
        earliest = worker;
    }
    if (earliest < 0) break;
    const LoggedPush& push = *queues[earliest][next[earliest]];
    replay(earliest, push, push.age);
    ++count.acknowledged;
  }
  // Then what was in flight (or whose ack a repair lost), oldest base first, at the server's
  // ordinary age; a base the replay has not reached yet (it counted a push in flight the lost
  // server had applied) makes a push of age 0.
  std::vector<std::pair<int, const LoggedPush*>> rest;
  for (const auto& [worker, queue] : queues)
    for (std::size_t at = next[worker]; at < queue.size(); ++at) rest.emplace_back(worker, queue[at]);
  std::stable_sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) {
    return a.second->header.base < b.second->header.base;
  });
  for (const auto& [worker, push] : rest) {
    const bool ahead = push->header.base > updater.version();
    replay(worker, *push, ahead ? std::optional<std::uint64_t>(0) : std::nullopt);
    ++count.in_flight;
  }
  return count;
}

std::unique_ptr<ShardServer> rebuild_lost_shard(runtime::RunContext& context,
                                                DownpourNetwork& network) {
  return rebuild_shard(
      context, network,
      receive<DownpourShardRebuild>(network.control(), 0, "the lost shard's snapshot").snapshot);
}

std::unique_ptr<ShardServer> rebuild_shard(runtime::RunContext& context, DownpourNetwork& network,
                                           const ShardSnapshot& snapshot,
                                           const std::map<int, DownpourPushLog>& kept) {
  const auto& layout = network.layout();
  const int shard = context.rank;
  auto& control = network.control();
  if (snapshot.shard != shard || snapshot.parameters.size() != layout.shard(shard).size() ||
      snapshot.applied.size() != static_cast<std::size_t>(layout.workers()))
    throw core::RuntimeError("a snapshot of shard " +
                             std::to_string(snapshot.shard) + " with " +
                             std::to_string(snapshot.parameters.size()) + " parameters for shard " +
                             std::to_string(shard));
  // From every survivor: a replacement of this repair has posted nothing (its predecessor's
  // pushes since the snapshot are lost with it, as its updates not yet pushed are).
  const auto& repair = network.session().last_repair();
  std::map<int, DownpourPushLog> logs;
  for (int rank : network.live_workers())
    if (!repair.was_replaced(rank))
      logs[layout.worker_index(rank)] =
          receive<DownpourPushLog>(control, rank, "its pushes since the shard's snapshot");
  for (const auto& [worker, log] : kept) logs[worker] = log;
  ShardUpdater updater(layout, shard, context.config);
  std::vector<float> parameters = snapshot.parameters;
  const ReplayCount count = replay_pushes(updater, snapshot, logs, parameters);
  auto server = network.transport().serve(shard, context.config, parameters);
  server->adopt(updater);
  core::log_info("parameter server " + std::to_string(shard) +
                 " rebuilt: its snapshot at version " + std::to_string(snapshot.version) +
                 " plus " + std::to_string(count.acknowledged) +
                 " acknowledged pushes the workers kept (at the ages their acks reported) and " +
                 std::to_string(count.in_flight) + " in flight: version " +
                 std::to_string(server->version()));
  return server;
}

}  // namespace gradshare::train

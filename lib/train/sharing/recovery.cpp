// sharing/recovery.cpp: the recovery messages of gradient sharing (see sharing/recovery.h).
#include "train/sharing/recovery.h"

#include "comm/byte_io.h"
#include "core/errors.h"
#include "train/partition_messages.h"

namespace gradshare::train {

void ResyncStatus::write(comm::ByteWriter& writer) const {
  writer.put<std::uint8_t>(static_cast<std::uint8_t>(phase));
  put_grant(writer, holding);
  put_grant(writer, finished);
  writer.put(last_seq).put(conservation_error);
  writer.put_vector(applied.serialize());
  writer.put_vector(done);
  writer.put(clock).put(tau).put(relay_parent).put(relay_base);
}

ResyncStatus ResyncStatus::read(comm::ByteReader& reader) {
  ResyncStatus status;
  const auto phase = reader.get<std::uint8_t>();
  GS_CHECK(phase <= static_cast<std::uint8_t>(WorkerPhase::kJoining),
           "resync status with phase " + std::to_string(phase));
  status.phase = static_cast<WorkerPhase>(phase);
  status.holding = get_grant(reader);
  status.finished = get_grant(reader);
  status.last_seq = reader.get<std::uint64_t>();
  status.conservation_error = reader.get<double>();
  status.applied = AppliedIds::deserialize(reader.get_vector<std::uint8_t>());
  status.done = reader.get_vector<runtime::PartitionGrant>();
  status.clock = reader.get<std::uint64_t>();
  status.tau = reader.get<float>();
  status.relay_parent = reader.get<std::int32_t>();
  status.relay_base = reader.get<std::uint64_t>();
  return status;
}

void RelayRestart::write(comm::ByteWriter& writer) const {
  writer.put_vector(parameters);
  // The parent: 0 died, 1 took in up to the seq that follows, 2 took everything.
  const std::uint8_t parent = parent_took_all ? 2 : parent_applied ? 1 : 0;
  writer.put(parent).put<std::uint64_t>(parent_applied.value_or(0));
}

RelayRestart RelayRestart::read(comm::ByteReader& reader) {
  RelayRestart restart;
  restart.parameters = reader.get_vector<float>();
  const auto parent = reader.get<std::uint8_t>();
  GS_CHECK(parent <= 2, "relay restart with a parent flag of " + std::to_string(parent));
  const auto applied = reader.get<std::uint64_t>();
  if (parent == 1) restart.parent_applied = applied;
  restart.parent_took_all = parent == 2;
  return restart;
}

void ReplicaState::write(comm::ByteWriter& writer) const {
  writer.put_vector(parameters);
  writer.put_vector(applied.serialize());
}

ReplicaState ReplicaState::read(comm::ByteReader& reader) {
  return {reader.get_vector<float>(), AppliedIds::deserialize(reader.get_vector<std::uint8_t>())};
}

void ResyncFetch::write(comm::ByteWriter& writer) const {
  writer.put<std::uint64_t>(ids.size());
  for (const auto& [origin, seq] : ids) writer.put(origin).put(seq);
}

ResyncFetch ResyncFetch::read(comm::ByteReader& reader) {
  ResyncFetch fetch;
  fetch.ids.resize(reader.get_count(sizeof(std::uint32_t) + sizeof(std::uint64_t)));
  for (auto& [origin, seq] : fetch.ids) {
    origin = reader.get<std::uint32_t>();
    seq = reader.get<std::uint64_t>();
  }
  return fetch;
}

void ResyncUpdates::write(comm::ByteWriter& writer) const {
  writer.put<std::uint64_t>(messages.size());
  for (const auto& message : messages) writer.put_vector(message);
}

ResyncUpdates ResyncUpdates::read(comm::ByteReader& reader) {
  ResyncUpdates updates;
  updates.messages.resize(reader.get_count(8));
  for (auto& message : updates.messages) message = reader.get_vector<std::uint8_t>();
  return updates;
}

}  // namespace gradshare::train

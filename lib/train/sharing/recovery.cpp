// sharing/recovery.cpp: the recovery messages of gradient sharing (see sharing_recovery.h).
#include "train/sharing/recovery.h"

#include "comm/byte_io.h"
#include "core/errors.h"
#include "train/partition_messages.h"

namespace gradshare::train {

std::vector<std::uint8_t> WorkerStatus::serialize() const {
  comm::ByteWriter writer;
  writer.put<std::uint8_t>(static_cast<std::uint8_t>(phase));
  put_grant(writer, holding);
  put_grant(writer, finished);
  writer.put(last_seq).put(conservation_error);
  writer.put_vector(applied.serialize());
  return {writer.bytes().begin(), writer.bytes().end()};
}

WorkerStatus WorkerStatus::deserialize(std::span<const std::uint8_t> bytes) {
  comm::ByteReader reader(bytes, "worker status");
  WorkerStatus status;
  const auto phase = reader.get<std::uint8_t>();
  GS_CHECK(phase <= static_cast<std::uint8_t>(WorkerPhase::kJoining),
           "worker status with phase " + std::to_string(phase));
  status.phase = static_cast<WorkerPhase>(phase);
  status.holding = get_grant(reader);
  status.finished = get_grant(reader);
  status.last_seq = reader.get<std::uint64_t>();
  status.conservation_error = reader.get<double>();
  status.applied = AppliedIds::deserialize(reader.get_vector<std::uint8_t>());
  reader.expect_end();
  return status;
}

std::vector<std::uint8_t> ReplacementStart::serialize() const {
  comm::ByteWriter writer;
  writer.put_vector(replica.serialize());
  writer.put_vector(train::serialize(worker));
  writer.put<std::uint64_t>(clock);
  return {writer.bytes().begin(), writer.bytes().end()};
}

ReplacementStart ReplacementStart::deserialize(std::span<const std::uint8_t> bytes) {
  comm::ByteReader reader(bytes, "replacement start");
  ReplacementStart start;
  start.replica = ReplicaState::deserialize(reader.get_vector<std::uint8_t>());
  start.worker = deserialize_worker_state(reader.get_vector<std::uint8_t>());
  start.clock = reader.get<std::uint64_t>();
  reader.expect_end();
  return start;
}

std::vector<std::uint8_t> ReplicaState::serialize() const {
  comm::ByteWriter writer;
  writer.put_vector(parameters);
  writer.put_vector(applied.serialize());
  return {writer.bytes().begin(), writer.bytes().end()};
}

ReplicaState ReplicaState::deserialize(std::span<const std::uint8_t> bytes) {
  comm::ByteReader reader(bytes, "replica state");
  ReplicaState state;
  state.parameters = reader.get_vector<float>();
  state.applied = AppliedIds::deserialize(reader.get_vector<std::uint8_t>());
  reader.expect_end();
  return state;
}

std::vector<std::uint8_t> serialize_ids(const std::vector<UpdateId>& ids) {
  comm::ByteWriter writer;
  writer.put<std::uint64_t>(ids.size());
  for (const auto& [origin, seq] : ids) writer.put(origin).put(seq);
  return {writer.bytes().begin(), writer.bytes().end()};
}

std::vector<UpdateId> deserialize_ids(std::span<const std::uint8_t> bytes) {
  comm::ByteReader reader(bytes, "update IDs");
  std::vector<UpdateId> ids(reader.get_count(sizeof(std::uint32_t) + sizeof(std::uint64_t)));
  for (auto& [origin, seq] : ids) {
    origin = reader.get<std::uint32_t>();
    seq = reader.get<std::uint64_t>();
  }
  reader.expect_end();
  return ids;
}

std::vector<std::uint8_t> serialize_messages(const std::vector<std::vector<std::uint8_t>>& messages) {
  comm::ByteWriter writer;
  writer.put<std::uint64_t>(messages.size());
  for (const auto& message : messages) writer.put_vector(message);
  return {writer.bytes().begin(), writer.bytes().end()};
}

std::vector<std::vector<std::uint8_t>> deserialize_messages(std::span<const std::uint8_t> bytes) {
  comm::ByteReader reader(bytes, "resync updates");
  std::vector<std::vector<std::uint8_t>> messages(reader.get_count(8));
  for (auto& message : messages) message = reader.get_vector<std::uint8_t>();
  reader.expect_end();
  return messages;
}

}  // namespace gradshare::train

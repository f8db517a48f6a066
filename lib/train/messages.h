// messages.h: the payload of every control message as a struct, and the typed calls that send
// and receive them. A payload type M names its tag and its wire form, as a list of its fields
// (comm/wire_fields.h) or, where the form is more than the fields in order, write and read (a
// trivially copyable struct of counters needs neither: it travels as its bytes):
//
//   struct M {
//     static constexpr comm::Tag kTag = tags::k...;
//     std::int64_t step = 0;
//     std::vector<float> parameters;
//     static auto fields(auto& self) { return std::tie(self.step, self.parameters); }
//   };
//   struct N {
//     static constexpr comm::Tag kTag = tags::k...;
//     void write(comm::ByteWriter& writer) const;
//     static N read(comm::ByteReader& reader);  // throws RuntimeError when malformed
//   };
//
// Every tag has exactly one payload type, so a message cannot be decoded as something else:
// decode<M> refuses a message of another tag, and a payload with bytes left over or too few
// is malformed. Fields are in native byte order (a job runs on one architecture); vectors carry
// their element count. The strategies' own payloads are in their protocol headers
// (allreduce/protocol.h, ...); the ones here are shared.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "comm/byte_io.h"
#include "comm/control_channel.h"
#include "comm/wire_fields.h"
#include "train/tags.h"

namespace gradshare::train {

// A message: its tag, and its wire form as a field list or write/read (comm/wire_fields.h).
template <typename M>
concept ControlPayload = comm::Payload<M> && requires {
  { M::kTag } -> std::convertible_to<comm::Tag>;
};

template <ControlPayload M>
std::vector<std::uint8_t> encode(const M& message) {
  comm::ByteWriter writer;
  comm::write_payload(writer, message);
  return writer.take();
}

template <ControlPayload M>
M decode(std::span<const std::uint8_t> payload) {
  comm::ByteReader reader(payload, tag_name(M::kTag));
  M message = comm::read_payload<M>(reader);
  reader.expect_end();
  return message;
}

// Throws RuntimeError "expected a <tag> message from rank 2, got a <tag>" for another tag.
[[noreturn]] void wrong_tag(const comm::ControlMessage& message, comm::Tag expected);

template <ControlPayload M>
M decode(const comm::ControlMessage& message) {
  if (message.tag != M::kTag) wrong_tag(message, M::kTag);
  return decode<M>(message.payload);
}

template <ControlPayload M>
void send(comm::ControlChannel& control, int dest, const M& message) {
  control.send(dest, M::kTag, encode(message));
}

template <ControlPayload M>
M receive(comm::ControlChannel& control, int source, const char* awaited) {
  return decode<M>(control.receive(source, M::kTag, awaited));
}

template <ControlPayload M>
std::optional<M> try_receive(comm::ControlChannel& control, int source = comm::kAnySource) {
  auto message = control.try_receive(M::kTag, source);
  if (!message) return std::nullopt;
  return decode<M>(*message);
}

// A message that carries nothing but its tag.
template <comm::Tag T>
struct Signal {
  static constexpr comm::Tag kTag = T;
  void write(comm::ByteWriter&) const {}
  static Signal read(comm::ByteReader&) { return {}; }
};

// master -> rank: a checkpoint is due (each strategy answers with its own state payload).
using StateRequest = Signal<tags::kStateRequest>;
// master -> synchronous workers: early stopping; end training at the next round.
using Finish = Signal<tags::kFinish>;
// worker -> master: alive (sharing workers, while they wait).
using Heartbeat = Signal<tags::kHeartbeat>;
// master -> rank: report your peak memory.
using PeakMemoryRequest = Signal<tags::kPeakMemoryRequest>;

// master -> rank: end with this exit code (0, or 75 after a stop's checkpoint: requeue me);
// a rank that got a stop signal sends it to the master too.
struct Shutdown {
  static constexpr comm::Tag kTag = tags::kShutdown;
  std::int32_t exit_code = 0;
  static auto fields(auto& self) { return std::tie(self.exit_code); }
};

// worker -> master: the divergence guard tripped at `step` (divergence_guard.h).
struct Diverged {
  static constexpr comm::Tag kTag = tags::kDiverged;
  std::int64_t step = 0;
  std::string reason;
  static auto fields(auto& self) { return std::tie(self.step, self.reason); }
};

// rank -> master at the end: its peak resident memory.
struct PeakMemoryReport {
  static constexpr comm::Tag kTag = tags::kPeakMemory;
  std::int64_t bytes = 0;
  static auto fields(auto& self) { return std::tie(self.bytes); }
};

// worker -> master after an epoch of a synchronous strategy: the model to evaluate.
struct EpochModel {
  static constexpr comm::Tag kTag = tags::kEpochModel;
  std::int64_t epoch = 0;  // epochs done
  std::int64_t step = 0;
  std::int64_t minibatches = 0;  // trained in the epoch (each once), counted by the workers
  std::vector<float> parameters;
  static auto fields(auto& self) {
    return std::tie(self.epoch, self.step, self.minibatches, self.parameters);
  }
};

}  // namespace gradshare::train

// partition_messages.h: the workers' partition requests and the master's grants on the control
// plane, shared by the asynchronous strategies (gradient sharing, Downpour).
//   request {finished previous: u8, last seq: u64}
//   grant {has: u8, epoch: i64, partition: i64, read-ahead count: u64 (<= 1024),
//          that many {epoch: i64, partition: i64}: the partitions reserved for its next requests}
// A gradient-sharing worker's last seq is that of the newest update it had sent when it finished
// the previous partition: if the worker dies, the master reopens a finished partition whose
// updates up to that seq reached no survivor (Downpour sends 0).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "comm/byte_io.h"
#include "comm/control_channel.h"
#include "train/messages.h"
#include "runtime/partition_scheduler.h"

namespace gradshare::train {

struct PartitionRequest {
  static constexpr comm::Tag kTag = tags::kPartitionRequest;
  bool finished_previous = false;
  std::uint64_t last_seq = 0;
  static auto fields(auto& self) { return std::tie(self.finished_previous, self.last_seq); }
};

// The master's answer: PartitionScheduler::assign's, or an empty assignment (nothing left).
struct PartitionGrantReply {
  static constexpr comm::Tag kTag = tags::kPartitionGrant;
  runtime::PartitionAssignment assignment;
  void write(comm::ByteWriter& writer) const;
  static PartitionGrantReply read(comm::ByteReader& reader);  // at most 1024 read ahead
};

// Worker side: reports whether the previous grant is done and waits for the next one.
runtime::PartitionAssignment request_partition(comm::ControlChannel& control,
                                               bool finished_previous);

// The grant's wire form {has: u8, epoch: i64, partition: i64}, also inside other messages.
void put_grant(comm::ByteWriter& writer, const std::optional<runtime::PartitionGrant>& grant);
std::optional<runtime::PartitionGrant> get_grant(comm::ByteReader& reader);
// A list of partitions travels as a vector of PartitionGrant {epoch: i64, partition: i64}.

}  // namespace gradshare::train

// partition_messages.h: the workers' partition requests and the master's grants on the control
// plane, shared by the asynchronous strategies (gradient sharing, Downpour).
//   request {finished previous: u8}   grant {has: u8, epoch: i64, partition: i64}
#pragma once

#include <optional>

#include "comm/byte_io.h"
#include "comm/control_plane.h"
#include "train/partition_scheduler.h"

namespace gradshare::train {

// Worker side: reports whether the previous grant is done and waits for the next one;
// nothing when every partition has been handed out.
std::optional<PartitionGrant> request_partition(comm::ControlPlane& control, bool finished_previous);
// Master side.
void send_partition_grant(comm::ControlPlane& control, int worker,
                          const std::optional<PartitionGrant>& grant);
// A grant message's payload: the grant, or nothing when every partition has been handed out.
std::optional<PartitionGrant> parse_partition_grant(const comm::ControlMessage& message);

// The grant's wire form {has: u8, epoch: i64, partition: i64}, also inside other messages.
void put_grant(comm::ByteWriter& writer, const std::optional<PartitionGrant>& grant);
std::optional<PartitionGrant> get_grant(comm::ByteReader& reader);

}  // namespace gradshare::train

#include "train/partition_messages.h"

#include <algorithm>
#include <string>

#include "comm/byte_io.h"
#include "core/errors.h"

namespace gradshare::train {

std::vector<std::uint8_t> serialize(const PartitionRequest& request) {
  return comm::ByteWriter()
      .put<std::uint8_t>(request.finished_previous ? 1 : 0)
      .put<std::uint64_t>(request.last_seq)
      .take();
}

PartitionRequest parse_partition_request(const comm::ControlMessage& message) {
  comm::ByteReader reader(message.payload, "partition request");
  PartitionRequest request;
  request.finished_previous = reader.get<std::uint8_t>() != 0;
  request.last_seq = reader.get<std::uint64_t>();
  reader.expect_end();
  return request;
}

PartitionAssignment request_partition(comm::ControlChannel& control, bool finished_previous) {
  control.send(0, comm::Tag::kPartitionRequest, serialize(PartitionRequest{finished_previous, 0}));
  return parse_partition_grant(control.receive(0, comm::Tag::kPartitionGrant, "partition grant"));
}

namespace {
constexpr std::uint32_t kMaxReadAhead = 1024;
}

std::vector<std::uint8_t> serialize(const PartitionAssignment& assignment) {
  comm::ByteWriter writer;
  put_grant(writer, assignment.grant);
  const auto count = std::min<std::size_t>(assignment.read_ahead.size(), kMaxReadAhead);
  writer.put<std::uint32_t>(static_cast<std::uint32_t>(count));
  for (std::size_t i = 0; i < count; ++i)
    writer.put<std::int64_t>(assignment.read_ahead[i].epoch)
        .put<std::int64_t>(assignment.read_ahead[i].partition);
  return writer.take();
}

void send_partition_grant(comm::ControlChannel& control, int worker,
                          const PartitionAssignment& assignment) {
  control.send(worker, comm::Tag::kPartitionGrant, serialize(assignment));
}

PartitionAssignment parse_partition_grant(const comm::ControlMessage& message) {
  comm::ByteReader reader(message.payload, "partition grant");
  PartitionAssignment assignment;
  assignment.grant = get_grant(reader);
  const auto count = reader.get<std::uint32_t>();
  if (count > kMaxReadAhead)
    throw core::RuntimeError("partition grant: " + std::to_string(count) +
                             " partitions to read ahead, more than " + std::to_string(kMaxReadAhead));
  for (std::uint32_t i = 0; i < count; ++i) {
    PartitionGrant ahead;
    ahead.epoch = reader.get<std::int64_t>();
    ahead.partition = reader.get<std::int64_t>();
    assignment.read_ahead.push_back(ahead);
  }
  reader.expect_end();
  return assignment;
}

void put_grant(comm::ByteWriter& writer, const std::optional<PartitionGrant>& grant) {
  writer.put<std::uint8_t>(grant ? 1 : 0);
  writer.put<std::int64_t>(grant ? grant->epoch : 0);
  writer.put<std::int64_t>(grant ? grant->partition : 0);
}

std::optional<PartitionGrant> get_grant(comm::ByteReader& reader) {
  const bool has = reader.get<std::uint8_t>() != 0;
  PartitionGrant grant;
  grant.epoch = reader.get<std::int64_t>();
  grant.partition = reader.get<std::int64_t>();
  if (!has) return std::nullopt;
  return grant;
}

}  // namespace gradshare::train

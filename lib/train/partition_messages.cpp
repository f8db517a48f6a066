#include "train/partition_messages.h"

#include <algorithm>
#include <string>

#include "comm/byte_io.h"
#include "core/errors.h"

namespace gradshare::train {

runtime::PartitionAssignment request_partition(comm::ControlChannel& control,
                                               bool finished_previous) {
  send(control, 0, PartitionRequest{finished_previous, 0});
  return receive<PartitionGrantReply>(control, 0, "partition grant").assignment;
}

namespace {
constexpr std::uint32_t kMaxReadAhead = 1024;
}

void PartitionGrantReply::write(comm::ByteWriter& writer) const {
  put_grant(writer, assignment.grant);
  const auto& ahead = assignment.read_ahead;
  writer.put_vector(std::span(ahead).first(std::min<std::size_t>(ahead.size(), kMaxReadAhead)));
}

PartitionGrantReply PartitionGrantReply::read(comm::ByteReader& reader) {
  PartitionGrantReply reply;
  reply.assignment.grant = get_grant(reader);
  reply.assignment.read_ahead = reader.get_vector<runtime::PartitionGrant>();
  if (reply.assignment.read_ahead.size() > kMaxReadAhead)
    throw core::RuntimeError("partition grant: " +
                             std::to_string(reply.assignment.read_ahead.size()) +
                             " partitions to read ahead, more than " + std::to_string(kMaxReadAhead));
  return reply;
}

void put_grant(comm::ByteWriter& writer, const std::optional<runtime::PartitionGrant>& grant) {
  writer.put<std::uint8_t>(grant ? 1 : 0);
  writer.put<std::int64_t>(grant ? grant->epoch : 0);
  writer.put<std::int64_t>(grant ? grant->partition : 0);
}

std::optional<runtime::PartitionGrant> get_grant(comm::ByteReader& reader) {
  const bool has = reader.get<std::uint8_t>() != 0;
  runtime::PartitionGrant grant;
  grant.epoch = reader.get<std::int64_t>();
  grant.partition = reader.get<std::int64_t>();
  if (!has) return std::nullopt;
  return grant;
}

}  // namespace gradshare::train

#include "train/partition_messages.h"

#include <algorithm>
#include <string>

#include "comm/byte_io.h"
#include "core/errors.h"

namespace gradshare::train {

void PartitionRequest::write(comm::ByteWriter& writer) const {
  writer.put(finished_previous).put(last_seq);
}

PartitionRequest PartitionRequest::read(comm::ByteReader& reader) {
  return {reader.get<bool>(), reader.get<std::uint64_t>()};
}

PartitionAssignment request_partition(comm::ControlChannel& control, bool finished_previous) {
  send(control, 0, PartitionRequest{finished_previous, 0});
  return receive<PartitionGrantReply>(control, 0, "partition grant").assignment;
}

namespace {
constexpr std::uint32_t kMaxReadAhead = 1024;
}

void PartitionGrantReply::write(comm::ByteWriter& writer) const {
  put_grant(writer, assignment.grant);
  const auto count = std::min<std::size_t>(assignment.read_ahead.size(), kMaxReadAhead);
  writer.put<std::uint32_t>(static_cast<std::uint32_t>(count));
  for (std::size_t i = 0; i < count; ++i)
    writer.put<std::int64_t>(assignment.read_ahead[i].epoch)
        .put<std::int64_t>(assignment.read_ahead[i].partition);
}

PartitionGrantReply PartitionGrantReply::read(comm::ByteReader& reader) {
  PartitionGrantReply reply;
  reply.assignment.grant = get_grant(reader);
  const auto count = reader.get<std::uint32_t>();
  if (count > kMaxReadAhead)
    throw core::RuntimeError("partition grant: " + std::to_string(count) +
                             " partitions to read ahead, more than " + std::to_string(kMaxReadAhead));
  for (std::uint32_t i = 0; i < count; ++i) {
    PartitionGrant ahead;
    ahead.epoch = reader.get<std::int64_t>();
    ahead.partition = reader.get<std::int64_t>();
    reply.assignment.read_ahead.push_back(ahead);
  }
  return reply;
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

void put_grants(comm::ByteWriter& writer, const std::vector<PartitionGrant>& grants) {
  writer.put<std::uint64_t>(grants.size());
  for (const auto& grant : grants) writer.put(grant.epoch).put(grant.partition);
}

std::vector<PartitionGrant> get_grants(comm::ByteReader& reader) {
  std::vector<PartitionGrant> grants(reader.get_count(2 * sizeof(std::int64_t)));
  for (auto& grant : grants) {
    grant.epoch = reader.get<std::int64_t>();
    grant.partition = reader.get<std::int64_t>();
  }
  return grants;
}

}  // namespace gradshare::train

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
  put_grants(writer, {ahead.begin(),
                      ahead.begin() + static_cast<std::ptrdiff_t>(
                                          std::min<std::size_t>(ahead.size(), kMaxReadAhead))});
}

PartitionGrantReply PartitionGrantReply::read(comm::ByteReader& reader) {
  PartitionGrantReply reply;
  reply.assignment.grant = get_grant(reader);
  reply.assignment.read_ahead = get_grants(reader);
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

void put_grants(comm::ByteWriter& writer, const std::vector<runtime::PartitionGrant>& grants) {
  writer.put<std::uint64_t>(grants.size());
  for (const auto& grant : grants) writer.put(grant.epoch).put(grant.partition);
}

std::vector<runtime::PartitionGrant> get_grants(comm::ByteReader& reader) {
  std::vector<runtime::PartitionGrant> grants(reader.get_count(2 * sizeof(std::int64_t)));
  for (auto& grant : grants) {
    grant.epoch = reader.get<std::int64_t>();
    grant.partition = reader.get<std::int64_t>();
  }
  return grants;
}

}  // namespace gradshare::train

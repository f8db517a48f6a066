#include "train/partition_messages.h"

#include "comm/byte_io.h"

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

std::optional<PartitionGrant> request_partition(comm::ControlPlane& control,
                                                bool finished_previous) {
  control.send(0, comm::Tag::kPartitionRequest, serialize(PartitionRequest{finished_previous, 0}));
  return parse_partition_grant(control.receive(0, comm::Tag::kPartitionGrant, "partition grant"));
}

void send_partition_grant(comm::ControlPlane& control, int worker,
                          const std::optional<PartitionGrant>& grant) {
  comm::ByteWriter writer;
  put_grant(writer, grant);
  control.send(worker, comm::Tag::kPartitionGrant, writer.bytes());
}

std::optional<PartitionGrant> parse_partition_grant(const comm::ControlMessage& message) {
  comm::ByteReader reader(message.payload, "partition grant");
  auto grant = get_grant(reader);
  reader.expect_end();
  return grant;
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

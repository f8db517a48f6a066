#include "train/partition_messages.h"

#include "comm/byte_io.h"

namespace gradshare::train {

std::optional<PartitionGrant> request_partition(comm::ControlPlane& control,
                                                bool finished_previous) {
  control.send(0, comm::Tag::kPartitionRequest,
               comm::ByteWriter().put<std::uint8_t>(finished_previous ? 1 : 0).bytes());
  const auto reply = control.receive(0, comm::Tag::kPartitionGrant, "partition grant");
  comm::ByteReader reader(reply.payload, "partition grant");
  const bool has = reader.get<std::uint8_t>() != 0;
  PartitionGrant grant;
  grant.epoch = reader.get<std::int64_t>();
  grant.partition = reader.get<std::int64_t>();
  reader.expect_end();
  if (!has) return std::nullopt;
  return grant;
}

void send_partition_grant(comm::ControlPlane& control, int worker,
                          const std::optional<PartitionGrant>& grant) {
  comm::ByteWriter writer;
  writer.put<std::uint8_t>(grant ? 1 : 0);
  writer.put<std::int64_t>(grant ? grant->epoch : 0);
  writer.put<std::int64_t>(grant ? grant->partition : 0);
  control.send(worker, comm::Tag::kPartitionGrant, writer.bytes());
}

}  // namespace gradshare::train

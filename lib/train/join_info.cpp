// join_info.cpp: join_info, parse_join_info.
#include "train/join_info.h"

#include "comm/byte_io.h"
#include "train/normalization_message.h"

namespace gradshare::train {

std::vector<std::uint8_t> join_info(const runtime::RunContext& context) {
  comm::ByteWriter writer;
  writer.put_string(context.run_directory.path());
  writer.put<std::int32_t>(context.size);
  writer.put_vector(std::span<const std::uint8_t>(serialize(context.data.normalization)));
  return writer.take();
}

JoinInfo parse_join_info(std::span<const std::uint8_t> bytes) {
  comm::ByteReader reader(bytes, "join info");
  JoinInfo info;
  info.run_path = reader.get_string();
  info.size = reader.get<std::int32_t>();
  info.normalization = parse_normalization(reader.get_vector<std::uint8_t>());
  reader.expect_end();
  return info;
}

}  // namespace gradshare::train

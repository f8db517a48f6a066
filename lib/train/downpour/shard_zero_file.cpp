// downpour/shard_zero_file.cpp: shard 0's snapshot file (see shard_zero_file.h).
#include "train/downpour/shard_zero_file.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "core/errors.h"
#include "kernels/cpu/codec_crc32c.h"

namespace gradshare::train {

namespace {

constexpr char kMagic[8] = {'g', 's', 'd', 'p', 's', 'h', '0', '\n'};
constexpr std::size_t kPrefixBytes = sizeof(kMagic) + sizeof(std::uint32_t) + sizeof(std::uint64_t);

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw core::RuntimeError("shard 0's snapshot " + path + ": " + why);
}

}  // namespace

std::string shard_zero_path(const report::RunDirectory& run_directory) {
  return run_directory.file("downpour-shard-0.snapshot");
}

void write_shard_zero(const std::string& path, const ShardSnapshot& snapshot) {
  comm::ByteWriter writer;
  snapshot.write(writer);
  const auto body = writer.bytes();
  const std::uint32_t crc = kernels::cpu::crc32c(0, body.data(), body.size());
  const std::uint64_t length = body.size();
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(kMagic, sizeof kMagic);
    out.write(reinterpret_cast<const char*>(&crc), sizeof crc);
    out.write(reinterpret_cast<const char*>(&length), sizeof length);
    out.write(reinterpret_cast<const char*>(body.data()), static_cast<std::streamsize>(body.size()));
    if (!out.flush()) fail(path, "cannot write " + temporary);
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) fail(path, "cannot rename " + temporary + " to it: " + error.message());
}

ShardSnapshot read_shard_zero(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot be read (written under fault tolerance only)");
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                        std::istreambuf_iterator<char>());
  if (bytes.size() < kPrefixBytes || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    fail(path, "not a shard snapshot");
  std::uint32_t crc = 0;
  std::uint64_t length = 0;
  std::memcpy(&crc, bytes.data() + sizeof kMagic, sizeof crc);
  std::memcpy(&length, bytes.data() + sizeof kMagic + sizeof crc, sizeof length);
  if (length != bytes.size() - kPrefixBytes)
    fail(path, "truncated: " + std::to_string(bytes.size() - kPrefixBytes) + " of " +
                   std::to_string(length) + " bytes");
  const std::span<const std::uint8_t> body(bytes.data() + kPrefixBytes, length);
  if (kernels::cpu::crc32c(0, body.data(), body.size()) != crc) fail(path, "checksum mismatch");
  comm::ByteReader reader(body, "shard 0's snapshot");
  auto snapshot = ShardSnapshot::read(reader);
  if (snapshot.shard != 0) fail(path, "holds shard " + std::to_string(snapshot.shard));
  return snapshot;
}

}  // namespace gradshare::train

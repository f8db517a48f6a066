// message.cpp: header serialisation, checksum and header validation (layout in message.h).
#include "codec/message.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "core/errors.h"
#include "kernels/cpu/codec_bitmap_layout.h"
#include "kernels/cpu/codec_crc32c.h"

namespace gradshare::codec {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the codec writes its little-endian wire format with plain stores");

template <class T>
void store(std::uint8_t* message, std::size_t offset, T value) {
  std::memcpy(message + offset, &value, sizeof value);
}

template <class T>
T load(const std::uint8_t* message, std::size_t offset) {
  T value;
  std::memcpy(&value, message + offset, sizeof value);
  return value;
}

std::uint32_t checksum(std::span<const std::uint8_t> message) {
  const std::uint32_t crc = kernels::cpu::crc32c(0, message.data(), kChecksumOffset);
  return kernels::cpu::crc32c(crc, message.data() + kHeaderBytes, message.size() - kHeaderBytes);
}

bool fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return false;
}

std::string number(std::uint64_t value) { return std::to_string(value); }

}  // namespace

const char* encoding_name(Encoding encoding) {
  switch (encoding) {
    case Encoding::kSparse:
      return "sparse";
    case Encoding::kBitmap:
      return "bitmap";
    case Encoding::kCompressed:
      return "compressed";
  }
  return "unknown";
}

void seal_message(const MessageHeader& header, std::span<std::uint8_t> message) {
  GS_CHECK(message.size() == kHeaderBytes + header.payload_bytes,
           "message buffer does not match the payload size");
  std::uint8_t* m = message.data();
  store(m, 0, header.magic);
  store(m, 4, header.version);
  store(m, 6, static_cast<std::uint8_t>(header.encoding));
  store(m, 7, std::uint8_t{0});
  store(m, 8, header.flags);
  store(m, 12, header.origin);
  store(m, 16, header.seq);
  store(m, 24, header.iteration);
  store(m, 32, header.epoch);
  store(m, 36, header.tau);
  store(m, 40, header.parameter_count);
  store(m, 48, header.entry_count);
  store(m, 56, header.payload_bytes);
  store(m, 64, std::uint32_t{0});
  store(m, kChecksumOffset, checksum(message));
}

bool parse_header(std::span<const std::uint8_t> message, std::size_t expected_parameter_count,
                  MessageHeader& out, std::string* error) {
  if (message.size() < kHeaderBytes) {
    return fail(error, "message of " + number(message.size()) + " bytes is shorter than the " +
                           number(kHeaderBytes) + "-byte header");
  }
  const std::uint8_t* m = message.data();
  MessageHeader h;
  h.magic = load<std::uint32_t>(m, 0);
  if (h.magic != kMagic) return fail(error, "bad magic (not a gradshare update message)");
  h.version = load<std::uint16_t>(m, 4);
  if (h.version != kFormatVersion) {
    return fail(error, "format version " + number(h.version) + ", this build reads " +
                           number(kFormatVersion));
  }
  const auto encoding = load<std::uint8_t>(m, 6);
  if (encoding < 1 || encoding > 3) return fail(error, "unknown encoding " + number(encoding));
  h.encoding = static_cast<Encoding>(encoding);
  if (load<std::uint8_t>(m, 7) != 0 || load<std::uint32_t>(m, 64) != 0) {
    return fail(error, "reserved header fields are not zero");
  }
  h.flags = load<std::uint32_t>(m, 8);
  if ((h.flags & kCodecFlagMask & ~kKnownCodecFlags) != 0) {
    return fail(error, "unknown codec flags " + number(h.flags & kCodecFlagMask));
  }
  h.origin = load<std::uint32_t>(m, 12);
  h.seq = load<std::uint64_t>(m, 16);
  h.iteration = load<std::uint64_t>(m, 24);
  h.epoch = load<std::uint32_t>(m, 32);
  h.tau = load<float>(m, 36);
  if (!std::isnormal(h.tau) || h.tau < 0.0f) {
    return fail(error, "tau " + std::to_string(h.tau) + " is not a positive normal number");
  }
  h.parameter_count = load<std::uint64_t>(m, 40);
  if (h.parameter_count != expected_parameter_count || h.parameter_count > kMaxParameterCount) {
    return fail(error, "message is for " + number(h.parameter_count) +
                           " parameters, the receiver has " + number(expected_parameter_count));
  }
  h.entry_count = load<std::uint64_t>(m, 48);
  if (h.entry_count > h.parameter_count) {
    return fail(error, "entry count " + number(h.entry_count) + " exceeds the parameter count " +
                           number(h.parameter_count));
  }
  h.payload_bytes = load<std::uint64_t>(m, 56);
  if (h.payload_bytes != message.size() - kHeaderBytes) {
    return fail(error, "header announces a " + number(h.payload_bytes) +
                           "-byte payload, the message carries " +
                           number(message.size() - kHeaderBytes));
  }
  const bool fits = h.encoding == Encoding::kSparse ? h.payload_bytes == 4 * h.entry_count
                    : h.encoding == Encoding::kBitmap
                        ? h.payload_bytes == kernels::cpu::bitmap_bytes(h.parameter_count)
                        : h.payload_bytes >= 1;
  if (!fits) {
    return fail(error, std::string("payload of ") + number(h.payload_bytes) +
                           " bytes cannot hold a " + encoding_name(h.encoding) + " message with " +
                           number(h.entry_count) + " entries");
  }
  h.checksum = load<std::uint32_t>(m, kChecksumOffset);
  if (h.checksum != checksum(message)) return fail(error, "checksum mismatch (corrupt message)");
  out = h;
  return true;
}

}  // namespace gradshare::codec

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

// Field offsets (the table in message.h).
constexpr std::size_t kMagicAt = 0;
constexpr std::size_t kVersionAt = 2;
constexpr std::size_t kEncodingAt = 3;
constexpr std::size_t kFlagsAt = 4;
constexpr std::size_t kEpochAt = 6;
constexpr std::size_t kOriginAt = 8;
constexpr std::size_t kSeqAt = 12;
constexpr std::size_t kIterationAt = 16;
constexpr std::size_t kTauAt = 20;
constexpr std::size_t kParameterCountAt = 24;
constexpr std::size_t kEntryCountAt = 28;
constexpr std::size_t kPayloadBytesAt = 32;
static_assert(kChecksumOffset == 36 && kHeaderBytes == kChecksumOffset + 4);

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

// MessageHeader::flags (codec bits 0..7, caller bits 16..23) <-> the 16-bit wire field.
std::uint16_t wire_flags(std::uint32_t flags) {
  return static_cast<std::uint16_t>((flags & kCodecFlagMask) | ((flags & kCallerFlagMask) >> 8));
}

std::uint32_t header_flags(std::uint16_t wire) {
  return (wire & kCodecFlagMask) | ((static_cast<std::uint32_t>(wire) << 8) & kCallerFlagMask);
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
    case Encoding::kExact:
      return "exact";
    case Encoding::kValues:
      return "values";
  }
  return "unknown";
}

bool check_meta(const MessageMeta& meta, std::string* error) {
  if ((meta.flags & ~kCallerFlagMask) != 0) {
    return fail(error, "message flags " + number(meta.flags) + " use bits outside 16..23");
  }
  if (meta.epoch > kMaxEpoch) {
    return fail(error, "epoch " + number(meta.epoch) + " exceeds the message header's limit " +
                           number(kMaxEpoch));
  }
  if (meta.seq > kMaxSeq) {
    return fail(error, "sequence number " + number(meta.seq) +
                           " exceeds the message header's limit " + number(kMaxSeq));
  }
  if (meta.iteration > kMaxIteration) {
    return fail(error, "iteration " + number(meta.iteration) +
                           " exceeds the message header's limit " + number(kMaxIteration));
  }
  return true;
}

void seal_message(const MessageHeader& header, std::span<std::uint8_t> message) {
  GS_CHECK(message.size() == kHeaderBytes + header.payload_bytes,
           "message buffer does not match the payload size");
  GS_CHECK((header.flags & ~(kCodecFlagMask | kCallerFlagMask)) == 0 && header.epoch <= kMaxEpoch &&
               header.seq <= kMaxSeq && header.iteration <= kMaxIteration &&
               header.parameter_count <= kMaxParameterCount &&
               header.entry_count <= header.parameter_count &&
               header.payload_bytes <= kMaxPayloadBytes,
           "message header field beyond its limit");
  std::uint8_t* m = message.data();
  store(m, kMagicAt, kMagic);
  store(m, kVersionAt, static_cast<std::uint8_t>(kFormatVersion));
  store(m, kEncodingAt, static_cast<std::uint8_t>(header.encoding));
  store(m, kFlagsAt, wire_flags(header.flags));
  store(m, kEpochAt, static_cast<std::uint16_t>(header.epoch));
  store(m, kOriginAt, header.origin);
  store(m, kSeqAt, static_cast<std::uint32_t>(header.seq));
  store(m, kIterationAt, static_cast<std::uint32_t>(header.iteration));
  store(m, kTauAt, header.tau);
  store(m, kParameterCountAt, static_cast<std::uint32_t>(header.parameter_count));
  store(m, kEntryCountAt, static_cast<std::uint32_t>(header.entry_count));
  store(m, kPayloadBytesAt, static_cast<std::uint32_t>(header.payload_bytes));
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
  h.magic = load<std::uint16_t>(m, kMagicAt);
  if (h.magic != kMagic) return fail(error, "bad magic (not a gradshare update message)");
  h.version = load<std::uint8_t>(m, kVersionAt);
  if (h.version != kFormatVersion) {
    // Version 1 began with "GSUP": its "UP" sits where version 2 keeps version and encoding.
    const bool version_1 = h.version == 'U' && m[kEncodingAt] == 'P';
    return fail(error, "format version " + number(version_1 ? 1 : h.version) +
                           ", this build reads " + number(kFormatVersion));
  }
  const auto encoding = load<std::uint8_t>(m, kEncodingAt);
  if (encoding < 1 || encoding > 5) return fail(error, "unknown encoding " + number(encoding));
  h.encoding = static_cast<Encoding>(encoding);
  h.flags = header_flags(load<std::uint16_t>(m, kFlagsAt));
  if ((h.flags & kCodecFlagMask & ~kKnownCodecFlags) != 0) {
    return fail(error, "unknown codec flags " + number(h.flags & kCodecFlagMask));
  }
  h.epoch = load<std::uint16_t>(m, kEpochAt);
  h.origin = load<std::uint32_t>(m, kOriginAt);
  h.seq = load<std::uint32_t>(m, kSeqAt);
  h.iteration = load<std::uint32_t>(m, kIterationAt);
  h.tau = load<float>(m, kTauAt);
  if (!std::isnormal(h.tau) || h.tau < 0.0f) {
    return fail(error, "tau " + std::to_string(h.tau) + " is not a positive normal number");
  }
  h.parameter_count = load<std::uint32_t>(m, kParameterCountAt);
  if (h.parameter_count > kMaxParameterCount) {
    return fail(error, "message is for " + number(h.parameter_count) +
                           " parameters, beyond the format's limit of " +
                           number(kMaxParameterCount));
  }
  if (h.parameter_count != expected_parameter_count) {
    return fail(error, "message is for " + number(h.parameter_count) +
                           " parameters, the receiver has " + number(expected_parameter_count));
  }
  h.entry_count = load<std::uint32_t>(m, kEntryCountAt);
  if (h.entry_count > h.parameter_count) {
    return fail(error, "entry count " + number(h.entry_count) + " exceeds the parameter count " +
                           number(h.parameter_count));
  }
  h.payload_bytes = load<std::uint32_t>(m, kPayloadBytesAt);
  if (h.payload_bytes != message.size() - kHeaderBytes) {
    return fail(error, "header announces a " + number(h.payload_bytes) +
                           "-byte payload, the message carries " +
                           number(message.size() - kHeaderBytes));
  }
  const bool fits = h.encoding == Encoding::kSparse  ? h.payload_bytes == 4 * h.entry_count
                    : h.encoding == Encoding::kExact ? h.payload_bytes == 8 * h.entry_count
                    : h.encoding == Encoding::kValues
                        ? h.payload_bytes >= 2 * static_cast<std::uint64_t>(h.entry_count) + 1
                    : h.encoding == Encoding::kBitmap
                        ? h.payload_bytes == kernels::cpu::bitmap_bytes(h.parameter_count)
                        : h.payload_bytes >= 1;
  if (!fits) {
    return fail(error, std::string("payload of ") + number(h.payload_bytes) +
                           " bytes cannot hold " + number(h.entry_count) + " entries of the " +
                           encoding_name(h.encoding) + " encoding");
  }
  h.checksum = load<std::uint32_t>(m, kChecksumOffset);
  if (h.checksum != checksum(message)) return fail(error, "checksum mismatch (corrupt message)");
  out = h;
  return true;
}

}  // namespace gradshare::codec

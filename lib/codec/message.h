// message.h: the wire format of one encoded update and its header parser.
//
// A message is a 72-byte header followed by a payload. Every field is little-endian:
//
//   offset size field            meaning
//        0    4 magic            the bytes "GSUP"
//        4    2 version          kFormatVersion (1)
//        6    1 encoding         1 sparse, 2 bitmap, 3 compressed (enum Encoding)
//        7    1 reserved         0
//        8    4 flags            bits 0..15 the codec's (kFlag*; unknown ones rejected),
//                                bits 16..31 the caller's (MessageMeta::flags, passed through)
//       12    4 origin           rank that produced the update
//       16    8 seq              per-origin sequence number; (origin, seq) is the update ID
//       24    8 iteration        the origin's iteration when it encoded
//       32    4 epoch
//       36    4 tau              float32 quantum, finite, positive and normal
//       40    8 parameter_count  must equal the receiver's parameter count (<= 2^31 - 1)
//       48    8 entry_count      non-zero quanta in the payload (<= parameter_count)
//       56    8 payload_bytes    must equal the message length - 72
//       64    4 reserved         0
//       68    4 checksum         CRC32C of bytes [0, 68) followed by the payload
//       72      payload
//
// Payloads; a quantum's value is added to an accumulator and subtracted from parameters:
//   sparse      entry_count int32, |v| the 1-based parameter index in strictly increasing order,
//               v > 0: +tau, v < 0: -tau (DL4J's convention)
//   bitmap      ceil(n / 4) bytes, 2 bits per parameter (kernels/cpu/codec_bitmap_layout.h):
//               0 nothing, 1 +tau, 2 -tau, 3 half quantum. The half quantum is tau / 2 with the
//               sign the message gives: -tau/2 when kFlagHalfNegative is set, +tau/2 otherwise.
//               It may only occur with kFlagShakeUp. Shake-ups alternate the sign, so both signs
//               are sent, one per message (DL4J's docs: the half state "cycles between +ve and
//               -ve").
//   compressed  Golomb-Rice coded index gaps and signs (layout: kernels/cpu/codec_rice.h)
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace gradshare::codec {

enum class Encoding : std::uint8_t { kSparse = 1, kBitmap = 2, kCompressed = 3 };
const char* encoding_name(Encoding encoding);

inline constexpr std::uint32_t kFlagShakeUp = 1u << 0;       // a shake-up message
inline constexpr std::uint32_t kFlagHalfNegative = 1u << 1;  // half quanta are -tau/2
inline constexpr std::uint32_t kCodecFlagMask = 0x0000FFFFu;
inline constexpr std::uint32_t kKnownCodecFlags = kFlagShakeUp | kFlagHalfNegative;

inline constexpr std::size_t kHeaderBytes = 72;
inline constexpr std::size_t kChecksumOffset = 68;
inline constexpr std::uint16_t kFormatVersion = 1;
inline constexpr std::uint32_t kMagic = 0x50555347u;  // "GSUP" read as a little-endian uint32
// Sparse indices are signed int32, which bounds the parameter count of every encoding.
inline constexpr std::size_t kMaxParameterCount = 0x7FFFFFFF;

// What the caller stamps on a message. flags may use bits 16..31 only.
struct MessageMeta {
  std::uint32_t origin = 0;
  std::uint64_t seq = 0;
  std::uint64_t iteration = 0;
  std::uint32_t epoch = 0;
  std::uint32_t flags = 0;
};

struct MessageHeader {
  std::uint32_t magic = kMagic;
  std::uint16_t version = kFormatVersion;
  Encoding encoding = Encoding::kSparse;
  std::uint32_t flags = 0;
  std::uint32_t origin = 0;
  std::uint64_t seq = 0;
  std::uint64_t iteration = 0;
  std::uint32_t epoch = 0;
  float tau = 0.0f;
  std::uint64_t parameter_count = 0;
  std::uint64_t entry_count = 0;
  std::uint64_t payload_bytes = 0;
  std::uint32_t checksum = 0;
};

// Writes `header` into message[0, kHeaderBytes) and the checksum over the header and the
// payload already in message[kHeaderBytes, ...); header.checksum is ignored.
// Requires message.size() == kHeaderBytes + header.payload_bytes.
void seal_message(const MessageHeader& header, std::span<std::uint8_t> message);

// Decodes and checks every header field against the buffer length and the receiver's
// parameter count, and verifies the checksum over header and payload. The payload's inner
// structure is checked by apply_message / accumulate_message. Returns false with *error (if
// not null) describing the first problem; never reads outside `message`.
bool parse_header(std::span<const std::uint8_t> message, std::size_t expected_parameter_count,
                  MessageHeader& out, std::string* error);

// Message length for a header (kHeaderBytes + payload_bytes).
inline std::size_t message_bytes(const MessageHeader& header) {
  return kHeaderBytes + static_cast<std::size_t>(header.payload_bytes);
}

}  // namespace gradshare::codec

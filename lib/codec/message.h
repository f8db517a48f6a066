// message.h: the wire format of one encoded update and its header parser.
//
// A message is a 40-byte header followed by a payload. Every field is a little-endian unsigned
// integer unless said otherwise; each is sized for its largest legal value, and a value that
// does not fit is an error at encode time (never a silent wrap):
//
//   offset size field            meaning and limit
//        0    2 magic            the bytes "GS"
//        2    1 version          kFormatVersion (2; version 1 had a 72-byte header)
//        3    1 encoding         1 sparse, 2 bitmap, 3 compressed, 4 exact, 5 values (enum
//                                Encoding)
//        4    2 flags            bits 0..7 the codec's (kFlag*; unknown ones rejected), bits 8..15
//                                the caller's: MessageMeta::flags bits 16..23, passed through
//        6    2 epoch            < 2^16 epochs
//        8    4 origin           rank that produced the update (MPI ranks are ints: 32 bits)
//       12    4 seq              per-origin sequence number, < 2^32; (origin, seq) is the
//                                update ID. An origin sends at most one message per step, so
//                                this is 50 days of 1 ms steps from one worker
//       16    4 iteration        the origin's iteration when it encoded, < 2^32 (same reasoning)
//       20    4 tau              float32 quantum, finite, positive and normal
//       24    4 parameter_count  1..2^31 - 1 (sparse indices are signed int32); must equal the
//                                receiver's parameter count
//       28    4 entry_count      non-zero quanta in the payload (<= parameter_count)
//       32    4 payload_bytes    must equal the message length - 40; < 2^32, which limits the
//                                sparse format to 2^30 - 1 parameters (the others need <= n / 2)
//       36    4 checksum         CRC32C of bytes [0, 36) followed by the payload
//       40      payload
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
//   exact       entry_count (uint32 index, float32 value) records: values, not quanta (codec/
//               exact.h); only an aggregating relay's flush sends them, and tau is 1
//   values      entry_count bfloat16 magnitudes, then a compressed Rice stream of the signed
//               indices (codec/values.h): an aggregating relay's messages, values not quanta
// docs/message-format.md says the same for readers of the repository.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace gradshare::codec {

enum class Encoding : std::uint8_t {
  kSparse = 1,
  kBitmap = 2,
  kCompressed = 3,
  kExact = 4,
  kValues = 5
};
const char* encoding_name(Encoding encoding);

// MessageHeader::flags: the codec's bits 0..7 and the caller's bits 16..23 (on the wire both
// share one 16-bit field, see above).
inline constexpr std::uint32_t kFlagShakeUp = 1u << 0;       // a shake-up message
inline constexpr std::uint32_t kFlagHalfNegative = 1u << 1;  // half quanta are -tau/2
inline constexpr std::uint32_t kCodecFlagMask = 0x000000FFu;
inline constexpr std::uint32_t kCallerFlagMask = 0x00FF0000u;
inline constexpr std::uint32_t kKnownCodecFlags = kFlagShakeUp | kFlagHalfNegative;

inline constexpr std::size_t kHeaderBytes = 40;
inline constexpr std::size_t kChecksumOffset = 36;
inline constexpr std::uint16_t kFormatVersion = 2;
inline constexpr std::uint16_t kMagic = 0x5347;  // "GS" read as a little-endian uint16
// Sparse indices are signed int32, which bounds the parameter count of every encoding.
inline constexpr std::size_t kMaxParameterCount = 0x7FFFFFFF;
// Limits of the narrower header fields (see the table above).
inline constexpr std::uint64_t kMaxEpoch = 0xFFFF;
inline constexpr std::uint64_t kMaxSeq = 0xFFFFFFFF;
inline constexpr std::uint64_t kMaxIteration = 0xFFFFFFFF;
inline constexpr std::uint64_t kMaxPayloadBytes = 0xFFFFFFFF;

// What the caller stamps on a message. flags may use bits 16..23 only; epoch, seq and
// iteration must fit their header fields (check_meta).
struct MessageMeta {
  std::uint32_t origin = 0;
  std::uint64_t seq = 0;
  std::uint64_t iteration = 0;
  std::uint32_t epoch = 0;
  std::uint32_t flags = 0;
};

// A parsed header; the wider in-memory types hold the wire fields unchanged.
struct MessageHeader {
  std::uint16_t magic = kMagic;
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

// Whether meta fits the header (flags in bits 16..23, epoch, seq and iteration within their
// limits); false with *error (if not null) naming the first field that does not.
bool check_meta(const MessageMeta& meta, std::string* error);

// Writes `header` into message[0, kHeaderBytes) and the checksum over the header and the
// payload already in message[kHeaderBytes, ...); header.magic, version and checksum are
// ignored. Requires message.size() == kHeaderBytes + header.payload_bytes and every field
// within its limit.
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

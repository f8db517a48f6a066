// codec_rice.cpp: Golomb-Rice encoder, validator and fused decode-apply (layout in codec_rice.h).
#include "kernels/cpu/codec_rice.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

namespace gradshare::kernels::cpu {
namespace {

constexpr unsigned kMaxK = 31;
constexpr unsigned kCandidates = 4;

std::uint32_t magnitude(std::int32_t v) {
  return v < 0 ? static_cast<std::uint32_t>(-static_cast<std::int64_t>(v))
               : static_cast<std::uint32_t>(v);
}

std::uint64_t low_mask(unsigned bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }

// Appends bit fields least significant bit first; flushes whole 32-bit groups.
class BitWriter {
 public:
  explicit BitWriter(std::uint8_t* out) : out_(out) {}
  void put(std::uint64_t value, unsigned bits) {  // bits <= 32
    acc_ |= value << used_;
    used_ += bits;
    if (used_ >= 32) {
      const auto word = static_cast<std::uint32_t>(acc_);
      std::memcpy(out_, &word, 4);
      out_ += 4;
      acc_ >>= 32;
      used_ -= 32;
    }
  }
  void zeros(std::uint64_t count) {
    for (; count >= 32; count -= 32) put(0, 32);
    put(0, static_cast<unsigned>(count));
  }
  std::uint8_t* finish() {
    for (; used_ > 0; used_ = used_ > 8 ? used_ - 8 : 0) {
      *out_++ = static_cast<std::uint8_t>(acc_);
      acc_ >>= 8;
    }
    return out_;
  }

 private:
  std::uint8_t* out_;
  std::uint64_t acc_ = 0;
  unsigned used_ = 0;
};

// Reads bits of the stream with bounds checks; bits past the end read as zero.
class BitReader {
 public:
  explicit BitReader(std::span<const std::uint8_t> bytes)
      : bytes_(bytes), total_(8 * bytes.size()) {}
  std::size_t remaining() const { return total_ - pos_; }
  std::size_t position() const { return pos_; }
  // At least min(57, remaining()) valid bits starting at the current position.
  std::uint64_t peek() const {
    const std::size_t byte = pos_ >> 3;
    std::uint64_t w = 0;
    if (byte + 8 <= bytes_.size()) {
      std::memcpy(&w, bytes_.data() + byte, 8);  // the common case: one fixed-size load
    } else if (byte < bytes_.size()) {
      std::memcpy(&w, bytes_.data() + byte, bytes_.size() - byte);
    }
    return w >> (pos_ & 7);
  }
  void skip(std::size_t bits) { pos_ += bits; }

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t total_;
  std::size_t pos_ = 0;
};

bool fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return false;
}

// Decodes every entry, calling sink(zero_based_index, negative); validates all of it.
template <class Sink>
bool walk(std::span<const std::uint8_t> payload, std::size_t count, std::size_t parameter_count,
          Sink&& sink, std::string* error) {
  if (payload.empty()) return fail(error, "compressed payload is empty (no Rice parameter)");
  const unsigned k = payload[0];
  if (k > kMaxK) return fail(error, "Rice parameter " + std::to_string(k) + " above 31");
  BitReader reader(payload.subspan(1));
  if (count > reader.remaining() / 2) {  // every entry takes at least two bits
    return fail(error, "compressed payload too short for " + std::to_string(count) + " entries");
  }
  const std::uint64_t max_quotient = static_cast<std::uint64_t>(parameter_count) >> k;
  std::uint64_t previous = 0;
  for (std::size_t j = 0; j < count; ++j) {
    std::uint64_t q = 0;
    std::uint64_t fields = 0;  // the k remainder bits, then the sign bit
    const std::size_t avail = std::min<std::size_t>(57, reader.remaining());
    const std::uint64_t w = reader.peek() & low_mask(static_cast<unsigned>(avail));
    const std::size_t zeros = w != 0 ? static_cast<std::size_t>(std::countr_zero(w)) : 64;
    if (zeros + k + 2 <= avail) {  // the usual case: the whole entry lies in this word
      q = zeros;
      fields = w >> (zeros + 1);
      reader.skip(zeros + k + 2);
    } else {
      while (q <= max_quotient) {  // a long unary run, or the end of the stream
        const std::size_t chunk = std::min<std::size_t>(57, reader.remaining());
        if (chunk == 0)
          return fail(error, "compressed payload truncated in entry " + std::to_string(j));
        const std::uint64_t bits = reader.peek() & low_mask(static_cast<unsigned>(chunk));
        if (bits == 0) {
          q += chunk;
          reader.skip(chunk);
          continue;
        }
        const auto run = static_cast<unsigned>(std::countr_zero(bits));
        q += run;
        reader.skip(run + 1);
        break;
      }
      if (q <= max_quotient) {
        if (reader.remaining() < k + 1) {
          return fail(error, "compressed payload truncated in entry " + std::to_string(j));
        }
        fields = reader.peek();
        reader.skip(k + 1);
      }
    }
    if (q > max_quotient) {
      return fail(error, "compressed entry " + std::to_string(j) + " jumps past parameter " +
                             std::to_string(parameter_count));
    }
    const std::uint64_t index = previous + (q << k) + (fields & low_mask(k)) + 1;
    if (index > parameter_count) {
      return fail(error, "compressed entry " + std::to_string(j) + " names parameter " +
                             std::to_string(index) + ", outside 1.." +
                             std::to_string(parameter_count));
    }
    sink(static_cast<std::size_t>(index - 1), ((fields >> k) & 1u) != 0);
    previous = index;
  }
  const std::size_t tail = reader.remaining();
  if (tail >= 8) {
    return fail(error, "compressed payload has " + std::to_string(tail / 8) +
                           " bytes after its last entry");
  }
  if ((reader.peek() & low_mask(static_cast<unsigned>(tail))) != 0) {
    return fail(error, "compressed payload padding bits are not zero");
  }
  return true;
}

}  // namespace

RiceChoice rice_choose(std::span<const std::int32_t> indices) {
  RiceChoice choice;
  if (indices.empty()) return choice;
  const std::uint64_t last = magnitude(indices.back());
  const auto mean_gap = std::max<std::uint64_t>(1, last / indices.size());
  // floor(log2(mean gap)) bounds the size (see the header); the optimum for geometric gaps is
  // at most two below it.
  const auto top = static_cast<unsigned>(std::bit_width(mean_gap) - 1);
  const unsigned first = top >= 2 ? top - 2 : 0;
  std::array<std::uint64_t, kCandidates> quotients{};
  std::uint64_t previous = 0;
  for (const std::int32_t v : indices) {
    const std::uint64_t index = magnitude(v);
    const std::uint64_t gap_minus_one = index - previous - 1;
    for (unsigned c = 0; c < kCandidates; ++c) quotients[c] += gap_minus_one >> (first + c);
    previous = index;
  }
  std::uint64_t best_bits = ~0ull;
  for (unsigned c = 0; c < kCandidates && first + c <= kMaxK; ++c) {
    const std::uint64_t bits = quotients[c] + indices.size() * (first + c + 2);
    if (bits < best_bits) {
      best_bits = bits;
      choice.k = first + c;
    }
  }
  choice.payload_bytes = 1 + static_cast<std::size_t>((best_bits + 7) / 8);
  return choice;
}

void rice_encode(std::span<const std::int32_t> indices, unsigned k,
                 std::span<std::uint8_t> payload) {
  payload[0] = static_cast<std::uint8_t>(k);
  BitWriter writer(payload.data() + 1);
  std::uint64_t previous = 0;
  for (const std::int32_t v : indices) {
    const std::uint64_t index = magnitude(v);
    const std::uint64_t gap_minus_one = index - previous - 1;
    writer.zeros(gap_minus_one >> k);
    writer.put(1, 1);
    const std::uint64_t sign = v < 0 ? 1u : 0u;
    writer.put((gap_minus_one & low_mask(k)) | (sign << k), k + 1);
    previous = index;
  }
  writer.finish();
}

bool rice_validate(std::span<const std::uint8_t> payload, std::size_t count,
                   std::size_t parameter_count, std::string* error) {
  return walk(
      payload, count, parameter_count, [](std::size_t, bool) {}, error);
}

namespace {

// Applies decoded entries in batches: decoding is a serial chain, so writing each entry as it
// is decoded leaves few cache misses in flight; a batch of independent writes overlaps them.
class BatchedApply {
 public:
  BatchedApply(float* target, float plus, float minus)
      : target_(target), plus_(plus), minus_(minus) {}
  void operator()(std::size_t index, bool negative) {
    index_[size_] = index;
    value_[size_] = negative ? minus_ : plus_;
    if (++size_ == kBatch) flush();
  }
  void flush() {
    for (std::size_t j = 0; j < size_; ++j) target_[index_[j]] += value_[j];
    size_ = 0;
  }

 private:
  static constexpr std::size_t kBatch = 256;
  float* target_;
  float plus_;
  float minus_;
  std::array<std::size_t, kBatch> index_{};
  std::array<float, kBatch> value_{};
  std::size_t size_ = 0;
};

}  // namespace

void rice_apply(std::span<const std::uint8_t> payload, std::size_t count, std::span<float> target,
                float plus, float minus) {
  BatchedApply apply(target.data(), plus, minus);
  walk(payload, count, target.size(), apply, nullptr);
  apply.flush();
}

bool rice_decode(std::span<const std::uint8_t> payload, std::size_t count,
                 std::size_t parameter_count, std::vector<std::int32_t>& indices,
                 std::string* error) {
  indices.clear();
  indices.reserve(std::min(count, 4 * payload.size()));  // an entry takes at least two bits
  return walk(
      payload, count, parameter_count,
      [&indices](std::size_t i, bool negative) {
        const auto one_based = static_cast<std::int32_t>(i + 1);
        indices.push_back(negative ? -one_based : one_based);
      },
      error);
}

}  // namespace gradshare::kernels::cpu

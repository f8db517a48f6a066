// encoder_payload.cpp: the Encoder's payload (encoder.h): the quanta a step selects, written as
// sparse indices, Rice-coded indices or a bitmap, and the error a non-finite element raises.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "codec/encoder.h"
#include "core/errors.h"
#include "kernels/cpu/codec_bitmap_layout.h"
#include "kernels/cpu/codec_decode.h"
#include "kernels/cpu/codec_rice.h"

namespace gradshare::codec {
namespace {

namespace cpu = kernels::cpu;

// First size of the index buffer; it doubles when a step selects more.
constexpr std::size_t kInitialIndexCapacity = 4096;

std::span<const std::uint8_t> as_payload(std::span<const std::int32_t> indices) {
  return {reinterpret_cast<const std::uint8_t*>(indices.data()), 4 * indices.size()};
}

// Zeroes bitmap and sets the codes of the given signed 1-based indices (all inside it).
void bitmap_from_indices(std::span<std::uint8_t> bitmap, std::span<const std::int32_t> indices) {
  std::fill(bitmap.begin(), bitmap.end(), std::uint8_t{0});
  for (const std::int32_t v : indices) {
    const std::size_t i = static_cast<std::size_t>(v < 0 ? -static_cast<std::int64_t>(v) : v) - 1;
    const std::uint8_t code = v < 0 ? cpu::kCodeMinus : cpu::kCodePlus;
    bitmap[i / 4] = static_cast<std::uint8_t>(bitmap[i / 4] | (code << (2 * (i % 4))));
  }
}

std::string value_name(float x) { return std::isnan(x) ? "NaN" : x > 0 ? "+Inf" : "-Inf"; }

}  // namespace

Encoder::Payload Encoder::encode_selected(std::span<const float> update, float tau,
                                          std::vector<std::uint8_t>& out) {
  const std::size_t n = residual_.size();
  // Beyond this many quanta the auto format finishes in a bitmap (small n never switches).
  const std::size_t limit = format_ == Format::kAuto ? auto_bitmap_limit() : n;
  if (indices_.empty()) indices_.resize(std::min(limit, std::max(kInitialIndexCapacity, n / 256)));
  const std::span<float> residual(residual_);
  std::size_t pos = 0;
  std::size_t count = 0;
  while (true) {
    const std::size_t capacity = std::min(indices_.size(), limit);
    const SelectResult result =
        kernels_->select(update.subspan(pos), residual.subspan(pos), pos, tau,
                         std::span<std::int32_t>(indices_).subspan(count, capacity - count));
    if (result.bad != kNoBadIndex) {
      // Put the quanta already taken back into the residual: nothing lost, nothing sent.
      const std::span<const std::int32_t> taken(indices_.data(), count + result.count);
      cpu::apply_sparse(as_payload(taken), taken.size(), residual_, tau, -tau);
      out.clear();
      fail_non_finite(update, pos + result.bad);
    }
    pos += result.processed;
    count += result.count;
    if (pos == n) break;
    if (capacity == limit) {
      GS_CHECK(format_ == Format::kAuto, "index buffer overflow in a forced format");
      Payload payload = encode_bitmap(update, pos, count, tau, HalfQuantum{}, out);
      payload.auto_bitmap = true;
      return payload;
    }
    indices_.resize(std::min(limit, 2 * indices_.size()));
  }
  Payload payload;
  write_payload(count, out, payload);
  return payload;
}

void Encoder::write_payload(std::size_t count, std::vector<std::uint8_t>& out, Payload& payload) {
  const std::span<const std::int32_t> selected(indices_.data(), count);
  const std::size_t sparse_bytes = 4 * count;
  const std::size_t bitmap_bytes = cpu::bitmap_bytes(residual_.size());
  cpu::RiceChoice rice;
  Encoding encoding = Encoding::kSparse;
  if (format_ == Format::kCompressed) {
    rice = cpu::rice_choose(selected);
    encoding = Encoding::kCompressed;
  } else if (format_ == Format::kAuto) {
    // Smallest wins; ties go to the simpler encoding (sparse, then compressed).
    rice = cpu::rice_choose(selected);
    std::size_t best = sparse_bytes;
    if (rice.payload_bytes < best) {
      encoding = Encoding::kCompressed;
      best = rice.payload_bytes;
    }
    if (bitmap_bytes < best) encoding = Encoding::kBitmap;
  }
  payload.encoding = encoding;
  payload.entries = count;
  switch (encoding) {
    case Encoding::kSparse:
      out.resize(kHeaderBytes + sparse_bytes);
      if (count > 0) std::memcpy(out.data() + kHeaderBytes, selected.data(), sparse_bytes);
      break;
    case Encoding::kCompressed:
      out.resize(kHeaderBytes + rice.payload_bytes);
      cpu::rice_encode(selected, rice.k,
                       std::span<std::uint8_t>(out).subspan(kHeaderBytes, rice.payload_bytes));
      break;
    case Encoding::kBitmap:
      out.resize(kHeaderBytes + bitmap_bytes);
      bitmap_from_indices(std::span<std::uint8_t>(out).subspan(kHeaderBytes), selected);
      payload.auto_bitmap = true;
      break;
    case Encoding::kExact:   // not quantized formats: codec/exact.h and, for carry_values(),
    case Encoding::kValues:  // encode_candidates write them
      GS_CHECK(false, "quanta are not written as values");
  }
}

Encoder::Payload Encoder::encode_bitmap(std::span<const float> update, std::size_t begin,
                                        std::size_t selected, float tau, HalfQuantum half,
                                        std::vector<std::uint8_t>& out) {
  const std::size_t n = residual_.size();
  out.resize(kHeaderBytes + cpu::bitmap_bytes(n));
  const auto bitmap = std::span<std::uint8_t>(out).subspan(kHeaderBytes);
  // begin is a multiple of 8: the elements before it are already selected into indices_.
  bitmap_from_indices(bitmap.first(begin / 4), {indices_.data(), selected});
  const std::span<float> residual(residual_);
  const BitmapResult result = kernels_->bitmap(update.subspan(begin), residual.subspan(begin), tau,
                                               half, bitmap.subspan(begin / 4));
  if (result.bad != kNoBadIndex) {
    // Put every quantum already taken back into the residual (the codes up to the bad chunk).
    const std::size_t done = begin + result.processed;  // a multiple of 8
    cpu::apply_bitmap(bitmap.first(done / 4), residual_, {0.0f, tau, -tau, half.value});
    out.clear();
    fail_non_finite(update, begin + result.bad);
  }
  Payload payload;
  payload.encoding = Encoding::kBitmap;
  payload.entries = selected + result.entries;
  payload.half_entries = result.half_entries;
  return payload;
}

void Encoder::fail_non_finite(std::span<const float> update, std::size_t index) const {
  const float u = update[index];
  if (!std::isfinite(u)) {
    throw core::RuntimeError("gradient encoding: update element " + std::to_string(index) + " is " +
                             value_name(u) +
                             "; non-finite updates are never encoded (did training diverge?)");
  }
  throw core::RuntimeError("gradient encoding: residual element " + std::to_string(index) +
                           " overflowed to Inf when the update was added");
}

}  // namespace gradshare::codec

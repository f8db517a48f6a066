// device_decoder.cpp: host-side verification, then the device decode-apply (see
// device_decoder.h); mirrors lib/codec/decoder.cpp.
#include "kernels/cuda/device_decoder.h"

#include "codec/exact.h"

#include <cstring>

#include "codec/message.h"
#include "kernels/cpu/codec_decode.h"
#include "kernels/cpu/codec_rice.h"
#include "kernels/cuda/codec_device.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/stream.h"

namespace gradshare::kernels::cuda {

DeviceDecoder::DeviceDecoder(cudaStream_t stream) : stream_(stream) {
  require_cuda_device();
  if (stream_ == nullptr) {
    stream_ = create_stream();
    owns_stream_ = true;
  }
  GS_CUDA_CHECK(cudaEventCreateWithFlags(&staged_, cudaEventDisableTiming));
}

DeviceDecoder::~DeviceDecoder() {
  cudaStreamSynchronize(stream_);
  cudaEventDestroy(staged_);
  if (owns_stream_) cudaStreamDestroy(stream_);
}

void DeviceDecoder::synchronize() { GS_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

bool DeviceDecoder::apply_message(std::span<const std::uint8_t> message, float* parameters,
                                  std::size_t parameter_count, std::string* error) {
  return decode_into(message, parameters, parameter_count, -1.0f, error);
}

bool DeviceDecoder::accumulate_message(std::span<const std::uint8_t> message, float* accumulator,
                                       std::size_t parameter_count, std::string* error) {
  return decode_into(message, accumulator, parameter_count, 1.0f, error);
}

const void* DeviceDecoder::upload(const void* bytes, std::size_t size) {
  // The previous upload must have left the pinned buffer before it is overwritten. Growing the
  // device buffer frees the old one, which cudaFree does only after the work using it.
  GS_CUDA_CHECK(cudaEventSynchronize(staged_));
  std::memcpy(pinned_.reserve(size), bytes, size);
  void* device = payload_.reserve(size);
  GS_CUDA_CHECK(cudaMemcpyAsync(device, pinned_.data(), size, cudaMemcpyHostToDevice, stream_));
  GS_CUDA_CHECK(cudaEventRecord(staged_, stream_));
  return device;
}

bool DeviceDecoder::decode_into(std::span<const std::uint8_t> message, float* target, std::size_t n,
                                float sign, std::string* error) {
  namespace cpu = kernels::cpu;
  codec::MessageHeader header;
  if (!codec::parse_header(message, n, header, error)) return false;
  const auto payload = message.subspan(codec::kHeaderBytes);
  const auto count = static_cast<std::size_t>(header.entry_count);
  const float plus = sign * header.tau;
  const float minus = -plus;
  switch (header.encoding) {
    case codec::Encoding::kSparse: {
      if (!cpu::validate_sparse(payload, count, n, error)) return false;
      if (count == 0) return true;
      const auto* entries =
          static_cast<const std::int32_t*>(upload(payload.data(), payload.size()));
      enqueue_apply_sparse(entries, count, target, plus, minus, stream_);
      return true;
    }
    case codec::Encoding::kCompressed: {
      if (!cpu::rice_decode(payload, count, n, indices_, error)) return false;
      if (indices_.empty()) return true;
      const auto* entries = static_cast<const std::int32_t*>(
          upload(indices_.data(), indices_.size() * sizeof(std::int32_t)));
      enqueue_apply_sparse(entries, indices_.size(), target, plus, minus, stream_);
      return true;
    }
    case codec::Encoding::kExact: {
      if (!codec::validate_exact(payload, count, n, error)) return false;
      if (count == 0) return true;
      const auto* records =
          static_cast<const std::uint32_t*>(upload(payload.data(), payload.size()));
      enqueue_apply_exact(records, count, target, sign, stream_);
      return true;
    }
    case codec::Encoding::kValues: {
      // Decoded on the host into exact records (the Rice stream is sequential), applied by the
      // exact kernel.
      static_assert(sizeof(codec::ValueEntry) == codec::kExactEntryBytes);
      if (!codec::decode_values(payload, count, n, entries_, error)) return false;
      if (count == 0) return true;
      const auto* records = static_cast<const std::uint32_t*>(
          upload(entries_.data(), entries_.size() * sizeof(codec::ValueEntry)));
      enqueue_apply_exact(records, count, target, sign, stream_);
      return true;
    }
    case codec::Encoding::kBitmap: {
      const bool shake_up = (header.flags & codec::kFlagShakeUp) != 0;
      if (!cpu::validate_bitmap(payload, n, count, shake_up, error)) return false;
      if (count == 0) return true;
      // The decoder's expression, so the half quantum is the very float the encoder subtracted.
      const float half = header.tau * 0.5f;
      const float half_value = (header.flags & codec::kFlagHalfNegative) != 0 ? -half : half;
      const auto* bitmap = static_cast<const std::uint8_t*>(upload(payload.data(), payload.size()));
      enqueue_apply_bitmap(bitmap, n, target, {plus, minus, sign * half_value}, stream_);
      return true;
    }
  }
  return false;  // unreachable: parse_header accepts only the five encodings
}

}  // namespace gradshare::kernels::cuda

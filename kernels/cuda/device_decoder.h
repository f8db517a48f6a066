// device_decoder.h: applying received messages to parameters that live on the GPU. As
// codec::apply_message / accumulate_message do, the whole message is verified on the host first
// (header, checksum, payload structure) and a malformed one leaves the target untouched; then
// only the payload crosses PCIe (through a pinned staging buffer) and is applied by
// kernels/cuda's decode-apply kernels. Compressed payloads are decoded to sparse indices on the
// host, values payloads to exact records. The apply is asynchronous on the decoder's stream:
// synchronize() before reading the target on the host; the message buffer may be reused as soon
// as a call returns.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "codec/values.h"
#include "kernels/cuda/device_buffer.h"

namespace gradshare::kernels::cuda {

class DeviceDecoder {
 public:
  // Requires a GPU (see require_cuda_device()); works on `stream` (0: its own).
  explicit DeviceDecoder(cudaStream_t stream = nullptr);
  ~DeviceDecoder();
  DeviceDecoder(const DeviceDecoder&) = delete;
  DeviceDecoder& operator=(const DeviceDecoder&) = delete;

  // parameters[i] -= value_i: the device twin of codec::apply_message. `parameters` points to
  // parameter_count floats in device memory. false with *error on a malformed message.
  bool apply_message(std::span<const std::uint8_t> message, float* parameters,
                     std::size_t parameter_count, std::string* error);
  // accumulator[i] += value_i: the twin of codec::accumulate_message.
  bool accumulate_message(std::span<const std::uint8_t> message, float* accumulator,
                          std::size_t parameter_count, std::string* error);

  cudaStream_t stream() const { return stream_; }
  void synchronize();

 private:
  bool decode_into(std::span<const std::uint8_t> message, float* target, std::size_t n, float sign,
                   std::string* error);
  // Stages `bytes` bytes through pinned memory to the device payload buffer; returns it.
  const void* upload(const void* bytes, std::size_t size);

  cudaStream_t stream_ = nullptr;
  bool owns_stream_ = false;
  cudaEvent_t staged_ = nullptr;  // the last upload has left the pinned buffer
  PinnedBuffer<std::uint8_t> pinned_;
  DeviceBuffer<std::uint8_t> payload_;
  std::vector<std::int32_t> indices_;  // a decoded compressed payload
  std::vector<codec::ValueEntry> entries_;  // a decoded values payload (exact records)
};

}  // namespace gradshare::kernels::cuda

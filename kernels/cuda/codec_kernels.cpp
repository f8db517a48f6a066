// codec_kernels.cpp: CudaCodecKernels over the launchers of codec_device.h; device spans in
// place, host spans staged through device buffers.
#include "kernels/cuda/codec_kernels.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>

#include "core/errors.h"
#include "kernels/cpu/codec_bitmap_layout.h"
#include "kernels/cuda/codec_device.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/stream.h"

namespace gradshare::kernels::cuda {
namespace {

bool device_accessible(const void* p) {
  if (p == nullptr) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();  // not sticky; leave no error behind for the next check
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

// A span as the kernels see it: the span itself when the device can reach it, else a staging
// buffer that copy_in fills from the span and copy_out copies (a prefix of) back.
template <class T>
class Staged {
 public:
  using Element = std::remove_const_t<T>;
  Staged(std::span<T> span, DeviceBuffer<Element>& staging)
      : span_(span), direct_(device_accessible(span.data())) {
    if (!direct_) staging_ = staging.reserve(std::max<std::size_t>(span.size(), 1));
  }
  T* get() const { return direct_ ? span_.data() : staging_; }
  void copy_in(cudaStream_t stream) const {
    if (direct_ || span_.empty()) return;
    GS_CUDA_CHECK(cudaMemcpyAsync(staging_, span_.data(), span_.size_bytes(),
                                  cudaMemcpyHostToDevice, stream));
  }
  void copy_out(std::size_t count, cudaStream_t stream) const {
    static_assert(!std::is_const_v<T>);
    if (direct_ || count == 0) return;
    GS_CUDA_CHECK(
        cudaMemcpyAsync(span_.data(), staging_, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
  }

 private:
  std::span<T> span_;
  bool direct_;
  Element* staging_ = nullptr;
};

std::size_t bad_index(const PassResult& result) {
  return result.bad == kNoBad ? codec::kNoBadIndex : static_cast<std::size_t>(result.bad);
}

void check_sizes(std::span<const float> u, std::span<float> r) {
  GS_CHECK(u.size() == r.size(), "update of " + std::to_string(u.size()) +
                                     " elements, residual of " + std::to_string(r.size()));
  GS_CHECK(u.size() <= 0x7FFFFFFFu, "a codec pass covers at most 2^31 - 1 elements");
}

}  // namespace

struct CudaCodecKernels::State {
  std::mutex mutex;
  cudaStream_t stream = nullptr;
  DeviceBuffer<unsigned char> workspace;
  DeviceBuffer<float> u, r;
  DeviceBuffer<std::int32_t> indices;
  DeviceBuffer<std::uint8_t> codes;
  PinnedBuffer<PassResult> result;
  PinnedBuffer<double> mass;

  void synchronize() { GS_CUDA_CHECK(cudaStreamSynchronize(stream)); }

  // Copies the pass's result back and waits for it (and for everything enqueued before).
  PassResult wait_result() {
    GS_CUDA_CHECK(cudaMemcpyAsync(result.data(), workspace.data(), sizeof(PassResult),
                                  cudaMemcpyDeviceToHost, stream));
    synchronize();
    return *result.data();
  }
};

CudaCodecKernels::CudaCodecKernels() : state_(std::make_unique<State>()) {
  require_cuda_device();
  state_->result.reserve(1);
  state_->mass.reserve(1);
  state_->stream = create_stream();
}

CudaCodecKernels::~CudaCodecKernels() {
  cudaStreamSynchronize(state_->stream);
  cudaStreamDestroy(state_->stream);
}

cudaStream_t CudaCodecKernels::stream() const { return state_->stream; }

codec::SelectResult CudaCodecKernels::select(std::span<const float> u, std::span<float> r,
                                             std::size_t first_index, float tau,
                                             std::span<std::int32_t> out) const {
  check_sizes(u, r);
  GS_CHECK(first_index + u.size() <= 0x7FFFFFFFu, "indices beyond int32");
  if (u.empty()) return {};
  State& s = *state_;
  const std::lock_guard lock(s.mutex);
  const Staged du(u, s.u);
  const Staged dr(r, s.r);
  const Staged dout(out, s.indices);
  du.copy_in(s.stream);
  dr.copy_in(s.stream);
  enqueue_select(du.get(), dr.get(), u.size(), first_index, tau, dout.get(), out.size(),
                 s.workspace.reserve(pass_workspace_bytes(u.size())), s.stream);
  const PassResult result = s.wait_result();
  dr.copy_out(result.processed, s.stream);
  dout.copy_out(result.count, s.stream);
  s.synchronize();
  return {result.processed, result.count, bad_index(result)};
}

codec::BitmapResult CudaCodecKernels::bitmap(std::span<const float> u, std::span<float> r,
                                             float tau, codec::HalfQuantum half,
                                             std::span<std::uint8_t> bitmap) const {
  check_sizes(u, r);
  GS_CHECK(bitmap.size() >= cpu::bitmap_bytes(u.size()), "bitmap too small");
  if (u.empty()) return {};
  State& s = *state_;
  const std::lock_guard lock(s.mutex);
  const Staged du(u, s.u);
  const Staged dr(r, s.r);
  const Staged dbitmap(bitmap, s.codes);
  du.copy_in(s.stream);
  dr.copy_in(s.stream);
  enqueue_bitmap(du.get(), dr.get(), u.size(), tau, half.threshold, half.value, dbitmap.get(),
                 s.workspace.reserve(pass_workspace_bytes(u.size())), s.stream);
  const PassResult result = s.wait_result();
  dr.copy_out(result.processed, s.stream);
  dbitmap.copy_out(cpu::bitmap_bytes(result.processed), s.stream);
  s.synchronize();
  return {result.processed, result.count, result.half, bad_index(result)};
}

codec::AddResult CudaCodecKernels::add(std::span<const float> u, std::span<float> r) const {
  check_sizes(u, r);
  if (u.empty()) return {};
  State& s = *state_;
  const std::lock_guard lock(s.mutex);
  const Staged du(u, s.u);
  const Staged dr(r, s.r);
  du.copy_in(s.stream);
  dr.copy_in(s.stream);
  enqueue_add(du.get(), dr.get(), u.size(), s.workspace.reserve(pass_workspace_bytes(u.size())),
              s.stream);
  const PassResult result = s.wait_result();
  dr.copy_out(result.processed, s.stream);
  s.synchronize();
  return {result.processed, bad_index(result)};
}

double CudaCodecKernels::clip(std::span<float> r, float limit) const {
  if (r.empty()) return 0.0;
  State& s = *state_;
  const std::lock_guard lock(s.mutex);
  const Staged dr(r, s.r);
  dr.copy_in(s.stream);
  void* workspace = s.workspace.reserve(clip_workspace_bytes(r.size()));
  enqueue_clip(dr.get(), r.size(), limit, workspace, s.stream);
  GS_CUDA_CHECK(
      cudaMemcpyAsync(s.mass.data(), workspace, sizeof(double), cudaMemcpyDeviceToHost, s.stream));
  dr.copy_out(r.size(), s.stream);
  s.synchronize();
  return *s.mass.data();
}

}  // namespace gradshare::kernels::cuda

// codec_cuda_bench.cpp: throughput of the CUDA codec kernels against the device-to-device copy
// bandwidth measured in the same run.
//   build/bench/codec_cuda_bench [--reps N]      (default 30; sizes n = 1e6, 1e7, 1e8)
// Each figure is the median of N runs timed with CUDA events around the enqueued work; before
// every run (untimed) a memset of 4x the L2 size evicts the inputs, so small sizes do not run
// from cache. The workload is the codec bench's: selected elements have r = 0, u = +-tau (r
// returns to 0), the others |r| < tau/2, u = 0, so every run sees the same residual.
// The bytes each kernel must move at least (its bound; fraction = bound / time / copy):
//   copy            cudaMemcpy device to device                  8 n (read + write)
//   select          r += u, select, subtract, emit indices        12 n + 4 entries
//   select_api      the same through CudaCodecKernels::select (host clock: with its launch,
//                   result copy and synchronisation)
//   bitmap          the same writing 2-bit codes                  12 n + n / 4
//   add             r += u (back-pressure)                        12 n
//   clip            clamp r (nothing to clip)                     4 n
//   apply_sparse    params -= tau at each index                   12 entries
//   apply_bitmap    params -= code values                         n / 4 + 8 entries
// The issue's target: select >= 0.70 of copy for n >= 1e8 on an H100/H200.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/rng.h"
#include "kernels/cuda/codec_device.h"
#include "kernels/cuda/codec_kernels.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/device_buffer.h"

namespace {

namespace cuda = gradshare::kernels::cuda;
using cuda::DeviceBuffer;

constexpr float kTau = 1e-3f;

struct Workload {
  DeviceBuffer<float> u, r;
  std::vector<std::int32_t> indices;  // the signed 1-based indices that fire
};

Workload make_workload(std::size_t n, std::uint64_t density_ppm) {
  gradshare::core::Rng rng(n * 1000003u + density_ppm);
  std::vector<float> u(n), r(n);
  std::vector<std::int32_t> indices;
  for (std::size_t i = 0; i < n; ++i) {
    if (rng.below(1000000) < density_ppm) {
      const bool negative = rng.below(2) == 1;
      u[i] = negative ? -kTau : kTau;
      r[i] = 0.0f;
      const auto one_based = static_cast<std::int32_t>(i + 1);
      indices.push_back(negative ? -one_based : one_based);
    } else {
      u[i] = 0.0f;
      r[i] = static_cast<float>((rng.uniform() - 0.5) * 0.9) * kTau;
    }
  }
  Workload w{DeviceBuffer<float>(n), DeviceBuffer<float>(n), std::move(indices)};
  GS_CUDA_CHECK(cudaMemcpy(w.u.data(), u.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  GS_CUDA_CHECK(cudaMemcpy(w.r.data(), r.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  return w;
}

class Timer {
 public:
  Timer(int reps, std::size_t flush_bytes) : reps_(reps), flush_(flush_bytes) {
    GS_CUDA_CHECK(cudaStreamCreate(&stream_));
    GS_CUDA_CHECK(cudaEventCreate(&start_));
    GS_CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~Timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaStreamDestroy(stream_);
  }
  cudaStream_t stream() const { return stream_; }

  // Median seconds of `work` enqueued on stream(), after a warm-up run.
  double median(const std::function<void()>& work) {
    work();
    GS_CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::vector<double> times;
    for (int i = 0; i < reps_; ++i) {
      GS_CUDA_CHECK(cudaMemsetAsync(flush_.data(), i & 0xFF, flush_.size(), stream_));
      GS_CUDA_CHECK(cudaEventRecord(start_, stream_));
      work();
      GS_CUDA_CHECK(cudaEventRecord(stop_, stream_));
      GS_CUDA_CHECK(cudaEventSynchronize(stop_));
      float ms = 0.0f;
      GS_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
      times.push_back(ms * 1e-3);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  }

  // Median seconds of a blocking host call, by the host clock.
  double median_host(const std::function<void()>& call) {
    call();
    std::vector<double> times;
    for (int i = 0; i < reps_; ++i) {
      GS_CUDA_CHECK(cudaMemsetAsync(flush_.data(), i & 0xFF, flush_.size(), stream_));
      GS_CUDA_CHECK(cudaStreamSynchronize(stream_));
      const auto t0 = std::chrono::steady_clock::now();
      call();
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  }

 private:
  int reps_;
  DeviceBuffer<unsigned char> flush_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

void report(const char* kernel, std::size_t n, double seconds, double bytes, double copy_bw) {
  const double bw = bytes / seconds;
  std::printf("%-13s n=%-10zu %10.4f ms %9.1f GB/s  %5.2f of copy\n", kernel, n, seconds * 1e3,
              bw * 1e-9, copy_bw > 0 ? bw / copy_bw : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 30;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: %s [--reps N]\n", argv[0]);
      return 2;
    }
  }
  if (!cuda::gpu_available()) {
    std::printf("no GPU\n%s\n", cuda::describe_device().c_str());
    return 0;
  }
  try {
    int device = 0, l2 = 0;
    GS_CUDA_CHECK(cudaGetDevice(&device));
    GS_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    std::printf("device: %s; L2 %d MiB; median of %d runs\n", cuda::describe_device().c_str(),
                l2 >> 20, reps);
    Timer timer(reps, 4 * static_cast<std::size_t>(l2));
    const cudaStream_t stream = timer.stream();
    const cuda::CudaCodecKernels kernels;
    for (const std::size_t n :
         {std::size_t{1000000}, std::size_t{10000000}, std::size_t{100000000}}) {
      DeviceBuffer<float> copy_dst(n);
      DeviceBuffer<unsigned char> workspace(
          std::max(cuda::pass_workspace_bytes(n), cuda::clip_workspace_bytes(n)));
      DeviceBuffer<std::int32_t> out(n / 8);
      DeviceBuffer<std::uint8_t> bitmap((n + 3) / 4);
      const double fn = static_cast<double>(n);

      Workload w = make_workload(n, 1000);
      const double copy = timer.median([&] {
        GS_CUDA_CHECK(cudaMemcpyAsync(copy_dst.data(), w.u.data(), n * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream));
      });
      const double copy_bw = 8.0 * fn / copy;
      report("copy", n, copy, 8.0 * fn, copy_bw);

      for (const std::uint64_t ppm : {std::uint64_t{1000}, std::uint64_t{62500}}) {
        if (ppm != 1000) w = make_workload(n, ppm);
        const double entries = static_cast<double>(w.indices.size());
        const std::string name = "select@" + std::to_string(ppm) + "ppm";
        const double select = timer.median([&] {
          cuda::enqueue_select(w.u.data(), w.r.data(), n, 0, kTau, out.data(), n / 8,
                               workspace.data(), stream);
        });
        report(name.c_str(), n, select, 12.0 * fn + 4.0 * entries, copy_bw);
        const double select_api = timer.median_host([&] {
          kernels.select({w.u.data(), n}, {w.r.data(), n}, 0, kTau, {out.data(), n / 8});
        });
        report("select_api", n, select_api, 12.0 * fn + 4.0 * entries, copy_bw);

        // Decode-apply of the same entries onto copy_dst as parameters.
        DeviceBuffer<std::int32_t> indices(std::max<std::size_t>(w.indices.size(), 1));
        GS_CUDA_CHECK(cudaMemcpy(indices.data(), w.indices.data(),
                                 w.indices.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice));
        const double sparse = timer.median([&] {
          cuda::enqueue_apply_sparse(indices.data(), w.indices.size(), copy_dst.data(), -kTau, kTau,
                                     stream);
        });
        report("apply_sparse", n, sparse, 12.0 * entries, copy_bw);
      }
      // w now holds the 62500 ppm workload (one in 16: where the encoder prefers a bitmap).
      const double entries = static_cast<double>(w.indices.size());
      const double bits = timer.median([&] {
        cuda::enqueue_bitmap(w.u.data(), w.r.data(), n, kTau,
                             std::numeric_limits<float>::infinity(), 0.0f, bitmap.data(),
                             workspace.data(), stream);
      });
      report("bitmap", n, bits, 12.0 * fn + fn / 4, copy_bw);
      const double apply_bitmap = timer.median([&] {
        cuda::enqueue_apply_bitmap(bitmap.data(), n, copy_dst.data(), {-kTau, kTau, 0.0f}, stream);
      });
      report("apply_bitmap", n, apply_bitmap, fn / 4 + 8.0 * entries, copy_bw);
      // add grows r by u on every run; clip, last, then has nothing to clip.
      const double add = timer.median(
          [&] { cuda::enqueue_add(w.u.data(), w.r.data(), n, workspace.data(), stream); });
      report("add", n, add, 12.0 * fn, copy_bw);
      const double clip =
          timer.median([&] { cuda::enqueue_clip(w.r.data(), n, 1e30f, workspace.data(), stream); });
      report("clip", n, clip, 4.0 * fn, copy_bw);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "codec_cuda_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}

// softmax.cu: softmax cross-entropy on the GPU, the twin of kernels/cpu/softmax.cpp. One warp per
// row: the arg-max with the CPU's tie and NaN rules, the exponentials and the log-sum-exp in
// double, the gradient rounded to float as on the CPU. The per-row losses are then summed by one
// block in a fixed order. Sums run in another order than the CPU's sequential loop, so the loss
// and the gradient agree to rounding, the predictions and the correct count exactly.
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/layers_device.h"

namespace gradshare::kernels::cuda {
namespace {

constexpr unsigned kFull = 0xFFFFFFFFu;

__device__ inline double warp_sum(double v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(kFull, v, offset);
  return v;
}

// The CPU keeps the first maximum and never moves off a NaN at index 0 (a NaN never compares
// greater): so the arg-max is 0 when row[0] is NaN, else the first maximum of the other values.
__device__ inline int row_argmax(const float* row, std::size_t classes, int lane) {
  int best = -1;
  float best_value = 0.0f;
  for (std::size_t j = static_cast<std::size_t>(lane); j < classes; j += 32) {
    const float x = row[j];
    if (!isnan(x) && (best < 0 || x > best_value)) {
      best = static_cast<int>(j);
      best_value = x;
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const int other = __shfl_xor_sync(kFull, best, offset);
    const float other_value = __shfl_xor_sync(kFull, best_value, offset);
    if (other >= 0 &&
        (best < 0 || other_value > best_value || (other_value == best_value && other < best))) {
      best = other;
      best_value = other_value;
    }
  }
  return best < 0 || isnan(row[0]) ? 0 : best;
}

__global__ void rows_kernel(const float* __restrict__ logits,
                            const std::int32_t* __restrict__ labels, std::size_t batch,
                            std::size_t classes, float grad_scale, float* __restrict__ dlogits,
                            std::int32_t* __restrict__ predicted, double* __restrict__ row_loss,
                            int* __restrict__ row_correct) {
  const std::size_t b = global_index() / 32;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  if (b >= batch) return;  // whole warps leave together
  const float* row = logits + b * classes;
  const int best = row_argmax(row, classes, lane);
  if (lane == 0 && predicted != nullptr) predicted[b] = best;
  if (labels == nullptr) return;
  const std::int32_t label = labels[b];
  if (label < 0 || static_cast<std::size_t>(label) >= classes) {
    if (lane == 0) row_loss[b] = 0.0, row_correct[b] = 0;
    return;
  }
  const float max = row[best];
  double total = 0.0;
  for (std::size_t j = static_cast<std::size_t>(lane); j < classes; j += 32) {
    total += exp(static_cast<double>(row[j] - max));
  }
  total = warp_sum(total);
  if (lane == 0) {
    row_loss[b] = log(total) - static_cast<double>(row[label] - max);
    row_correct[b] = best == label ? 1 : 0;
  }
  if (dlogits == nullptr) return;
  float* grad = dlogits + b * classes;
  const double scale = grad_scale / total;
  for (std::size_t j = static_cast<std::size_t>(lane); j < classes; j += 32) {
    float g = static_cast<float>(exp(static_cast<double>(row[j] - max)) * scale);
    if (j == static_cast<std::size_t>(label)) g -= grad_scale;
    grad[j] = g;
  }
}

__global__ void __launch_bounds__(kBlockThreads)
    sums_kernel(const double* __restrict__ row_loss, const int* __restrict__ row_correct,
                std::size_t batch, DeviceLossSums* sums) {
  __shared__ double losses[kBlockThreads / 32];
  __shared__ long long corrects[kBlockThreads / 32];
  double loss = 0.0;
  long long correct = 0;
  for (std::size_t b = threadIdx.x; b < batch; b += kBlockThreads) {
    loss += row_loss[b];
    correct += row_correct[b];
  }
  loss = warp_sum(loss);
  for (int offset = 16; offset > 0; offset /= 2) correct += __shfl_xor_sync(kFull, correct, offset);
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  if (lane == 0) losses[warp] = loss, corrects[warp] = correct;
  __syncthreads();
  if (threadIdx.x == 0) {
    DeviceLossSums result{0.0, 0};
    for (int w = 0; w < kBlockThreads / 32; ++w) {
      result.loss_sum += losses[w];
      result.correct += corrects[w];
    }
    *sums = result;
  }
}

struct Layout {
  std::size_t losses, corrects, bytes;
};

Layout layout(std::size_t batch) {
  const std::size_t losses = 64;  // after the DeviceLossSums, 64-byte aligned
  const std::size_t corrects = losses + sizeof(double) * batch;
  return {losses, corrects, corrects + sizeof(int) * batch};
}

}  // namespace

std::size_t softmax_workspace_bytes(std::size_t batch) { return layout(batch).bytes; }

void softmax_cross_entropy(const float* logits, const std::int32_t* labels, std::size_t batch,
                           std::size_t classes, float grad_scale, float* dlogits,
                           std::int32_t* predicted, void* workspace, cudaStream_t stream) {
  static_assert(sizeof(DeviceLossSums) <= 64);
  auto* base = static_cast<char*>(workspace);
  const Layout at = layout(batch);
  auto* row_loss = reinterpret_cast<double*>(base + at.losses);
  auto* row_correct = reinterpret_cast<int*>(base + at.corrects);
  auto* sums = static_cast<DeviceLossSums*>(workspace);
  if (batch == 0 || classes == 0) {
    GS_CUDA_CHECK(cudaMemsetAsync(sums, 0, sizeof(DeviceLossSums), stream));
    return;
  }
  rows_kernel<<<grid_for(batch * 32), kBlockThreads, 0, stream>>>(
      logits, labels, batch, classes, grad_scale, dlogits, predicted, row_loss, row_correct);
  GS_CUDA_CHECK_LAUNCH();
  if (labels == nullptr) {
    GS_CUDA_CHECK(cudaMemsetAsync(sums, 0, sizeof(DeviceLossSums), stream));
    return;
  }
  sums_kernel<<<1, kBlockThreads, 0, stream>>>(row_loss, row_correct, batch, sums);
  GS_CUDA_CHECK_LAUNCH();
}

}  // namespace gradshare::kernels::cuda

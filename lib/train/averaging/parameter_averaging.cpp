// averaging/parameter_averaging.cpp: the strategy's entry (master and workers are in
// averaging/master.cpp and averaging/worker.cpp), the averaging buffer and the fingerprint.
#include "train/averaging/parameter_averaging.h"

#include <algorithm>
#include <vector>

#include "comm/job.h"
#include "core/errors.h"
#include "kernels/cpu/elementwise.h"
#include "train/averaging/roles.h"

namespace gradshare::train {

AveragingBuffer::AveragingBuffer(std::span<float> parameters, nn::Optimizer* optimizer) {
  parts_.push_back(parameters);
  if (optimizer)
    for (const auto& state : optimizer->state()) parts_.push_back(state.values);
  std::size_t total = 0;
  for (const auto& part : parts_) total += part.size();
  buffer_.resize(total);
}

std::span<float> AveragingBuffer::gather() {
  auto out = buffer_.begin();
  for (const auto& part : parts_) out = std::copy(part.begin(), part.end(), out);
  return buffer_;
}

void AveragingBuffer::scatter_mean(int workers) {
  GS_CHECK(workers > 0, "averaging over " + std::to_string(workers) + " workers");
  kernels::cpu::divide(buffer_.data(), static_cast<float>(workers), buffer_.size());
  auto in = buffer_.begin();
  for (const auto& part : parts_) {
    std::copy(in, in + static_cast<std::ptrdiff_t>(part.size()), part.begin());
    in += static_cast<std::ptrdiff_t>(part.size());
  }
}

std::uint64_t fingerprint(std::span<const float> values) {
  std::uint64_t hash = 14695981039346656037ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (std::size_t i = 0; i < values.size_bytes(); ++i) {
    hash ^= bytes[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

int run_parameter_averaging(RunContext& context) {
  auto& job = *context.job;
  const auto workers = job.worker_group();  // null on the master
  const auto control =
      job.control_channel(static_cast<double>(context.config.transport.timeout_ms) / 1000.0);
  context.phase = RunContext::kTraining;
  return context.is_master() ? run_averaging_master(context, *control)
                             : run_averaging_worker(context, *control, *workers);
}

}  // namespace gradshare::train

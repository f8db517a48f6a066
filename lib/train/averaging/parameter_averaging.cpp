// averaging/parameter_averaging.cpp: the strategy's entry (master and workers are in
// averaging/master.cpp and averaging/worker.cpp), the averaging buffer and the fingerprint.
#include "train/averaging/parameter_averaging.h"

#include <algorithm>
#include <vector>

#include "core/errors.h"
#include "kernels/cpu/elementwise.h"
#include "train/averaging/roles.h"
#include "train/group_session.h"

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

int run_parameter_averaging(runtime::RunContext& context) {
  return run_group_strategy(context, run_averaging_master, run_averaging_worker);
}

}  // namespace gradshare::train

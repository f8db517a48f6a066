// epoch_plan.cpp: Fisher-Yates shuffle from the run's Rng and the batch/partition arithmetic.
#include "data/epoch_plan.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

#include "core/errors.h"
#include "core/rng.h"

namespace gradshare::data {

EpochPlan::EpochPlan(std::size_t sample_count, std::size_t batch_size,
                     std::size_t partition_batches, std::uint64_t seed, std::int64_t epoch,
                     bool shuffle)
    : order_(sample_count), batch_size_(batch_size), partition_batches_(partition_batches) {
  GS_CHECK(batch_size > 0 && partition_batches > 0, "batch_size and partition_batches must be > 0");
  GS_CHECK(sample_count <= std::numeric_limits<std::uint32_t>::max(), "sample indices are 32-bit");
  std::iota(order_.begin(), order_.end(), std::uint32_t{0});
  if (!shuffle) return;
  // Our own Fisher-Yates rather than std::shuffle, whose algorithm is implementation-defined:
  // the order must be identical on every rank whatever its standard library.
  core::Rng rng = core::Rng::derive(seed, kShuffleStream, static_cast<std::uint64_t>(epoch));
  for (std::size_t i = sample_count; i > 1; --i) {
    const std::size_t j = rng.below(i);
    std::swap(order_[i - 1], order_[j]);
  }
}

std::size_t EpochPlan::batch_count() const {
  return (order_.size() + batch_size_ - 1) / batch_size_;
}

std::size_t EpochPlan::partition_count() const {
  return (batch_count() + partition_batches_ - 1) / partition_batches_;
}

EpochPlan::Range EpochPlan::partition(std::size_t p) const {
  GS_CHECK(p < partition_count(), "partition index out of range");
  const std::size_t first = p * partition_batches_;
  return {first, std::min(first + partition_batches_, batch_count())};
}

std::span<const std::uint32_t> EpochPlan::batch_indices(std::size_t b) const {
  GS_CHECK(b < batch_count(), "minibatch index out of range");
  const std::size_t first = b * batch_size_;
  return std::span<const std::uint32_t>(order_).subspan(
      first, std::min(batch_size_, order_.size() - first));
}

std::vector<std::int64_t> EpochPlan::partition_sizes() const {
  std::vector<std::int64_t> sizes(partition_count());
  for (std::size_t p = 0; p < sizes.size(); ++p) {
    const auto range = partition(p);
    sizes[p] = static_cast<std::int64_t>(range.end_batch - range.first_batch);
  }
  return sizes;
}

std::vector<std::vector<std::uint32_t>> EpochPlan::partition_indices(std::size_t p) const {
  const auto range = partition(p);
  std::vector<std::vector<std::uint32_t>> batches;
  for (std::size_t b = range.first_batch; b < range.end_batch; ++b) {
    const auto indices = batch_indices(b);
    batches.emplace_back(indices.begin(), indices.end());
  }
  return batches;
}

}  // namespace gradshare::data

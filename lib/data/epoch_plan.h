// epoch_plan.h: one epoch's schedule of the training set.
//   EpochPlan - the epoch's sample order (a deterministic shuffle from the run's seed and the
//               epoch), cut into minibatches, and minibatches grouped into partitions
//
// A partition is a contiguous range of partition_batches minibatches: the unit of work a master
// hands to a worker (one-process training walks them in order). Every rank building the plan
// from the same (seed, epoch) gets the same order, so only partition numbers travel.
// The last minibatch keeps the remainder (it is smaller when batch_size does not divide the
// sample count) and the last partition keeps the remaining minibatches, so every sample is seen
// exactly once per epoch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace gradshare::data {

// Rng stream of the per-epoch shuffle: Rng::derive(seed, kShuffleStream, epoch).
inline constexpr std::uint64_t kShuffleStream = 2;

class EpochPlan {
 public:
  struct Range {
    std::size_t first_batch, end_batch;  // [first_batch, end_batch)
  };

  // Without `shuffle` the order is 0, 1, ..., sample_count - 1.
  EpochPlan(std::size_t sample_count, std::size_t batch_size, std::size_t partition_batches,
            std::uint64_t seed, std::int64_t epoch, bool shuffle);

  std::size_t sample_count() const { return order_.size(); }
  std::size_t batch_count() const;
  std::size_t partition_count() const;
  Range partition(std::size_t p) const;
  // The number of minibatches of every partition, in order.
  std::vector<std::int64_t> partition_sizes() const;
  // Sample indices of minibatch b, in the shuffled order.
  std::span<const std::uint32_t> batch_indices(std::size_t b) const;
  // The sample indices of every minibatch of partition p (data::read_ahead's argument).
  std::vector<std::vector<std::uint32_t>> partition_indices(std::size_t p) const;

 private:
  std::vector<std::uint32_t> order_;
  std::size_t batch_size_;
  std::size_t partition_batches_;
};

}  // namespace gradshare::data

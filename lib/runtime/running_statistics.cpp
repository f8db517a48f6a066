#include "runtime/running_statistics.h"

#include <algorithm>
#include <vector>

#include "core/rng.h"

namespace gradshare::runtime {

void refresh_running_statistics(nn::Model& model, const RunContext& context) {
  const data::Dataset& train = context.data.train;
  if (!model.is_module() || model.buffer_views().empty() || context.size == 1 || train.size() == 0)
    return;
  const std::size_t batch = std::min<std::size_t>(
      static_cast<std::size_t>(context.config.training.batch_size), train.size());
  const auto count = static_cast<std::size_t>(context.config.model.refresh_batches);
  if (count == 0) return;
  // The same draws at every refresh: the statistics follow the parameters, not the sampling.
  core::Rng rng = core::Rng::derive(static_cast<std::uint64_t>(context.config.run.seed), 11);
  std::vector<std::uint32_t> indices(batch);
  std::vector<float> x(count * batch * train.sample_size());
  std::vector<std::int32_t> y(batch);
  for (std::size_t b = 0; b < count; ++b) {
    for (auto& index : indices) index = static_cast<std::uint32_t>(rng.below(train.size()));
    data::gather_batch(train, indices, x.data() + b * batch * train.sample_size(), y.data());
  }
  model.refresh_statistics(x.data(), batch, count);
}

}  // namespace gradshare::runtime

#include "sim/model_sample.h"

#include <algorithm>
#include <optional>

#include "core/cpu_time.h"
#include "core/rng.h"
#include "data/loader.h"
#include "nn/model.h"
#include "nn/threads.h"
#include "train/replica.h"

namespace gradshare::sim {

ModelSample sample_model(const config::ExperimentConfig& config, SampleData data, int warm_up,
                         int steps, int keep) {
  const auto seed = static_cast<std::uint64_t>(config.run.seed);
  if (config.compute.threads > 0) nn::set_compute_threads(static_cast<int>(config.compute.threads));
  steps = std::max(steps, 3);
  warm_up = std::max(warm_up, 1);
  // A worker's step at the start of a run (the schedule's first rate).
  train::Replica replica(config, warm_up + steps, warm_up + steps, /*dropout_substream=*/1);
  const nn::Model& model = replica.model();
  const auto batch = static_cast<std::size_t>(config.training.batch_size);
  core::Rng rng(seed);
  std::vector<float> inputs(batch * model.sample_size());
  std::vector<std::int32_t> labels(batch);
  std::optional<data::Dataset> train_set;
  if (data == SampleData::kConfigured) {
    auto data_config = config.data;
    data_config.read = "memory";  // gather_batch straight from memory
    train_set = std::move(data::load_data(data_config, seed, false).train);
  }
  std::vector<std::uint32_t> indices(batch);

  ModelSample sample;
  sample.parameter_count = model.parameter_count();
  std::vector<double> times;
  for (int s = 1 - warm_up; s <= steps; ++s) {
    if (train_set) {
      for (auto& i : indices) i = static_cast<std::uint32_t>(rng.below(train_set->size()));
      data::gather_batch(*train_set, indices, inputs.data(), labels.data());
    } else {
      for (auto& x : inputs) x = rng.normal();
      for (auto& y : labels) y = static_cast<std::int32_t>(rng.below(model.num_classes()));
    }
    const double start = core::thread_cpu_seconds();
    replica.gradient(inputs.data(), labels.data(), batch);
    replica.compute_update(0);
    replica.apply_update();
    if (s <= 0) continue;  // warm-up
    times.push_back(core::thread_cpu_seconds() - start);
    const auto update = replica.update();
    if (s > steps - keep) sample.updates.emplace_back(update.begin(), update.end());
  }
  std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2),
                   times.end());
  sample.compute_seconds = times[times.size() / 2];
  return sample;
}

}  // namespace gradshare::sim

// small_model.h: the model the simulator's tests run (a 128-128-4 MLP, fast to sample), and its
// sampled updates, measured once per test program.
#pragma once

#include "config/config_loader.h"
#include "sim/model_sample.h"

namespace gradshare::sim {

inline config::ExperimentConfig small_config() {
  return config::parse_experiment_text(
      "model:\n"
      "  input_shape: [128]\n"
      "  num_classes: 4\n"
      "  layers:\n"
      "    - {type: dense, units: 128, activation: relu}\n"
      "    - {type: dense, units: 4}\n"
      "training:\n"
      "  batch_size: 16\n",
      "small.yaml");
}

inline const ModelSample& small_sample() {
  static const ModelSample s = sample_model(small_config(), SampleData::kRandom, 1, 10, 8);
  return s;
}

}  // namespace gradshare::sim

// model_sample.h: the real model of an experiment, run for a few steps to give the simulator
// what a worker's step costs and what its updates look like.
//
// The model, optimizer and batch size come from the config (compute.threads as in a run). With
// the config's training data, the model first trains `warm_up` steps on it, so the updates kept
// have the magnitudes of a run in progress (they set how much of the encoder's work a message
// costs and how large it is). Without data (unit tests) the inputs are random values of the
// model's shape and the labels random classes. Time is this thread's CPU time.
#pragma once

#include <cstddef>
#include <vector>

#include "config/experiment_config.h"

namespace gradshare::sim {

struct ModelSample {
  std::size_t parameter_count = 0;
  double compute_seconds = 0;  // median CPU seconds of one step (forward, backward, optimizer)
  std::vector<std::vector<float>> updates;  // the optimizer's updates of the timed steps
};

enum class SampleData { kRandom, kConfigured };

// Trains warm_up (at least 1) untimed steps, then max(steps, 3) timed ones; keeps the last
// `keep` updates. kConfigured loads the training split (a data error: core::UserError).
ModelSample sample_model(const config::ExperimentConfig& config, SampleData data, int warm_up,
                         int steps, int keep);

}  // namespace gradshare::sim

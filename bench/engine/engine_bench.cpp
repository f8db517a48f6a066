// engine_bench.cpp: training throughput of the engine for experiment configs: one step is
// Model::train_batch + Optimizer::compute_update + apply_update, on random data with the
// config's model, optimizer and batch size, `--threads` BLAS threads (default 1).
// Timing: after warm-up, `--rounds` rounds of at least `--seconds` / rounds each; the best
// round is reported (the machine may be shared; the best round is the least disturbed).
//
//   engine_bench [--seconds S] [--rounds R] [--threads N] [--batch B] [CONFIG.yaml ...]
//
// Without configs it runs configs/fashion-mnist-mlp.yaml and configs/fashion-mnist-cnn.yaml.
// One line per config, key=value, e.g.
//   model=fashion-mnist-mlp batch=64 threads=1 samples_per_s=25000.0 step_ms=2.560
//   train_batch_ms=2.300 update_ms=0.230 apply_ms=0.030
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "config/config_loader.h"
#include "core/rng.h"
#include "core/timer.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "nn/threads.h"

namespace {

using namespace gradshare;

struct Options {
  double seconds = 5.0;
  int rounds = 5;
  int threads = 1;
  std::int64_t batch = 0;  // 0: the config's training.batch_size
  std::vector<std::string> configs;
};

struct Phases {
  double train = 0.0, update = 0.0, apply = 0.0;
  std::int64_t steps = 0;
  double total() const { return train + update + apply; }
};

[[noreturn]] void usage(const char* message) {
  std::fprintf(stderr,
               "engine_bench: %s\nusage: engine_bench [--seconds S] [--rounds R] [--threads N] "
               "[--batch B] [CONFIG.yaml ...]\n",
               message);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + arg).c_str());
      return argv[++i];
    };
    if (arg == "--seconds") {
      o.seconds = std::atof(value().c_str());
    } else if (arg == "--rounds") {
      o.rounds = std::atoi(value().c_str());
    } else if (arg == "--threads") {
      o.threads = std::atoi(value().c_str());
    } else if (arg == "--batch") {
      o.batch = std::atoll(value().c_str());
    } else if (!arg.empty() && arg[0] == '-') {
      usage(("unknown option " + arg).c_str());
    } else {
      o.configs.push_back(arg);
    }
  }
  if (o.seconds <= 0 || o.rounds < 1 || o.threads < 1 || o.batch < 0)
    usage("--seconds, --rounds, --threads must be positive and --batch >= 0");
  if (o.configs.empty()) {
    const std::string root = GRADSHARE_SOURCE_DIR;
    o.configs = {root + "/configs/fashion-mnist-mlp.yaml",
                 root + "/configs/fashion-mnist-cnn.yaml"};
  }
  return o;
}

void bench(const std::string& path, const Options& options) {
  const config::ExperimentConfig cfg = config::load_experiment(path);
  const auto batch =
      static_cast<std::size_t>(options.batch > 0 ? options.batch : cfg.training.batch_size);
  nn::Model model = nn::Model::build(cfg.model, static_cast<std::uint64_t>(cfg.run.seed));
  auto optimizer = nn::Optimizer::create(cfg.optimizer, model.parameter_count());
  std::vector<float> update(model.parameter_count());

  // 16 random batches, cycled.
  constexpr std::size_t kBatches = 16;
  core::Rng data_rng(1);
  std::vector<float> inputs(kBatches * batch * model.sample_size());
  for (float& v : inputs) v = data_rng.uniform(0.0f, 1.0f);
  std::vector<std::int32_t> labels(kBatches * batch);
  for (auto& l : labels) l = static_cast<std::int32_t>(data_rng.below(model.num_classes()));

  core::Rng rng(2);
  std::size_t next = 0;
  auto step = [&](Phases& phases) {
    const std::size_t b = next++ % kBatches;
    core::Stopwatch watch;
    model.train_batch(inputs.data() + b * batch * model.sample_size(), labels.data() + b * batch,
                      batch, rng);
    phases.train += watch.seconds();
    watch.restart();
    optimizer->compute_update(model.gradients(), model.parameters(), update,
                              cfg.optimizer.learning_rate);
    phases.update += watch.seconds();
    watch.restart();
    nn::apply_update(model.parameters(), update);
    phases.apply += watch.seconds();
    ++phases.steps;
  };

  Phases warmup;
  for (core::Stopwatch watch; warmup.steps < 5 || watch.seconds() < 0.3;) step(warmup);
  Phases best;
  for (int round = 0; round < options.rounds; ++round) {
    Phases phases;
    core::Stopwatch watch;
    while (watch.seconds() < options.seconds / options.rounds) step(phases);
    if (best.steps == 0 || phases.total() / phases.steps < best.total() / best.steps) best = phases;
  }
  const double per_step = best.total() / static_cast<double>(best.steps);
  std::printf(
      "model=%s batch=%zu threads=%d parameters=%zu samples_per_s=%.1f step_ms=%.3f "
      "train_batch_ms=%.3f update_ms=%.3f apply_ms=%.3f\n",
      std::filesystem::path(path).stem().string().c_str(), batch, nn::compute_threads(),
      model.parameter_count(), static_cast<double>(batch) / per_step, per_step * 1e3,
      best.train / best.steps * 1e3, best.update / best.steps * 1e3, best.apply / best.steps * 1e3);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  try {
    nn::set_compute_threads(options.threads);
    for (const std::string& path : options.configs) bench(path, options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "engine_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}

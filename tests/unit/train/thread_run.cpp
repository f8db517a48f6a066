// thread_run.cpp: the thread-test harness.
#include "thread_run.h"

#include <cmath>
#include <exception>
#include <thread>

#include "ckpt/checkpoint.h"
#include "comm/inproc/in_process_job.h"
#include "config/config_loader.h"
#include "core/rng.h"
#include "nn/model.h"
#include "report/evaluation.h"
#include "runtime/run_context.h"
#include "report/run_directory.h"
#include "comm/inproc/train/in_process_group_session.h"
#include "comm/inproc/train/in_process_sharing_session.h"
#include "train/strategy.h"

namespace gradshare::train::testing {

namespace {

data::Dataset blob_set(std::size_t samples, std::size_t features, core::Rng& rng) {
  data::Dataset set;
  set.sample_shape = {static_cast<std::int64_t>(features)};
  set.num_classes = 4;
  set.features.resize(samples * features);
  set.labels.resize(samples);
  for (std::size_t i = 0; i < samples; ++i) {
    const auto label = static_cast<std::int32_t>(rng.below(4));
    set.labels[i] = label;
    for (std::size_t f = 0; f < features; ++f) {
      // Class c sits at +4 on feature c and 0 elsewhere; unit noise (about 1 % of samples lie
      // nearer another class's centre).
      const float centre = f == static_cast<std::size_t>(label) ? 4.0f : 0.0f;
      set.features[i * features + f] = centre + rng.normal();
    }
  }
  return set;
}

}  // namespace

data::DataSplits blobs(std::size_t train, std::size_t test, std::size_t features,
                       std::uint64_t seed) {
  core::Rng rng(seed);
  data::DataSplits splits;
  splits.train = blob_set(train, features, rng);
  splits.test = blob_set(test, features, rng);
  return splits;
}

config::ExperimentConfig blobs_config(const std::string& strategy, const std::string& run_dir,
                                      const std::vector<std::string>& overrides) {
  const std::string yaml = "run: {name: threads, seed: 7, dir: " + run_dir +
                           "}\n"
                           "data: {dataset: fashion-mnist}\n"
                           "model:\n"
                           "  input_shape: [16]\n"
                           "  num_classes: 4\n"
                           "  layers:\n"
                           "    - {type: dense, units: 32, activation: relu}\n"
                           "    - {type: dense, units: 4}\n"
                           "optimizer: {type: adam, learning_rate: 0.01}\n"
                           "training: {strategy: " +
                           strategy +
                           ", epochs: 2, batch_size: 32}\n"
                           "transport: {timeout_ms: 60000}\n";
  return config::parse_experiment_text(yaml, "thread test config", overrides);
}

ThreadRun run_as_threads(const config::ExperimentConfig& config, const data::DataSplits& data,
                         int ranks, bool repairable) {
  ThreadRun run;
  run.run_dir = report::RunDirectory::choose_path(config.run);
  const std::string yaml = config::to_yaml(config);
  const report::RunDirectory directory = report::RunDirectory::create(run.run_dir, yaml);
  comm::InProcessJobHub hub(ranks, static_cast<double>(config.transport.timeout_ms) / 1000.0,
                            {repairable, static_cast<int>(config.fault_tolerance.spares)});
  run.exit_codes.assign(static_cast<std::size_t>(ranks), -1);
  run.errors.assign(static_cast<std::size_t>(ranks), "");
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        runtime::RunContext context;
        context.config = config;
        context.config_yaml = yaml;
        auto& job = hub.job(r);
        context.job = &job;
        context.links.sharing_session = [&job](runtime::RunContext& c) {
          return std::unique_ptr<SharingSession>(std::make_unique<InProcessSharingSession>(c, job));
        };
        context.links.group_session = [&job](runtime::RunContext& c) {
          return std::unique_ptr<GroupSession>(std::make_unique<InProcessGroupSession>(c, job));
        };
        context.rank = r;
        context.size = ranks;
        context.data = data;
        context.run_directory = report::RunDirectory::attach(run.run_dir);
        if (r == 0) context.metrics = report::MetricsLog(directory.file("metrics.jsonl"));
        context.phase = runtime::RunContext::kTraining;
        run.exit_codes[static_cast<std::size_t>(r)] = run_strategy(context);
      } catch (const comm::ThreadRankEnded&) {
        run.exit_codes[static_cast<std::size_t>(r)] = kEndedByFault;
        hub.fail(r);
      } catch (const std::exception& error) {
        run.errors[static_cast<std::size_t>(r)] = error.what();
      }
      if (r == 0) hub.release_spares();  // however the master ended
    });
  for (auto& thread : threads) thread.join();
  for (int r = 0; r < ranks; ++r) run.unreceived += hub.unreceived(r);
  return run;
}

double file_accuracy(const std::string& path, const config::ExperimentConfig& config,
                     const data::DataSplits& data) {
  const auto saved = ckpt::read_checkpoint(path);
  auto model = nn::Model::build(config.model, 1);
  std::copy(saved.parameters.begin(), saved.parameters.end(), model.parameters().begin());
  return report::evaluate(model, data.test).accuracy;
}

}  // namespace gradshare::train::testing

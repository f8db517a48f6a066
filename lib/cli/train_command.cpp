#include "cli/train_command.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "comm/mpi/mpi_job.h"
#include "comm/mpi/host_names.h"
#include "config/config_loader.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/stop_signal.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "data/sample_reader.h"
#include "nn/threads.h"
#include "nn/model.h"
#include "comm/mpi/repair.h"
#include "comm/mpi/ulfm.h"
#include "cli/banner.h"
#include "comm/mpi/train/mpi_sharing_session.h"
#include "comm/mpi/train/mpi_group_session.h"
#include "comm/mpi/train/replacement.h"
#include "train/gpu_binding.h"
#include "train/model_file.h"
#include "train/sharing/gradient_sharing.h"
#include "comm/mpi/train/job_failure.h"
#include "comm/mpi/mpi_session.h"
#include "train/normalization_message.h"
#include "train/peak_memory.h"
#include "cli/resume_config_check.h"
#include "train/run_lock.h"
#include "comm/mpi/train/startup_agreement.h"
#include "train/strategy.h"

namespace gradshare::cli {

using train::RunContext;
using train::check_strategy_fits;
using train::run_with_rollback;
using train::parse_normalization;
using train::serialize;
using train::RunLock;
using train::log_own_peak_memory;

namespace {

// checkpoint.resume naming a file: it must be a readable checkpoint of this model's size, found
// before the run directory is made (a bad path writes nothing). Returns the config it was
// written with.
std::string check_resume_file(const config::ExperimentConfig& config, const nn::Model& model) {
  const auto& resume = config.checkpoint.resume;
  ckpt::Checkpoint checkpoint;
  try {
    checkpoint = ckpt::read_checkpoint(resume);
  } catch (const core::UserError& error) {
    throw core::UserError(std::string("checkpoint.resume: ") + error.what());
  }
  train::check_checkpoint_matches(checkpoint, "checkpoint.resume: " + resume, model);
  return checkpoint.config_yaml;
}

// The master's checks of what this run resumes (checkpoint.resume): the file, and the config
// it was written with against this one (resume_config_check.h). Returns the lines to log.
std::vector<std::string> check_resume(const config::ExperimentConfig& config,
                                      const nn::Model& model, const std::string& run_path) {
  const auto& resume = config.checkpoint.resume;
  if (resume == "never") return {};
  if (resume != "auto")
    return check_resume_config(config, check_resume_file(config, model), resume);
  const auto previous = resumed_config_text(run_path);
  if (previous.empty()) return {};
  return check_resume_config(config, previous, run_path + "/config.yaml");
}

// The model must read what the data holds: same values per sample, enough classes.
void check_data_fits_model(const config::ExperimentConfig& config, const data::DataSplits& data) {
  std::int64_t per_sample = 1;
  std::string shape;
  for (auto d : config.model.input_shape) {
    per_sample *= d;
    shape += (shape.empty() ? "" : ", ") + std::to_string(d);
  }
  if (static_cast<std::size_t>(per_sample) != data.train.sample_size())
    throw core::UserError("model.input_shape [" + shape + "] has " + std::to_string(per_sample) +
                          " values per sample, but the training data has " +
                          std::to_string(data.train.sample_size()));
  if (config.model.num_classes < data.train.num_classes)
    throw core::UserError("model.num_classes is " + std::to_string(config.model.num_classes) +
                          " but the training labels have " + std::to_string(data.train.num_classes) +
                          " classes");
  if (data.train.size() == 0) throw core::UserError("the training set is empty");
}

// The resolved config's text and this process's settings from it (log level, BLAS threads).
void apply_config(RunContext& context) {
  context.config_yaml = config::to_yaml(context.config);
  core::Logger::instance().set_level(core::parse_log_level(context.config.logging.level));
  core::Logger::instance().set_progress_interval(context.config.logging.every_seconds);
  nn::set_compute_threads(static_cast<int>(context.config.compute.threads));
}

// The strategies' own traffic between MPI processes.
train::StrategyLinks mpi_links() {
  train::StrategyLinks links;
  links.sharing_session = [](RunContext& context) -> std::unique_ptr<train::SharingSession> {
    return std::make_unique<train::MpiSharingSession>(context);
  };
  links.group_session = [](RunContext& context) -> std::unique_ptr<train::GroupSession> {
    return std::make_unique<train::MpiGroupSession>(context);
  };
  return links;
}

// A process MPI_Comm_spawn started to replace a dead worker: joins the repaired job first (the
// survivors wait in the repair), then becomes that worker.
int run_replacement(const config::ExperimentConfig& config) {
  RunContext context;
  auto world = comm::MpiJob::world();
  context.job = &world;
  context.links = mpi_links();
  context.config = config;
  core::Logger::instance().set_terminal(false);
  apply_config(context);
  try {
    // A spawned replacement is local rank 0 of its own spawned job: it takes its node's first
    // GPU (compute.gpus[0]).
    train::bind_training_gpu(context.config, /*trains=*/true,
                             [](const char* name) { return std::getenv(name); });
    comm::RepairOptions options;
    options.deadline_seconds = static_cast<double>(config.transport.timeout_ms) / 1000.0;
    return run_replacement_worker(context, comm::join_spawned_job(options));
  } catch (const std::exception& error) {
    core::log_error(error.what());
    std::fprintf(stderr, "gradshare: error in the replacement of rank %d: %s\n", context.rank,
                 error.what());
    end_job(core::kExitRuntimeFailure,
            /*replaceable_worker=*/dynamic_cast<const core::JobCannotGoOn*>(&error) == nullptr);
  }
}

// The master's first lines: the banner, the hosts, the run directory, the resume notes and, when
// the training set stays on disk, how it is read.
void log_job(const RunContext& context, const std::vector<std::string>& hosts,
             const std::vector<int>& gpus, const std::string& run_path,
             const std::vector<std::string>& notes) {
  const std::string gpu_map = train::describe_gpu_map(hosts, gpus);
  core::log_info(banner(context) + "\nhosts " + comm::describe_hosts(hosts) +
                 (gpu_map.empty() ? "" : "\n" + gpu_map) + "\nrun directory " + run_path);
  for (const auto& note : notes) core::log_warn(note);
  if (const auto& reader = context.data.train.reader) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "data: the training set stays in %s (%zu samples, %.2f GB as floats); every "
                  "rank reads the minibatches it trains, 32 ahead in the background "
                  "(data.read %s)",
                  reader->path().c_str(), reader->size(),
                  4e-9 * static_cast<double>(reader->size() * reader->sample_size()),
                  context.config.data.read.c_str());
    core::log_info(line);
  }
}

// Where the master puts the run, and the lines it logs once its log file is open.
struct RunPlace {
  std::string path;
  std::vector<std::string> notes;
  std::unique_ptr<RunLock> lock;  // held by the master until the run ends
};

// Start-up phase: the config checked on every rank (and the resume on the master) before
// anything is written; under compute.device: cuda each rank that trains takes its GPU (`gpu`,
// -1 for none: the master of a multi-rank job trains nothing).
std::optional<int> check_config(StartupAgreement& startup, RunContext& context,
                                const config::ExperimentConfig& config, RunPlace& place,
                                int& gpu) {
  return startup.run("checking the config", [&] {
    context.config = config;
    if (context.size == 1 && context.config.training.strategy != "local") {
      // Without mpirun there is nobody to share with: train in this one process.
      context.config.training.strategy = "local";
    }
    check_strategy_fits(context.config, context.size);
    // Shape mismatches in model.layers are config errors: find them before anything is written.
    const auto model = train::build_model(context.config);
    if (context.is_master()) {
      place.path = report::RunDirectory::choose_path(context.config.run);
      place.notes = check_resume(context.config, model, place.path);
    }
    apply_config(context);
    gpu = train::bind_training_gpu(context.config, !(context.is_master() && context.size > 1),
                                   [](const char* name) { return std::getenv(name); });
  });
}

// Start-up phase: the data, before the run directory (bad data files leave nothing behind).
// Only the master evaluates: the other ranks leave the test and validation sets unread. Read by
// partitions, the master loads first: its streaming pass checks every training feature and
// fits the normalisation, which the others take instead of reading the whole file too.
std::optional<int> load_run_data(StartupAgreement& startup, RunContext& context) {
  const auto seed = static_cast<std::uint64_t>(context.config.run.seed);
  bool by_partitions = false;
  auto stop = startup.run("loading the data", [&] {
    by_partitions = data::reads_by_partitions(context.config.data);
    if (by_partitions && !context.is_master()) return;
    context.data =
        data::load_data(context.config.data, seed, /*evaluation_sets=*/context.is_master());
    check_data_fits_model(context.config, context.data);
  });
  if (stop || !by_partitions) return stop;
  const auto normalization = parse_normalization(startup.broadcast(
      context.is_master() ? serialize(context.data.normalization) : std::vector<std::uint8_t>{}));
  return startup.run("loading the data", [&] {
    if (context.is_master()) return;
    context.data = data::load_data(context.config.data, seed, false, normalization);
    check_data_fits_model(context.config, context.data);
  });
}

// Start-up phase: the master takes the run directory (its lock, metrics.jsonl); every rank
// then opens its log file there.
std::optional<int> open_run_directory(StartupAgreement& startup, RunContext& context,
                                      RunPlace& place) {
  auto stop = startup.run("creating the run directory", [&] {
    if (!context.is_master()) return;
    std::string took_over;
    place.lock = RunLock::acquire(place.path, &took_over);
    if (!took_over.empty()) place.notes.insert(place.notes.begin(), took_over);
    context.run_directory = report::RunDirectory::create(place.path, context.config_yaml);
    context.metrics = report::MetricsLog(context.run_directory.file("metrics.jsonl"));
  });
  if (stop) return stop;
  place.path = startup.broadcast(place.path);
  if (!context.is_master()) context.run_directory = report::RunDirectory::attach(place.path);
  auto& logger = core::Logger::instance();
  logger.set_tag(context.is_master() ? "master" : "rank " + std::to_string(context.rank));
  logger.open_file(context.run_directory.file("rank-" + std::to_string(context.rank) + ".log"));
  return std::nullopt;
}

// How the read-ahead served a rank that trained.
void log_read_ahead(const RunContext& context) {
  const auto stats =
      context.data.train.reader ? context.data.train.reader->stats() : data::ReadAheadStats{};
  if (stats.batches_ready + stats.batches_waited + stats.batches_missed == 0) return;
  char line[256];
  std::snprintf(line, sizeof line,
                "read ahead: %lld minibatches ready, %lld waited for (%.2f s), %lld read on "
                "the spot (%lld never queued)",
                static_cast<long long>(stats.batches_ready),
                static_cast<long long>(stats.batches_waited), stats.seconds_waited,
                static_cast<long long>(stats.batches_missed),
                static_cast<long long>(stats.batches_unqueued));
  core::log_info(line);
}

// Everything of `train` between MPI_Init and MPI_Finalize; returns the exit code.
int train_in_session(const config::ExperimentConfig& config, MpiSession& mpi) {
  core::install_stop_signal_handlers();
  if (comm::started_by_spawn()) {
    mpi.started();  // a spawned replacement: MPI_Init returned, the job runs
    return run_replacement(config);
  }
  RunContext context;
  auto world = comm::MpiJob::world();
  context.job = &world;
  context.links = mpi_links();
  context.rank = world.rank();
  context.size = world.size();
  core::Logger::instance().set_terminal(context.is_master());

  StartupAgreement startup(context);
  RunPlace place;
  int gpu = -1;
  auto stop = check_config(startup, context, config, place, gpu);
  mpi.started();
  if (!stop) stop = load_run_data(startup, context);
  if (!stop) stop = open_run_directory(startup, context, place);
  std::vector<std::string> hosts;
  std::vector<int> gpus;
  if (!stop)
    stop = startup.run("gathering host names", [&] {
      hosts = comm::gather_host_names(world.comm());
      for (const auto& label : comm::gather_labels(world.comm(), std::to_string(gpu)))
        gpus.push_back(std::stoi(label));
    });
  if (stop) return *stop;
  if (context.is_master()) log_job(context, hosts, gpus, place.path, place.notes);

  // Until the strategy has its communicators (it then sets RunContext::kTraining).
  context.phase = "setting up " + context.config.training.strategy;
  try {
    const int code = run_with_rollback(context);
    log_read_ahead(context);
    // The master's summary lists every rank's; each rank's own log has its figure too.
    if (!context.is_master()) log_own_peak_memory();
    return code;
  } catch (const std::exception& error) {
    return end_run_after(error, context);
  }
}

}  // namespace

int train_command(const std::string& config_path, const std::vector<std::string>& overrides) {
  // The config is read and validated before MPI starts, so a mistake costs no MPI start-up and
  // prints exactly one line.
  config::ExperimentConfig config;
  try {
    config = config::load_experiment(config_path, overrides);
  } catch (const core::UserError&) {
    if (launcher_rank() != 0) return core::kExitUserError;
    throw;
  }
  MpiSession mpi(static_cast<double>(config.transport.timeout_ms) / 1000.0);
  return mpi.leave_with(train_in_session(config, mpi));
}

}  // namespace gradshare::cli

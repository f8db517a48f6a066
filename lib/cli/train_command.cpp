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
#include "runtime/gpu_binding.h"
#include "runtime/model_file.h"
#include "train/sharing/gradient_sharing.h"
#include "comm/mpi/train/job_failure.h"
#include "comm/mpi/mpi_session.h"
#include "train/normalization_message.h"
#include "runtime/peak_memory.h"
#include "cli/resume_config_check.h"
#include "train/master_takeover.h"
#include "runtime/run_lock.h"
#include "comm/mpi/train/startup_agreement.h"
#include "comm/mpi/train/startup_repair.h"
#include "comm/mpi/mpi_error.h"
#include "ft/fault_injection.h"
#include "ft/recovery_report.h"
#include "train/strategy.h"

namespace gradshare::cli {

using runtime::RunContext;
using train::check_strategy_fits;
using train::run_with_rollback;
using train::parse_normalization;
using train::serialize;
using runtime::RunLock;
using runtime::log_own_peak_memory;

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
  runtime::check_checkpoint_matches(checkpoint, "checkpoint.resume: " + resume, model);
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

// The resolved config's text (as the user gave it: a start-up repair lowers the spares this
// process counts) and this process's settings from it (log level, BLAS threads).
void apply_config(RunContext& context, const config::ExperimentConfig& as_given) {
  context.config_yaml = config::to_yaml(as_given);
  core::Logger::instance().set_level(core::parse_log_level(context.config.logging.level));
  core::Logger::instance().set_progress_interval(context.config.logging.every_seconds);
  nn::set_compute_threads(static_cast<int>(context.config.compute.threads));
}

// The strategies' own traffic between MPI processes.
runtime::StrategyLinks mpi_links() {
  runtime::StrategyLinks links;
  links.sharing_session = [](RunContext& context) -> std::unique_ptr<train::SharingSession> {
    return std::make_unique<train::MpiSharingSession>(context);
  };
  links.group_session = [](RunContext& context) -> std::unique_ptr<train::GroupSession> {
    return std::make_unique<train::MpiGroupSession>(context);
  };
  return links;
}

// A process MPI_Comm_spawn started to replace a worker that died in training, once it joined
// the repaired job (`joined`): becomes that worker.
int run_replacement(const config::ExperimentConfig& config, comm::RepairedJob joined) {
  RunContext context;
  auto world = comm::MpiJob::world();
  context.job = &world;
  context.links = mpi_links();
  context.config = config;
  core::Logger::instance().set_terminal(false);
  apply_config(context, config);
  try {
    // A spawned replacement is local rank 0 of its own spawned job: it takes its node's first
    // GPU (compute.gpus[0]).
    runtime::bind_training_gpu(context.config, /*trains=*/true,
                               [](const char* name) { return std::getenv(name); });
    return run_replacement_worker(context, std::move(joined));
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
  const std::string gpu_map = runtime::describe_gpu_map(hosts, gpus);
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

// What a start-up keeps when a rank lost during it makes it run again (startup_repair.h): the
// master's run directory and the data every rank loaded stay in the RunContext.
struct Startup {
  comm::Communicator world;  // null: the world
  int spares = 0;            // how many of its last ranks wait as spares
  int attempt = 0;           // start-ups begun before this one
  std::string path;          // the master's run directory, once chosen
  std::vector<std::string> notes;  // the master's resume notes
  std::unique_ptr<RunLock> lock;   // held by the master from the run directory to the run's end
  std::vector<ft::RecoveryRecord> repairs;  // the master's, recorded once the run directory is open
  bool master_lost = false;  // the run directory's lock is a lost master's (startup_repair.h)
};

// Start-up phase: the config checked on every rank (and the resume on the master) before
// anything is written; under compute.device: cuda each rank that trains takes its GPU (`gpu`,
// -1 for none: the master of a multi-rank job trains nothing).
std::optional<int> check_config(StartupAgreement& startup, RunContext& context,
                                const config::ExperimentConfig& config, Startup& state, int& gpu) {
  return startup.run("config", "checking the config", [&] {
    context.config = config;
    context.config.fault_tolerance.spares = state.spares;
    if (context.size == 1 && context.config.training.strategy != "local") {
      // Without mpirun there is nobody to share with: train in this one process.
      context.config.training.strategy = "local";
    }
    check_strategy_fits(context.config, context.size);
    // Shape mismatches in model.layers are config errors: find them before anything is written.
    const auto model = runtime::build_model(context.config);
    if (context.is_master() && state.path.empty()) {
      state.path = report::RunDirectory::choose_path(context.config.run);
      state.notes = check_resume(context.config, model, state.path);
    }
    apply_config(context, config);
    gpu = runtime::bind_training_gpu(context.config, !(context.is_master() && context.size > 1),
                                     [](const char* name) { return std::getenv(name); });
  });
}

// Start-up phase: the data, before the run directory (bad data files leave nothing behind).
// Only the master evaluates: the other ranks leave the test and validation sets unread. Read by
// partitions, the master loads first: its streaming pass checks every training feature and
// fits the normalisation, which the others take instead of reading the whole file too. Data a
// rank loaded in a start-up that lost a rank stays loaded.
std::optional<int> load_run_data(StartupAgreement& startup, RunContext& context) {
  const auto seed = static_cast<std::uint64_t>(context.config.run.seed);
  // A worker that became the master after a repair has no evaluation sets yet.
  const bool loaded =
      context.data.train.size() > 0 && (!context.is_master() || context.data.test.size() > 0);
  bool by_partitions = false;
  auto stop = startup.run("data", "loading the data", [&] {
    by_partitions = data::reads_by_partitions(context.config.data);
    if (loaded || (by_partitions && !context.is_master())) return;
    context.data =
        data::load_data(context.config.data, seed, /*evaluation_sets=*/context.is_master());
    check_data_fits_model(context.config, context.data);
  });
  if (stop || !by_partitions) return stop;
  const auto normalization = parse_normalization(startup.broadcast(
      context.is_master() ? serialize(context.data.normalization) : std::vector<std::uint8_t>{}));
  return startup.run("data", "loading the data", [&] {
    if (loaded || context.is_master()) return;
    context.data = data::load_data(context.config.data, seed, false, normalization);
    check_data_fits_model(context.config, context.data);
  });
}

// Start-up phase: the master takes the run directory (its lock, metrics.jsonl) unless it has
// it from a start-up that lost a rank; every rank then opens its log file there.
std::optional<int> open_run_directory(StartupAgreement& startup, RunContext& context,
                                      Startup& state) {
  auto stop = startup.run("run_directory", "creating the run directory", [&] {
    if (!context.is_master() || state.lock) return;
    std::string took_over;
    state.lock = state.master_lost ? RunLock::take_from_lost_master(state.path)
                                   : RunLock::acquire(state.path, &took_over);
    if (!took_over.empty()) state.notes.insert(state.notes.begin(), took_over);
    context.run_directory = report::RunDirectory::create(state.path, context.config_yaml);
    context.metrics = report::MetricsLog(context.run_directory.file("metrics.jsonl"));
  });
  if (stop) return stop;
  const auto path = startup.broadcast(state.path);
  if (!context.is_master()) context.run_directory = report::RunDirectory::attach(path);
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

// One start-up on context.job and the training after it; returns the exit code. Throws
// comm::LostBeforeTraining, or a process failure before context.phase is kTraining, when a
// rank was lost during the start-up in a job that repairs it.
int start_and_train(const config::ExperimentConfig& config, MpiSession& mpi, RunContext& context,
                    Startup& state) {
  // Start-up faults are the first start-up's: a repaired one runs as if nothing happened.
  const ft::FaultInjector injector(config.fault_tolerance, context.rank,
                                   /*replacement=*/state.attempt > 0, context.end_rank_by_fault());
  StartupAgreement startup(context, injector, repairs_in_job(config));
  int gpu = -1;
  auto stop = check_config(startup, context, config, state, gpu);
  mpi.started();
  if (!stop) stop = load_run_data(startup, context);
  if (!stop) stop = open_run_directory(startup, context, state);
  std::vector<std::string> hosts;
  std::vector<int> gpus;
  if (!stop)
    stop = startup.run("hosts", "gathering host names", [&] {
      hosts = comm::gather_host_names(comm::mpi_comm(*context.job));
      for (const auto& label :
           comm::gather_labels(comm::mpi_comm(*context.job), std::to_string(gpu)))
        gpus.push_back(std::stoi(label));
    });
  if (stop) return *stop;
  if (context.is_master()) {
    log_job(context, hosts, gpus, state.path, state.notes);
    state.notes.clear();
    for (const auto& repair : state.repairs) ft::RecoveryLog(context.metrics).add(repair);
    state.repairs.clear();
  }
  // Until every rank is through the strategy's set-up (RunContext::begin_training).
  context.phase = "setting up " + context.config.training.strategy;
  injector.at_startup("setup");
  const int code = run_with_rollback(context);
  // The code the job ends with, for `gradshare run` when the launcher loses it (Open MPI
  // 5.0.7's prterun was seen to abort in its own teardown after the master had exited 75).
  if (context.is_master())
    context.metrics.write(report::JsonLine().add("kind", "exit").add("exit_code", code));
  log_read_ahead(context);
  // The master's summary lists every rank's; each rank's own log has its figure too.
  if (!context.is_master()) log_own_peak_memory();
  return code;
}

// Whether `error` is a rank lost during a start-up the job repairs: a process failure, or any
// other MPI error once ULFM knows a process of the job failed (a collective that met the
// failure may say no more than that it failed, as MPI_Win_allocate's MPI_ERR_WIN did).
bool lost_during_startup(const std::exception& error, const RunContext& context) {
  if (dynamic_cast<const comm::LostBeforeTraining*>(&error) != nullptr) return true;
  const auto* mpi = dynamic_cast<const comm::MpiError*>(&error);
  if (mpi == nullptr || context.phase == RunContext::kTraining || !repairs_in_job(context.config))
    return false;
  return mpi->is_process_failure() || !comm::failed_ranks(comm::mpi_comm(*context.job)).empty();
}

// After a rank was lost during the start-up: the repair (startup_repair.h), and on the master
// the line and the record it leaves. A start-up nothing repairs ends the job with one line.
void repair_lost_startup(const config::ExperimentConfig& config, RunContext& context,
                         Startup& state) {
  RepairedStartup repaired;
  try {
    repaired = repair_startup(comm::mpi_comm(*context.job), state.spares,
                              [&] { context.job->all_started(false); }, config);
  } catch (const MasterLostAtStartup& error) {
    end_job_in_turns(context, error.what());
  } catch (const std::exception& error) {
    end_job_said_by_master(context, error.what());
  }
  auto& what = repaired.record.resumed_from;
  what = "lost during start-up (at or before: " + context.phase + "); the start-up runs again";
  if (repaired.became_master) {
    what += " with " + train::new_master_name(repaired.former_rank) + " as the master";
    state.master_lost = true;
  }
  if (const int spares = repaired.spares_lost; spares > 0)
    what = std::to_string(spares) + (spares == 1 ? " spare " : " spares ") +
           (repaired.record.lost.empty() ? "" : "also ") + what;
  if (context.is_master() || repaired.became_master) state.repairs.push_back(repaired.record);
  state.world = std::move(repaired.world);
  state.spares = repaired.spares;
  ++state.attempt;
}

// Everything of `train` between MPI_Init and MPI_Finalize; returns the exit code.
int train_in_session(const config::ExperimentConfig& config, MpiSession& mpi) {
  core::install_stop_signal_handlers();
  Startup state;
  state.spares = static_cast<int>(config.fault_tolerance.spares);
  if (comm::started_by_spawn()) {
    mpi.started();  // a spawned replacement: MPI_Init returned, the job runs
    comm::RepairOptions options;
    options.deadline_seconds = static_cast<double>(config.transport.timeout_ms) / 1000.0;
    auto joined = comm::join_spawned_job(options);
    if (!spawned_into_startup(joined)) return run_replacement(config, std::move(joined));
    auto startup = startup_after_spawn(joined);
    state.world = std::move(startup.world);
    state.spares = startup.spares;
    state.attempt = 1;
  }
  RunContext context;
  context.links = mpi_links();
  for (;;) {
    // Twice the start-up deadline (mpi_session.h): see MpiJob.
    comm::MpiJob job(state.world.get_or_world(),
                     repairs_in_job(config)
                         ? std::optional(2e-3 * static_cast<double>(config.transport.timeout_ms))
                         : std::nullopt);
    context.job = &job;
    context.rank = job.rank();
    context.size = job.size();
    core::Logger::instance().set_terminal(context.is_master());
    try {
      return start_and_train(config, mpi, context, state);
    } catch (const std::exception& error) {
      if (!lost_during_startup(error, context)) return end_run_after(error, context);
    }
    repair_lost_startup(config, context, state);
  }
}

}  // namespace

int train_command(const std::string& config_path, const std::vector<std::string>& overrides) {
  // The config is read and validated before MPI starts, so a mistake costs no MPI start-up and
  // prints exactly one line.
  config::ExperimentConfig config;
  try {
    config = config::load_experiment(config_path, overrides);
    if (const char* injections = std::getenv("GRADSHARE_INJECT")) ft::parse_injections(injections);
  } catch (const core::UserError&) {
    if (launcher_rank() != 0) return core::kExitUserError;
    throw;
  }
  MpiSession mpi(static_cast<double>(config.transport.timeout_ms) / 1000.0);
  return mpi.leave_with(train_in_session(config, mpi));
}

}  // namespace gradshare::cli

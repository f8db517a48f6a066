#include "train/train_command.h"

#include <mpi.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <chrono>
#include <optional>
#include <thread>

#include "ckpt/checkpoint.h"
#include "comm/host_names.h"
#include "config/config_loader.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/stop_signal.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "kernels/cuda/device.h"
#include "nn/threads.h"
#include "nn/model.h"
#include "comm/repair.h"
#include "comm/ulfm.h"
#include "train/banner.h"
#include "train/gradient_sharing.h"
#include "train/strategy.h"

namespace gradshare::train {

namespace {

// True on every rank when `ok` is true on every rank: lets all ranks stop together after a
// failure on some of them, instead of the others hanging in the next collective.
bool all_ranks_ok(bool ok, MPI_Comm comm) {
  int local = ok ? 1 : 0;
  int global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MIN, comm);
  return global == 1;
}

// Runs `phase` on this rank; returns the error to report if it failed here.
template <typename Phase>
std::optional<std::pair<int, std::string>> attempt(Phase&& phase) {
  try {
    phase();
    return std::nullopt;
  } catch (const core::UserError& error) {
    return std::make_pair(int{core::kExitUserError}, std::string(error.what()));
  } catch (const std::exception& error) {
    return std::make_pair(int{core::kExitRuntimeFailure}, std::string(error.what()));
  }
}

std::string broadcast_string(std::string text, MPI_Comm comm) {
  int length = static_cast<int>(text.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, comm);
  text.resize(static_cast<std::size_t>(length));
  MPI_Bcast(text.data(), length, MPI_CHAR, 0, comm);
  return text;
}

// Agrees on the outcome of a phase; on failure every rank returns the exit code, and the
// lowest failing rank's message is printed once.
std::optional<int> settle(const std::optional<std::pair<int, std::string>>& failure, MPI_Comm comm,
                          int rank) {
  if (all_ranks_ok(!failure.has_value(), comm)) return std::nullopt;
  int candidate = failure ? rank : 1 << 30;
  int reporter = 0;
  MPI_Allreduce(&candidate, &reporter, 1, MPI_INT, MPI_MIN, comm);
  if (rank == reporter) std::fprintf(stderr, "gradshare: error: %s\n", failure->second.c_str());
  int code = failure ? failure->first : 0;
  int worst = 0;
  MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, comm);
  return worst;
}

// checkpoint.resume naming a file: it must be a readable checkpoint of this model's size, found
// before the run directory is made (a bad path writes nothing).
void check_resume_file(const config::ExperimentConfig& config, std::size_t parameter_count) {
  const auto& resume = config.checkpoint.resume;
  if (resume == "auto" || resume == "never") return;
  ckpt::Checkpoint checkpoint;
  try {
    checkpoint = ckpt::read_checkpoint(resume);
  } catch (const core::UserError& error) {
    throw core::UserError(std::string("checkpoint.resume: ") + error.what());
  }
  if (checkpoint.parameters.size() != parameter_count)
    throw core::UserError("checkpoint.resume: " + resume + " holds " +
                          std::to_string(checkpoint.parameters.size()) +
                          " parameters, the model of this config has " +
                          std::to_string(parameter_count));
}

// compute.device: the CUDA kernels exist (kernels/cuda) but training does not run on them yet.
void check_compute_device(const config::ComputeConfig& compute) {
  if (compute.device == "cuda") {
    kernels::cuda::require_cuda_device();  // says clearly when there is no GPU or no CUDA build
    throw core::UserError("compute.device is cuda: training on the GPU is not available in this "
                          "version yet (the CUDA kernels are built and tested against the CPU); "
                          "use compute.device: cpu");
  }
  if (compute.device == "auto" && kernels::cuda::gpu_available())
    core::log_info("compute.device auto: a GPU is visible, but training runs on the CPU in this version");
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

class MpiSession {
 public:
  MpiSession() {
    // MULTIPLE: under fault tolerance a watchdog thread may revoke a communicator whose repair
    // hangs (comm/repair.cpp); everything else stays on the main thread.
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  // The run's exit code, for the finalize deadline below; returns it.
  int leave_with(int code) {
    exit_code_ = code;
    return code;
  }
  ~MpiSession() {
    if (comm::fault_tolerance_active()) {
      // Under ULFM, Open MPI 5.0.7 sometimes never returns from MPI_Finalize after processes
      // failed and were replaced (every rank waiting in it, the run's results written). Leave
      // with the run's code after a deadline instead of hanging the job.
      std::thread([code = exit_code_] {
        std::this_thread::sleep_for(std::chrono::seconds(kFinalizeDeadlineSeconds));
        std::fprintf(stderr, "gradshare: MPI_Finalize did not return within %d s; exiting with %d\n",
                     kFinalizeDeadlineSeconds, code);
        std::fflush(nullptr);
        std::_Exit(code);
      }).detach();
    }
    MPI_Finalize();
  }

 private:
  static constexpr int kFinalizeDeadlineSeconds = 30;
  int exit_code_ = core::kExitRuntimeFailure;  // an exception left the run
};

}  // namespace

namespace {
// This process's rank as the launcher announces it, before MPI_Init (0 when not launched by
// mpirun or srun): lets only rank 0 print a config error that every rank finds alike.
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* value = std::getenv(name)) return std::atoi(value);
  return 0;
}
// A failure in the middle of training leaves the peers waiting on this rank: end the job.
// Under fault tolerance Open MPI neither ends the job on MPI_Abort nor reports a process that
// exits without MPI_Finalize, but it does report one killed by a signal: the others then see
// the failure (and end the job or, for a worker, replace it) instead of waiting for it.
[[noreturn]] void end_job(int code) {
  if (comm::fault_tolerance_active()) {
    std::fflush(nullptr);
    std::raise(SIGKILL);
  }
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

// The resolved config's text and this process's settings from it (log level, BLAS threads).
void apply_config(RunContext& context) {
  context.config_yaml = config::to_yaml(context.config);
  core::Logger::instance().set_level(core::parse_log_level(context.config.logging.level));
  nn::set_compute_threads(static_cast<int>(context.config.compute.threads));
}

// A process MPI_Comm_spawn started to replace a dead worker: joins the repaired job first (the
// survivors wait in the repair), then becomes that worker.
int run_replacement(const config::ExperimentConfig& config, MPI_Comm parent) {
  RunContext context;
  context.config = config;
  core::Logger::instance().set_terminal(false);
  apply_config(context);
  try {
    comm::RepairOptions options;
    options.deadline_seconds = static_cast<double>(config.transport.timeout_ms) / 1000.0;
    return run_sharing_replacement(context, comm::join_spawned_job(parent, options));
  } catch (const std::exception& error) {
    core::log_error(error.what());
    std::fprintf(stderr, "gradshare: error in the replacement of rank %d: %s\n", context.rank,
                 error.what());
    end_job(core::kExitRuntimeFailure);
    return core::kExitRuntimeFailure;
  }
}

// Everything of `train` between MPI_Init and MPI_Finalize; returns the exit code.
int train_in_session(const config::ExperimentConfig& config) {
  core::install_stop_signal_handlers();
  RunContext context;
  MPI_Comm parent = MPI_COMM_NULL;
  MPI_Comm_get_parent(&parent);
  if (parent != MPI_COMM_NULL) return run_replacement(config, parent);
  MPI_Comm_rank(MPI_COMM_WORLD, &context.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &context.size);
  auto& logger = core::Logger::instance();
  logger.set_terminal(context.is_master());

  auto failure = attempt([&] {
    context.config = config;
    if (context.size == 1 && context.config.training.strategy != "local") {
      // Without mpirun there is nobody to share with: train in this one process.
      context.config.training.strategy = "local";
    }
    check_strategy_fits(context.config, context.size);
    // Shape mismatches in model.layers are config errors: find them before anything is written.
    const auto model =
        nn::Model::build(context.config.model, static_cast<std::uint64_t>(context.config.run.seed));
    if (context.is_master()) check_resume_file(context.config, model.parameter_count());
    apply_config(context);
    check_compute_device(context.config.compute);
  });
  if (auto code = settle(failure, MPI_COMM_WORLD, context.rank)) return *code;

  // Data before the run directory: bad data files leave nothing behind.
  failure = attempt([&] {
    context.data = data::load_data(context.config.data, static_cast<std::uint64_t>(context.config.run.seed));
    check_data_fits_model(context.config, context.data);
  });
  if (auto code = settle(failure, MPI_COMM_WORLD, context.rank)) return *code;

  std::string run_path;
  failure = attempt([&] {
    if (!context.is_master()) return;
    run_path = RunDirectory::choose_path(context.config.run);
    context.run_directory = RunDirectory::create(run_path, context.config_yaml);
    context.metrics = MetricsLog(context.run_directory.file("metrics.jsonl"));
  });
  if (auto code = settle(failure, MPI_COMM_WORLD, context.rank)) return *code;
  run_path = broadcast_string(run_path, MPI_COMM_WORLD);
  if (!context.is_master()) context.run_directory = RunDirectory::attach(run_path);
  logger.set_tag(context.is_master() ? "master" : "rank " + std::to_string(context.rank));
  logger.open_file(context.run_directory.file("rank-" + std::to_string(context.rank) + ".log"));
  const auto hosts = comm::gather_host_names(MPI_COMM_WORLD);
  if (context.is_master())
    core::log_info(banner(context) + "\nhosts " + comm::describe_hosts(hosts) +
                   "\nrun directory " + run_path);

  try {
    return run_with_rollback(context);
  } catch (const std::exception& error) {
    const bool user = dynamic_cast<const core::UserError*>(&error) != nullptr;
    core::log_error(error.what());
    std::fprintf(stderr, "gradshare: error on rank %d: %s\n", context.rank, error.what());
    const int code = user ? core::kExitUserError : core::kExitRuntimeFailure;
    if (context.size > 1) end_job(code);
    return code;
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
  MpiSession mpi;
  return mpi.leave_with(train_in_session(config));
}

}  // namespace gradshare::train

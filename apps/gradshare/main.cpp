// main.cpp: the gradshare command line. Parses the subcommand and hands over to the library;
// turns errors into one line on stderr and the documented exit codes:
//   0 success, 1 runtime failure, 2 user error, 75 stopped on a signal after checkpointing.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"   // read_checkpoint, skip_hdf5_exit_cleanup
#include "ckpt/describe.h"     // describe
#include "config/config_loader.h"  // load_experiment, to_yaml, keys_listing, reference_markdown
#include "core/errors.h"       // UserError, exit codes
#include "export/onnx_export.h"  // export_command
#include "report/report_command.h"  // report_command
#include "sim/simulate_command.h"  // simulate_command
#include "supervise/supervisor.h"  // run_command
#include "topology/render.h"   // render
#include "topology/tree.h"     // build_plain, build_mesh
#include "cli/banner.h"      // version_text
#include "cli/eval_command.h"
#include "cli/train_command.h"

namespace {

using gradshare::core::UserError;

const char* kUsage =
    "usage: gradshare <command> [arguments]\n"
    "\n"
    "commands:\n"
    "  train CONFIG.yaml [key.path=value ...]   train (under mpirun: rank 0 master, others workers)\n"
    "  run [--max-restarts K] -- COMMAND ...    run COMMAND (mpirun ... gradshare train ...), restart\n"
    "                                           it after a crash, resuming its run.dir\n"
    "  eval MODEL.h5 [--data DIR] [key.path=value ...]\n"
    "                                           test accuracy and confusion matrix of a model\n"
    "  inspect CHECKPOINT.h5                    metadata and tensor shapes of a checkpoint\n"
    "  export MODEL.h5 -o OUT.onnx [key.path=value ...]\n"
    "                                           the model as ONNX, its normalisation in the metadata\n"
    "  config CONFIG.yaml [key.path=value ...]  validate and print the fully resolved config\n"
    "  config --keys | --reference              every key (text | markdown reference)\n"
    "  topology --ranks N [--mode plain|mesh] [--max-children 8] [--max-depth 5]\n"
    "                                           print the communication tree of a job\n"
    "  report RUN_DIR [RUN_DIR ...] [-o OUT.html]\n"
    "                                           HTML report of runs (charts, workers, config), PNGs\n"
    "  simulate CONFIG.yaml [--workers 8,...,32768] [--link 1gbit] [--topology plain,mesh] ...\n"
    "                                           project gradient sharing to many workers\n"
    "  simulate --validate RUN_DIR [--link R] [--link-burst tbf] [--nodes K] [--cores C]\n"
    "                                           check the simulator against a real run\n"
    "  --version                                gradshare, MPI library, ULFM and CUDA support\n"
    "  <command> --help                         help on one command\n"
    "\n"
    "exit codes: 0 success, 1 runtime failure, 2 user error (config, path, arguments),\n"
    "            75 stopped on SIGTERM/SIGUSR1 after checkpointing (requeue the job)\n";

bool wants_help(const std::vector<std::string>& args) {
  for (const auto& arg : args)
    if (arg == "--help" || arg == "-h") return true;
  return false;
}

// Splits arguments into one positional path and key.path=value overrides; rejects unknown flags.
std::string take_path(const std::vector<std::string>& args, const std::string& command,
                      std::vector<std::string>& overrides) {
  std::string path;
  for (const auto& arg : args) {
    if (arg.rfind("--", 0) == 0) throw UserError(command + ": unknown option '" + arg + "'");
    if (path.empty() && arg.find('=') == std::string::npos) {
      path = arg;
    } else {
      overrides.push_back(arg);
    }
  }
  if (path.empty()) throw UserError(command + ": missing file argument (see gradshare " + command + " --help)");
  return path;
}

// Removes every `flag VALUE` pair from args; returns the last VALUE ("" when the flag is absent).
std::string take_option(std::vector<std::string>& args, const std::string& flag,
                        const std::string& command) {
  std::string value;
  for (std::size_t i = 0; i < args.size();) {
    if (args[i] != flag) {
      ++i;
      continue;
    }
    if (i + 1 >= args.size()) throw UserError(command + ": " + flag + " needs a value");
    value = args[i + 1];
    args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
  }
  return value;
}

int command_train(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::printf(
        "usage: gradshare train CONFIG.yaml [key.path=value ...]\n"
        "  Without mpirun: trains in this one process (strategy local).\n"
        "  Under mpirun -n N: rank 0 is the master, ranks 1..N-1 are workers.\n"
        "  Overrides use YAML flow syntax for lists and maps, e.g. model.input_shape=[1,28,28].\n"
        "  Writes runs/<run.name>-<timestamp>/ (config.yaml, metrics.jsonl, rank logs, model.h5).\n");
    return 0;
  }
  std::vector<std::string> overrides;
  const std::string path = take_path(args, "train", overrides);
  return gradshare::cli::train_command(path, overrides);
}

int command_eval(std::vector<std::string> args) {
  if (wants_help(args)) {
    std::printf(
        "usage: gradshare eval MODEL.h5 [--data DIR] [--predictions FILE] [key.path=value ...]\n"
        "  Evaluates a model or checkpoint on the test set of its stored config; --data DIR\n"
        "  reads the Fashion-MNIST IDX files from DIR; data.* overrides choose other data.\n"
        "  --predictions FILE writes the predicted class of each test sample, one per line.\n");
    return 0;
  }
  const std::string predictions = take_option(args, "--predictions", "eval");
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--data") {
      if (i + 1 >= args.size()) throw UserError("eval: --data needs a directory");
      args[i] = "data.dir=" + args[i + 1];
      args.erase(args.begin() + static_cast<long>(i) + 1);
    }
  }
  std::vector<std::string> overrides;
  const std::string path = take_path(args, "eval", overrides);
  return gradshare::cli::eval_command(path, overrides, predictions);
}

int command_inspect(const std::vector<std::string>& args) {
  if (wants_help(args) || args.size() != 1) {
    if (!wants_help(args)) throw UserError("inspect: expected exactly one checkpoint path");
    std::printf("usage: gradshare inspect CHECKPOINT.h5\n  Prints metadata and tensor shapes.\n");
    return 0;
  }
  const auto checkpoint = gradshare::ckpt::read_checkpoint(args[0]);
  std::printf("%s", gradshare::ckpt::describe(args[0], checkpoint).c_str());
  return 0;
}

int command_export(std::vector<std::string> args) {
  if (wants_help(args)) {
    std::printf(
        "usage: gradshare export MODEL.h5 -o OUT.onnx [key.path=value ...]\n"
        "  Writes the model or checkpoint as an ONNX model (opset 13): input \"input\" [batch,\n"
        "  model.input_shape] of normalised features, output \"probabilities\" [batch, classes].\n"
        "  metadata_props record the normalisation (x - normalize_offset) * normalize_scale,\n"
        "  fitted again on the training data of the stored config (data.dir=DIR if it moved),\n"
        "  the input shape, the class labels and the gradshare version.\n");
    return 0;
  }
  const std::string output = take_option(args, "-o", "export");
  if (output.empty()) throw UserError("export: missing -o OUT.onnx (see gradshare export --help)");
  std::vector<std::string> overrides;
  const std::string path = take_path(args, "export", overrides);
  return gradshare::onnx::export_command(path, output, overrides);
}

int command_config(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::printf(
        "usage: gradshare config CONFIG.yaml [key.path=value ...]\n"
        "       gradshare config --keys        every key with type, default and allowed values\n"
        "       gradshare config --reference   the same as markdown (docs/config-reference.md)\n");
    return 0;
  }
  if (args.size() == 1 && args[0] == "--keys") {
    std::printf("%s", gradshare::config::keys_listing().c_str());
    return 0;
  }
  if (args.size() == 1 && args[0] == "--reference") {
    std::printf("%s", gradshare::config::reference_markdown().c_str());
    return 0;
  }
  std::vector<std::string> overrides;
  const std::string path = take_path(args, "config", overrides);
  const auto config = gradshare::config::load_experiment(path, overrides);
  std::printf("%s", gradshare::config::to_yaml(config).c_str());
  return 0;
}

int command_run(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::printf(
        "usage: gradshare run [--max-restarts 3] [--backoff 5] [--max-backoff 300]\n"
        "                     [--hang-seconds 60] -- COMMAND ...\n"
        "  Runs COMMAND, e.g. mpirun -n 5 gradshare train CONFIG.yaml run.dir=runs/x, and restarts\n"
        "  it when it crashes (a lost master, a killed rank, an MPI failure): after --backoff\n"
        "  seconds, doubled for each further restart up to --max-backoff, at most --max-restarts\n"
        "  times. Each restart resumes run.dir from its newest good checkpoint and adds a\n"
        "  \"restart\" record to its metrics.jsonl. Not restarted: success, bad input (exit 2),\n"
        "  divergence (3), and a stop signal (75, passed on to COMMAND: requeue the job).\n"
        "  COMMAND still running --hang-seconds after every process it started has ended (an\n"
        "  mpirun hang) is killed and counts as a crash.\n");
    return args.empty() ? gradshare::core::kExitUserError : 0;
  }
  return gradshare::supervise::run_command(args);
}

int command_report(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::printf(
        "usage: gradshare report RUN_DIR [RUN_DIR ...] [-o OUT.html]\n"
        "  Writes one self-contained HTML page (default RUN_DIR/report.html of the first run):\n"
        "  loss and accuracy against time and step, samples/s, tau range, sparsity, bytes per\n"
        "  worker per step, staleness and back-pressure with the runs' events (checkpoints,\n"
        "  recoveries, resizes, resumes, stops) on the time axis, a per-worker table, the\n"
        "  encoding_debug records per worker and the resolved config. Several runs are overlaid,\n"
        "  one colour each. Every chart is also written as a PNG beside it (OUT-<chart>.png).\n");
    return 0;
  }
  return gradshare::report::report_command(args);
}

int command_simulate(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::printf(
        "usage: gradshare simulate CONFIG.yaml [options] [key.path=value ...]\n"
        "       gradshare simulate --validate RUN_DIR [--link R] [--link-burst B] [--nodes K]\n"
        "                                                  [--cores C]\n"
        "  Projects asynchronous gradient sharing of CONFIG's model to many workers: time per\n"
        "  step, efficiency, master and relay copies per step, bytes on the busiest link, and\n"
        "  the worker count where each tree saturates (each worker under half a lone worker's\n"
        "  speed). Small sizes run the real codec, update exchange and relay in virtual time;\n"
        "  the flow model carries their measured costs to the large ones. One process, no MPI.\n"
        "  --workers LIST       worker counts (default 8,32,128,512,2048,8192,32768)\n"
        "  --topology LIST      plain, mesh (default plain,mesh) and aggregate: the mesh's tree\n"
        "                       whose ranks each send a link one message per step for all\n"
        "                       they owe it (training: topology.aggregate)\n"
        "  --aggregate-wait MS  aggregate: longest a link's content waits for a quiet source\n"
        "                       (default 20)\n"
        "  --link RATE          each node's link, each direction: 100mbit, 1gbit (default),\n"
        "                       10gbit, unlimited\n"
        "  --link-burst B       bytes a quiet link lets through at once, as a token bucket\n"
        "                       does; tbf: scripts/cluster-local's qdiscs (default 0: a wire)\n"
        "  --message-overhead B wire bytes per message beyond the payload (default 64)\n"
        "  --max-children K     mesh fan-out (default: the config's topology.max_children)\n"
        "  --nodes K            ranks placed by node on K nodes (default: a node per rank)\n"
        "  --cores C            every rank shares C cores (default: a core per rank)\n"
        "  --steps S            simulated steps per worker (default 40)\n"
        "  --events-up-to N     run the event simulation up to N workers (default 64)\n"
        "  --step-overhead MS   CPU per worker step beyond compute, encode and the exchange\n"
        "                       (MPI progress, TCP stack, batches; default 0.5, measured on\n"
        "                       the emulated cluster)\n"
        "  --csv FILE           also write the table as CSV\n"
        "  --validate RUN_DIR   compare with a finished gradient-sharing run: every rank's bytes\n"
        "                       sent and received (exact) and the time per step, steady and\n"
        "                       with the run's checkpoint collections\n");
    return 0;
  }
  return gradshare::sim::simulate_command(args);
}

long parse_count(const std::string& flag, const std::string& value) {
  char* end = nullptr;
  const long number = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || number < 1)
    throw UserError("topology: " + flag + " needs a positive integer, got '" + value + "'");
  return number;
}

int command_topology(const std::vector<std::string>& args) {
  if (wants_help(args)) {
    std::printf(
        "usage: gradshare topology --ranks N [--mode plain|mesh] [--max-children 8] [--max-depth 5]\n"
        "  Prints the tree a job of N ranks (1 master + N-1 workers) would use.\n");
    return 0;
  }
  long ranks = 0, max_children = 8, max_depth = 5;
  std::string mode = "mesh";
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (i + 1 >= args.size()) throw UserError("topology: " + flag + " needs a value");
    const std::string& value = args[++i];
    if (flag == "--ranks") ranks = parse_count(flag, value);
    else if (flag == "--max-children") max_children = parse_count(flag, value);
    else if (flag == "--max-depth") max_depth = parse_count(flag, value);
    else if (flag == "--mode") mode = value;
    else throw UserError("topology: unknown option '" + flag + "'");
  }
  if (ranks < 1) throw UserError("topology: --ranks N is required");
  if (mode != "plain" && mode != "mesh")
    throw UserError("topology: --mode must be plain or mesh, got '" + mode + "'");
  const auto tree = mode == "plain"
                        ? gradshare::topology::build_plain(static_cast<int>(ranks))
                        : gradshare::topology::build_mesh(static_cast<int>(ranks),
                                                          static_cast<int>(max_children),
                                                          static_cast<int>(max_depth));
  std::printf("%s", gradshare::topology::render(tree).c_str());
  return 0;
}

int dispatch(const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0] == "--help" || argv[0] == "-h" || argv[0] == "help") {
    std::printf("%s", kUsage);
    return argv.empty() ? gradshare::core::kExitUserError : 0;
  }
  if (argv[0] == "--version") {
    std::printf("%s", gradshare::cli::version_text().c_str());
    return 0;
  }
  const std::string command = argv[0];
  const std::vector<std::string> args(argv.begin() + 1, argv.end());
  if (command == "train") return command_train(args);
  if (command == "run") return command_run(args);
  if (command == "eval") return command_eval(args);
  if (command == "inspect") return command_inspect(args);
  if (command == "export") return command_export(args);
  if (command == "config") return command_config(args);
  if (command == "topology") return command_topology(args);
  if (command == "report") return command_report(args);
  if (command == "simulate") return command_simulate(args);
  throw UserError("unknown command '" + command +
                  "' (commands: train, run, eval, inspect, export, config, topology, report, "
                  "simulate)");
}

}  // namespace

int main(int argc, char** argv) {
  gradshare::ckpt::skip_hdf5_exit_cleanup();
  // A rank killed on another node closes its TCP connections: a write to one must come back
  // from MPI as an error (ULFM reports the failure), not as a SIGPIPE that ends this process
  // silently inside MPI.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return dispatch(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const UserError& error) {
    std::fprintf(stderr, "gradshare: error: %s\n", error.what());
    return gradshare::core::kExitUserError;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gradshare: failed: %s\n", error.what());
    return gradshare::core::kExitRuntimeFailure;
  }
}

// malformed_configs_test.cpp: the table of malformed configs and command lines. Each case is
// checked in process (exact message class, line, one line) and, when the gradshare binary is
// built, end to end: `gradshare config` and `gradshare train` exit 2 with one line on stderr
// and write nothing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config_loader.h"
#include "core/errors.h"
#include "temp_dir.h"

extern char** environ;

namespace gradshare::config {
namespace {

enum class Input { kText, kMissing, kDirectory };

struct MalformedCase {
  std::string name;
  std::string yaml;
  std::vector<std::string> overrides;
  std::string expected;  // substring of the message
  int line;              // line in the message's FILE:LINE:COL, 0 when it has none
  Input input = Input::kText;
};

const std::vector<MalformedCase>& cases() {
  static const std::vector<MalformedCase> table = {
      // Unknown names.
      {"UnknownKey",
       "run:\n  name: x\noptimizer:\n  learning_rat: 0.1\n",
       {},
       "unknown key 'learning_rat' in 'optimizer' (did you mean 'learning_rate'?)",
       4},
      {"UnknownSection",
       "training:\n  epochs: 2\noptimiser:\n  type: sgd\n",
       {},
       "unknown section 'optimiser' (did you mean 'optimizer'?)",
       3},
      {"UnknownKeyNoSuggestion",
       "training:\n  bananas: 1\n",
       {},
       "unknown key 'bananas' in 'training'",
       2},
      {"KeyOfOtherSection",
       "optimizer:\n  epochs: 3\n",
       {},
       "unknown key 'epochs' in 'optimizer' (did you mean 'training.epochs'?)",
       2},
      // Types.
      {"IntegerGotWord",
       "training:\n  batch_size: 32\n  epochs: ten\n",
       {},
       "'training.epochs' must be an integer, got 'ten'",
       3},
      {"IntegerGotDecimal",
       "training:\n  epochs: 2.5\n",
       {},
       "'training.epochs' must be an integer, got '2.5'",
       2},
      {"IntegerGotNothing",
       "training:\n  epochs:\n",
       {},
       "'training.epochs' must be an integer, got nothing",
       2},
      {"NumberGotWord",
       "optimizer:\n  learning_rate: fast\n",
       {},
       "'optimizer.learning_rate' must be a number, got 'fast'",
       2},
      {"NumberGotNan",
       "optimizer:\n  learning_rate: nan\n",
       {},
       "'optimizer.learning_rate' must be a number, got 'nan'",
       2},
      {"BoolGotWord",
       "data:\n  shuffle: maybe\n",
       {},
       "'data.shuffle' must be true or false, got 'maybe'",
       2},
      {"StringGotMap", "run:\n  name: {a: 1}\n", {}, "'run.name' must be a string, got a map", 2},
      {"ListGotScalar",
       "model:\n  input_shape: 784\n",
       {},
       "'model.input_shape' must be a list of integers, got '784'",
       2},
      // Ranges and choices.
      {"OutOfRange",
       "optimizer:\n  type: sgd\n  learning_rate: 500\n",
       {},
       "'optimizer.learning_rate' must be in [0, 100], got 500",
       3},
      {"IntegerBelowRange",
       "training:\n  batch_size: 0\n",
       {},
       "'training.batch_size' must be in [1, 1000000], got 0",
       2},
      {"IntegerOverflow",
       "training:\n  epochs: 99999999999999999999\n",
       {},
       "'training.epochs' must be in [1, 1000000], got 99999999999999999999",
       2},
      {"ListElementOutOfRange",
       "model:\n  input_shape: [1, 0, 28]\n",
       {},
       "'model.input_shape[1]' must be in [1, 1000000], got 0",
       2},
      {"BadChoice",
       "optimizer:\n  type: adamm\n",
       {},
       "'optimizer.type' must be one of sgd, momentum, nesterov, adam, adamw, rmsprop, adagrad, "
       "got 'adamm'",
       2},
      // Structure.
      {"DuplicateKey",
       "training:\n  epochs: 3\n  epochs: 4\n",
       {},
       "duplicate key 'epochs' in 'training'",
       3},
      {"DuplicateSection",
       "training:\n  epochs: 3\nrun:\n  seed: 1\ntraining:\n  batch_size: 8\n",
       {},
       "duplicate section 'training'",
       5},
      {"YamlSyntax",
       "training:\n  epochs: 3\nmodel:\n  input_shape: [1, 28\n",
       {},
       "YAML syntax error: ",
       5},
      {"BadIndentation", "training:\n  epochs: 3\n batch_size: 4\n", {}, "YAML syntax error: ", 3},
      {"TopLevelList",
       "- training\n- model\n",
       {},
       "expected a YAML map of sections (run:, data:, model:, ...) at the top level, got a list",
       1},
      {"TopLevelScalar", "hello\n", {}, "at the top level, got 'hello'", 1},
      {"SectionNotMap",
       "training: 5\n",
       {},
       "section 'training' must be a map of keys, got '5'",
       1},
      {"TwoDocuments",
       "training:\n  epochs: 3\n---\nrun:\n  seed: 1\n",
       {},
       "expected one YAML document, found 2",
       4},
      {"EmptyFile", "", {}, "empty config (expected a YAML map of sections)", 0},
      {"OnlyComments",
       "# nothing here\n\n",
       {},
       "empty config (expected a YAML map of sections)",
       0},
      {"MissingFile", "", {}, "missing.yaml: no such file", 0, Input::kMissing},
      {"Directory", "", {}, ": is a directory", 0, Input::kDirectory},
      // Layer and fault entries.
      {"LayerUnknownKey",
       "model:\n  layers:\n    - {type: dense, units: 10}\n    - type: dense\n      unit: 4\n",
       {},
       "unknown key 'unit' in 'model.layers[1]' (did you mean 'units'?)",
       5},
      {"LayerMissingType",
       "model:\n  layers:\n    - {units: 10}\n",
       {},
       "'model.layers[0]' needs 'type' (one of dense, conv2d, maxpool2d, flatten, dropout)",
       3},
      {"LayerBadType",
       "model:\n  layers:\n    - {type: dens, units: 10}\n",
       {},
       "'model.layers[0].type' must be one of dense, conv2d, maxpool2d, flatten, dropout, got "
       "'dens'",
       3},
      {"LayerMissingUnits",
       "model:\n  layers:\n    - {type: flatten}\n    - {type: dense}\n",
       {},
       "'model.layers[1]' needs 'units' for type dense",
       4},
      {"LayerKeyNotApplicable",
       "model:\n  layers:\n    - {type: maxpool2d, units: 3}\n",
       {},
       "'model.layers[0].units' does not apply to a maxpool2d layer",
       3},
      {"LayerRateOne",
       "model:\n  layers:\n    - {type: dropout, rate: 1}\n",
       {},
       "'model.layers[0].rate' must be in [0, 1), got 1",
       3},
      {"ConvStrideZero",
       "model:\n  layers:\n    - {type: conv2d, filters: 8, stride: 0}\n",
       {},
       "'model.layers[0].stride' must be >= 1 for conv2d, got 0",
       3},
      {"LayerBadActivation",
       "model:\n  layers:\n    - {type: dense, units: 4, activation: relu6}\n",
       {},
       "'model.layers[0].activation' must be one of none, relu, leaky_relu, elu, tanh, sigmoid",
       3},
      {"LayerNotMap",
       "model:\n  layers:\n    - dense\n",
       {},
       "'model.layers[0]' must be a map like {type: dense, units: 10}, got 'dense'",
       3},
      {"InjectBadKind",
       "fault_tolerance:\n  inject:\n    - {rank: 1, at_step: 5, kind: segv}\n",
       {},
       "'fault_tolerance.inject[0].kind' must be one of sigkill, exit, hang, stall, got 'segv'",
       3},
      {"InjectHangAtStartup",
       "fault_tolerance:\n  inject:\n    - {rank: 2, at_startup: data, kind: hang}\n",
       {},
       "'fault_tolerance.inject[0]' kind hang cannot be injected at start-up (at_startup data): "
       "use sigkill",
       3},
      {"InjectUnknownStartupPoint",
       "fault_tolerance:\n  inject:\n    - {rank: 2, at_startup: mpi_init}\n",
       {},
       "'fault_tolerance.inject[0].at_startup' must be one of none, config, data, run_directory, "
       "hosts, setup, got 'mpi_init'",
       3},
      {"InjectTheMasterAtAStep",
       "fault_tolerance:\n  inject:\n    - {rank: 0, at_step: 5}\n",
       {},
       "'fault_tolerance.inject[0]' rank 0 is the master, which takes no training steps: give it "
       "at_startup",
       3},
      {"InjectNegativeRank",
       "fault_tolerance:\n  inject:\n    - {rank: -1}\n",
       {},
       "'fault_tolerance.inject[0].rank' must be in [0, 1000000], got -1",
       3},
      // Cross-key checks.
      {"SparsityOrder",
       "encoding:\n  max_sparsity: 0.01\n  min_sparsity: 0.5\n",
       {},
       "'encoding.min_sparsity' (0.5) must not exceed 'encoding.max_sparsity' (0.01)",
       3},
      {"ThresholdOrder",
       "encoding:\n  initial_threshold: 5\n  max_threshold: 2\n",
       {},
       "'encoding.initial_threshold' (5) must not exceed 'encoding.max_threshold' (2)",
       2},
      {"CustomDataMissingFile",
       "data:\n  dataset: custom\n  train_images: a.idx\n  train_labels: b.idx\n",
       {},
       "data.dataset=custom with data.format=idx needs 'data.test_images'",
       2},
      // Command-line overrides.
      {"OverrideNoEquals",
       "training:\n  epochs: 3\n",
       {"training.epochs"},
       "override 'training.epochs': expected key.path=value",
       0},
      {"OverrideNoDot",
       "training:\n  epochs: 3\n",
       {"epochs=3"},
       "override 'epochs=3': expected key.path=value",
       0},
      {"OverrideUnknownKey",
       "training:\n  epochs: 3\n",
       {"training.epoch=3"},
       "override 'training.epoch=3': unknown key 'training.epoch' (did you mean "
       "'training.epochs'?)",
       0},
      {"OverrideUnknownSection",
       "",
       {"optimiser.type=sgd"},
       "override 'optimiser.type=sgd': unknown key 'optimiser.type' (did you mean "
       "'optimizer.type'?)",
       0},
      {"OverrideBadValue",
       "training:\n  epochs: 3\n",
       {"training.epochs=abc"},
       "override 'training.epochs=abc': 'training.epochs' must be an integer, got 'abc'",
       0},
      {"OverrideBadChoice",
       "run:\n  seed: 1\n",
       {"training.epochs=2", "optimizer.type=adamm"},
       "override 'optimizer.type=adamm': 'optimizer.type' must be one of",
       0},
      {"OverrideYamlSyntax",
       "run:\n  seed: 1\n",
       {"model.input_shape=[1,28"},
       "override 'model.input_shape=[1,28': YAML syntax error: ",
       0},
      {"OverrideBadLayer",
       "run:\n  seed: 1\n",
       {"model.layers=[{type: dense}]"},
       "override 'model.layers=[{type: dense}]': 'model.layers[0]' needs 'units' for type dense",
       0},
      {"OverrideCrossCheck",
       "encoding:\n  max_sparsity: 0.01\n",
       {"encoding.min_sparsity=0.5"},
       "override 'encoding.min_sparsity=0.5': 'encoding.min_sparsity' (0.5) must not exceed",
       0},
  };
  return table;
}

// Path of the config file a case is run on, created in `dir` as the case asks.
std::string prepare_input(const MalformedCase& c, const testing::TempDir& dir) {
  switch (c.input) {
    case Input::kMissing:
      return (dir.path() / "missing.yaml").string();
    case Input::kDirectory: {
      const std::filesystem::path sub = dir.path() / "config-dir.yaml";
      std::filesystem::create_directory(sub);
      return sub.string();
    }
    case Input::kText:
      break;
  }
  // A case with no text still needs a valid file (override cases).
  return dir.write("experiment.yaml",
                   c.yaml.empty() && !c.overrides.empty() ? "run:\n  seed: 1\n" : c.yaml);
}

// The message must name the line (FILE:LINE:COL) or, without one, carry no position.
void expect_position(const std::string& message, const std::string& path, int line) {
  if (line > 0) {
    EXPECT_EQ(message.rfind(path + ":" + std::to_string(line) + ":", 0), 0u)
        << "expected line " << line << " in: " << message;
  } else {
    const std::string head = path + ":";
    const bool positioned = message.rfind(head, 0) == 0 && message.size() > head.size() &&
                            std::isdigit(static_cast<unsigned char>(message[head.size()]));
    EXPECT_FALSE(positioned) << "expected no position in: " << message;
  }
}

class MalformedConfig : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedConfig, FailsWithOneLineUserError) {
  const MalformedCase& c = GetParam();
  testing::TempDir dir;
  const std::string path = prepare_input(c, dir);
  try {
    load_experiment(path, c.overrides);
    FAIL() << "no error for case " << c.name;
  } catch (const core::UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(c.expected), std::string::npos)
        << "expected '" << c.expected << "' in: " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line: " << message;
    expect_position(message, path, c.line);
  }
}

std::string case_name(const ::testing::TestParamInfo<MalformedCase>& info) {
  return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Table, MalformedConfig, ::testing::ValuesIn(cases()), case_name);

TEST(MalformedConfigTable, HasAtLeast25CasesWithUniqueNames) {
  EXPECT_GE(cases().size(), 25u);
  std::set<std::string> names;
  for (const MalformedCase& c : cases()) EXPECT_TRUE(names.insert(c.name).second) << c.name;
}

// --- End to end through the binary ---------------------------------------------------------

struct ProcessResult {
  int exit_code = -1;
  std::string stderr_text;
};

// Runs `argv` with stdout discarded and stderr captured.
ProcessResult run_process(const std::vector<std::string>& argv) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[1]);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  ProcessResult result;
  if (rc != 0) {
    ::close(pipe_fds[0]);
    throw std::runtime_error("cannot start " + argv[0]);
  }
  char buf[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    result.stderr_text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

void expect_user_error(const ProcessResult& r, const MalformedCase& c, const std::string& what) {
  EXPECT_EQ(r.exit_code, 2) << what << "\nstderr: " << r.stderr_text;
  const std::size_t newline = r.stderr_text.find('\n');
  EXPECT_TRUE(!r.stderr_text.empty() && newline == r.stderr_text.size() - 1)
      << what << ": expected exactly one line on stderr, got: " << r.stderr_text;
  EXPECT_NE(r.stderr_text.find(c.expected), std::string::npos)
      << what << ": expected '" << c.expected << "' in: " << r.stderr_text;
}

class MalformedConfigBinary : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedConfigBinary, ExitsTwoWithOneLineAndWritesNothing) {
  const std::string binary = GRADSHARE_BINARY_DIR "/gradshare";
  if (!std::filesystem::exists(binary)) {
    GTEST_SKIP() << binary << " is not built; build the gradshare target to run this check";
  }
  // Run as root on CI machines; singleton MPI init must not refuse.
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  const MalformedCase& c = GetParam();
  testing::TempDir dir;
  const std::string path = prepare_input(c, dir);
  const testing::TempDir output;

  std::vector<std::string> config_argv = {binary, "config", path};
  config_argv.insert(config_argv.end(), c.overrides.begin(), c.overrides.end());
  expect_user_error(run_process(config_argv), c, "gradshare config");

  std::vector<std::string> train_argv = {binary, "train", path,
                                         "run.output_dir=" + output.path().string()};
  train_argv.insert(train_argv.end(), c.overrides.begin(), c.overrides.end());
  expect_user_error(run_process(train_argv), c, "gradshare train");
  EXPECT_TRUE(std::filesystem::is_empty(output.path()))
      << "gradshare train wrote into " << output.path();
}

INSTANTIATE_TEST_SUITE_P(Table, MalformedConfigBinary, ::testing::ValuesIn(cases()), case_name);

}  // namespace
}  // namespace gradshare::config

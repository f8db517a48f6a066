// config_loader_test.cpp: loading, defaults, overrides and the YAML round trip.
#include "config/config_loader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/schema.h"
#include "core/errors.h"
#include "temp_dir.h"

namespace gradshare::config {
namespace {

// Every section, most keys away from their defaults, layers and faults in both YAML styles.
const char* const kFullConfig = R"(# a complete experiment
run:
  name: full
  output_dir: /tmp/runs
  seed: 7
data:
  dataset: custom
  format: hdf5
  train_file: /data/train.h5
  test_file: /data/test.h5
  normalize: standardize
  validation_fraction: 0.1
  shuffle: false
  partition_batches: 4
model:
  input_shape: [1, 28, 28]
  num_classes: 10
  layers:
    - {type: conv2d, filters: 8, kernel: 5, stride: 1, padding: 2, activation: relu}
    - type: maxpool2d
      pool: 2
      stride: 0
    - {type: flatten}
    - {type: dropout, rate: 0.25}
    - {type: dense, units: 64, activation: leaky_relu, alpha: 0.2}
  init: he
  l2: 0.0005
optimizer:
  type: nesterov
  learning_rate: 0.05
  momentum: 0.95
  schedule: cosine
  min_learning_rate: 1e-4
  warmup_steps: 100
training:
  strategy: parameter_averaging
  epochs: 3
  batch_size: 32
  averaging_frequency: 2
  save_updater: false
encoding:
  threshold_algorithm: target_sparsity
  initial_threshold: 0.001
  target_sparsity: 0.002
  format: bitmap
  shake_up_every_steps: 10
topology:
  mode: mesh
  max_children: 4
transport:
  data_plane: two_sided
  ring_bytes: 65536
checkpoint:
  every_steps: 50
  keep: 2
  resume: never
fault_tolerance:
  heartbeat_ms: 200
  timeout_ms: 2000
  inject:
    - {rank: 2, at_step: 30, kind: sigkill}
    - rank: 1
      at_step: 60
      kind: hang
logging:
  level: debug
  every_steps: 10
compute:
  threads: 2
)";

TEST(ConfigLoader, DefaultsRoundTripThroughYaml) {
  const ExperimentConfig defaults = default_experiment();
  const std::string text = to_yaml(defaults);
  const ExperimentConfig back = parse_experiment_text(text, "defaults.yaml");
  EXPECT_TRUE(same_settings(defaults, back));
  EXPECT_EQ(to_yaml(back), text);
}

TEST(ConfigLoader, FullFileReadsEveryValue) {
  const ExperimentConfig c = parse_experiment_text(kFullConfig, "full.yaml");
  EXPECT_EQ(c.source_path, "full.yaml");
  EXPECT_EQ(c.run.name, "full");
  EXPECT_EQ(c.run.seed, 7);
  EXPECT_EQ(c.data.format, "hdf5");
  EXPECT_FALSE(c.data.shuffle);
  EXPECT_DOUBLE_EQ(c.data.validation_fraction, 0.1);
  EXPECT_EQ(c.model.input_shape, (std::vector<std::int64_t>{1, 28, 28}));
  ASSERT_EQ(c.model.layers.size(), 5u);
  EXPECT_EQ(c.model.layers[0].type, "conv2d");
  EXPECT_EQ(c.model.layers[0].filters, 8);
  EXPECT_EQ(c.model.layers[0].kernel, 5);
  EXPECT_EQ(c.model.layers[0].padding, 2);
  EXPECT_EQ(c.model.layers[0].activation, "relu");
  EXPECT_EQ(c.model.layers[1].type, "maxpool2d");
  EXPECT_EQ(c.model.layers[1].stride, 0);
  EXPECT_DOUBLE_EQ(c.model.layers[3].rate, 0.25);
  EXPECT_EQ(c.model.layers[4].units, 64);
  EXPECT_DOUBLE_EQ(c.model.layers[4].alpha, 0.2);
  // Lines of the entries in the file above.
  EXPECT_EQ(c.model.layers[0].line, 19);
  EXPECT_EQ(c.model.layers[1].line, 20);
  EXPECT_EQ(c.model.layers[4].line, 25);
  EXPECT_DOUBLE_EQ(c.model.l2, 0.0005);
  EXPECT_EQ(c.optimizer.type, "nesterov");
  EXPECT_DOUBLE_EQ(c.optimizer.min_learning_rate, 1e-4);
  EXPECT_EQ(c.training.strategy, "parameter_averaging");
  EXPECT_EQ(c.training.epochs, 3);
  EXPECT_FALSE(c.training.save_updater);
  EXPECT_EQ(c.encoding.format, "bitmap");
  EXPECT_EQ(c.topology.max_children, 4);
  EXPECT_EQ(c.transport.ring_bytes, 65536);
  EXPECT_EQ(c.checkpoint.resume, "never");
  ASSERT_EQ(c.fault_tolerance.inject.size(), 2u);
  EXPECT_EQ(c.fault_tolerance.inject[0].rank, 2);
  EXPECT_EQ(c.fault_tolerance.inject[1].kind, "hang");
  EXPECT_EQ(c.fault_tolerance.inject[1].at_step, 60);
  EXPECT_EQ(c.fault_tolerance.inject[1].line, 62);
  EXPECT_EQ(c.logging.level, "debug");
  EXPECT_EQ(c.compute.threads, 2);
  // Keys the file leaves out keep their defaults.
  EXPECT_EQ(c.data.features_dataset, "features");
  EXPECT_DOUBLE_EQ(c.optimizer.beta2, 0.999);
  EXPECT_EQ(c.topology.max_depth, 5);
}

TEST(ConfigLoader, FullFileRoundTripsThroughYaml) {
  const ExperimentConfig c = parse_experiment_text(kFullConfig, "full.yaml");
  EXPECT_FALSE(same_settings(c, default_experiment()));
  const std::string text = to_yaml(c);
  const ExperimentConfig back = parse_experiment_text(text, "resolved.yaml");
  EXPECT_TRUE(same_settings(c, back)) << text;
  EXPECT_EQ(to_yaml(back), text);
}

TEST(ConfigLoader, LoadsFileAndKeepsPath) {
  testing::TempDir dir;
  const std::string path = dir.write("e.yaml", "training:\n  epochs: 4\n");
  const ExperimentConfig c = load_experiment(path);
  EXPECT_EQ(c.source_path, path);
  EXPECT_EQ(c.training.epochs, 4);
}

TEST(ConfigLoader, OmittedAndEmptySectionsTakeDefaults) {
  const ExperimentConfig c = parse_experiment_text("training:\n  epochs: 3\nmodel:\n", "x.yaml");
  ExperimentConfig expected = default_experiment();
  expected.training.epochs = 3;
  EXPECT_TRUE(same_settings(c, expected));
}

TEST(ConfigLoader, NumbersAcceptIntegersAndExponents) {
  const ExperimentConfig c = parse_experiment_text(
      "optimizer:\n  learning_rate: 1\n  epsilon: 1e-6\n  momentum: +0.5\n", "x.yaml");
  EXPECT_DOUBLE_EQ(c.optimizer.learning_rate, 1.0);
  EXPECT_DOUBLE_EQ(c.optimizer.epsilon, 1e-6);
  EXPECT_DOUBLE_EQ(c.optimizer.momentum, 0.5);
}

TEST(ConfigLoader, BoolsAcceptYamlSpellings) {
  EXPECT_FALSE(parse_experiment_text("data:\n  shuffle: False\n", "x").data.shuffle);
  EXPECT_TRUE(parse_experiment_text("data:\n  shuffle: TRUE\n", "x").data.shuffle);
}

TEST(ConfigLoader, ScalarOverrides) {
  const ExperimentConfig c = parse_experiment_text(
      "training:\n  epochs: 5\n", "x.yaml",
      {"training.epochs=3", "optimizer.learning_rate=0.05", "data.shuffle=false",
       "run.name=quick test", "optimizer.type=sgd", "run.dir="});
  EXPECT_EQ(c.training.epochs, 3);
  EXPECT_DOUBLE_EQ(c.optimizer.learning_rate, 0.05);
  EXPECT_FALSE(c.data.shuffle);
  EXPECT_EQ(c.run.name, "quick test");
  EXPECT_EQ(c.optimizer.type, "sgd");
  EXPECT_EQ(c.run.dir, "");
}

TEST(ConfigLoader, LaterOverrideWins) {
  const ExperimentConfig c =
      parse_experiment_text("run:\n", "x.yaml", {"training.epochs=3", "training.epochs=7"});
  EXPECT_EQ(c.training.epochs, 7);
}

TEST(ConfigLoader, ListAndFlowMapOverrides) {
  const ExperimentConfig c = parse_experiment_text(
      "run:\n  seed: 1\n", "x.yaml",
      {"model.input_shape=[784]",
       "model.layers=[{type: dense, units: 128, activation: relu}, {type: dense, units: 10}]",
       "fault_tolerance.inject=[{rank: 3, at_step: 9, kind: exit}]"});
  EXPECT_EQ(c.model.input_shape, (std::vector<std::int64_t>{784}));
  ASSERT_EQ(c.model.layers.size(), 2u);
  EXPECT_EQ(c.model.layers[0].units, 128);
  EXPECT_EQ(c.model.layers[0].activation, "relu");
  EXPECT_EQ(c.model.layers[1].activation, "none");
  EXPECT_EQ(c.model.layers[0].line, 0);  // not from the file
  ASSERT_EQ(c.fault_tolerance.inject.size(), 1u);
  EXPECT_EQ(c.fault_tolerance.inject[0].rank, 3);
  EXPECT_EQ(c.fault_tolerance.inject[0].kind, "exit");
}

TEST(ConfigLoader, OverrideReplacesFileListAndFixesCrossCheck) {
  // The file alone fails the sparsity order; the override repairs it before the checks run.
  const ExperimentConfig c = parse_experiment_text("encoding:\n  min_sparsity: 0.5\n", "x.yaml",
                                                   {"encoding.max_sparsity=0.9"});
  EXPECT_DOUBLE_EQ(c.encoding.max_sparsity, 0.9);
  EXPECT_THROW(parse_experiment_text("encoding:\n  min_sparsity: 0.5\n", "x.yaml"),
               core::UserError);
}

TEST(ConfigLoader, MaxpoolStrideDefaultsToItsPool) {
  const ExperimentConfig c = parse_experiment_text(
      "model:\n  layers: [{type: maxpool2d}, {type: maxpool2d, pool: 3, stride: 1}, "
      "{type: conv2d, filters: 4}]\n",
      "x.yaml");
  EXPECT_EQ(c.model.layers[0].stride, 0);
  EXPECT_EQ(c.model.layers[0].pool, 2);
  EXPECT_EQ(c.model.layers[1].stride, 1);
  EXPECT_EQ(c.model.layers[2].stride, 1);
}

TEST(ConfigLoader, CustomDataWithItsFilesIsAccepted) {
  const ExperimentConfig c = parse_experiment_text(
      "data:\n  dataset: custom\n  train_images: a\n  train_labels: b\n  test_images: c\n"
      "  test_labels: d\n",
      "x.yaml");
  EXPECT_EQ(c.data.dataset, "custom");
  EXPECT_THROW(parse_experiment_text("data:\n  dataset: custom\n  format: hdf5\n", "x.yaml"),
               core::UserError);
}

TEST(ConfigLoader, StringsWithSpecialCharactersRoundTrip) {
  ExperimentConfig c = default_experiment();
  c.run.name = "a \"quoted\": name # not a comment \\ with\ttab";
  c.run.output_dir = "";
  const ExperimentConfig back = parse_experiment_text(to_yaml(c), "x.yaml");
  EXPECT_EQ(back.run.name, c.run.name);
  EXPECT_EQ(back.run.output_dir, "");
}

TEST(ConfigLoader, DoublesRoundTripExactly) {
  ExperimentConfig c = default_experiment();
  c.optimizer.learning_rate = 0.1 + 0.2;  // not representable in few digits
  c.encoding.min_threshold = 3.0e-300;
  const ExperimentConfig back = parse_experiment_text(to_yaml(c), "x.yaml");
  EXPECT_EQ(back.optimizer.learning_rate, c.optimizer.learning_rate);
  EXPECT_EQ(back.encoding.min_threshold, c.encoding.min_threshold);
}

TEST(ConfigLoader, DeepNestingAndGarbageAreErrorsNotCrashes) {
  const std::string deep = "run: " + std::string(5000, '[') + std::string(5000, ']') + "\n";
  EXPECT_THROW(parse_experiment_text(deep, "deep.yaml"), core::UserError);
  const char raw[] = "\x00\xff\xfe{[:\x01\n\t-";
  const std::string garbage(raw, sizeof raw - 1);
  EXPECT_THROW(parse_experiment_text(garbage, "garbage.yaml"), core::UserError);
  EXPECT_THROW(parse_experiment_text("&a [*a]", "alias.yaml"), core::UserError);
}

TEST(SplitOverride, SplitsAtFirstEquals) {
  EXPECT_EQ(split_override("training.epochs=3"),
            (std::pair<std::string, std::string>{"training.epochs", "3"}));
  EXPECT_EQ(split_override("run.name=a=b"),
            (std::pair<std::string, std::string>{"run.name", "a=b"}));
  EXPECT_EQ(split_override("run.dir="), (std::pair<std::string, std::string>{"run.dir", ""}));
}

TEST(SplitOverride, RejectsMalformedArguments) {
  for (const std::string bad : {"training.epochs", "=3", "epochs=3", ".epochs=3", "training.=3",
                                "training..epochs=3", "train ing.epochs=3"}) {
    try {
      split_override(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const core::UserError& e) {
      EXPECT_EQ(std::string(e.what()), "override '" + bad + "': expected key.path=value");
    }
  }
}

TEST(SuggestClosest, FindsLikelyTyposOnly) {
  const std::vector<std::string> keys = {"learning_rate", "momentum", "epochs", "type"};
  EXPECT_EQ(suggest_closest("learning_rat", keys), "learning_rate");
  EXPECT_EQ(suggest_closest("learnig_rate", keys), "learning_rate");
  EXPECT_EQ(suggest_closest("epoch", keys), "epochs");
  EXPECT_EQ(suggest_closest("typo", keys), "type");
  EXPECT_EQ(suggest_closest("bananas", keys), "");
  EXPECT_EQ(suggest_closest("x", {}), "");
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

}  // namespace
}  // namespace gradshare::config

// schema_test.cpp: the schema table generated from experiment_config.h, and `--keys`.
#include "config/schema.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "config/config_loader.h"
#include "config/entry_schema.h"

namespace gradshare::config {
namespace {

TEST(Schema, PathsAreUniqueAndDotted) {
  std::set<std::string> paths;
  for (const KeyInfo& k : schema()) {
    EXPECT_EQ(k.path, k.section + "." + k.key);
    EXPECT_TRUE(paths.insert(k.path).second) << "duplicate " << k.path;
    EXPECT_FALSE(k.help.empty()) << k.path;
  }
  EXPECT_EQ(find_key("optimizer.learning_rate")->type, ValueType::kDouble);
  EXPECT_EQ(find_key("model.layers")->type, ValueType::kLayerList);
  EXPECT_EQ(find_key("optimizer.learning_rat"), nullptr);
}

TEST(Schema, SectionsInDeclaredOrder) {
  const std::vector<std::string> expected = {
      "run",       "data",       "model",           "optimizer", "training", "early_stopping",
      "downpour",  "encoding",   "topology",        "transport", "checkpoint", "fault_tolerance",
      "logging",   "compute"};
  EXPECT_EQ(section_names(), expected);
}

TEST(Schema, GetterAndSetterReachTheMember) {
  ExperimentConfig c;
  find_key("training.epochs")->set(c, std::int64_t{17});
  EXPECT_EQ(c.training.epochs, 17);
  find_key("optimizer.type")->set(c, std::string("sgd"));
  EXPECT_EQ(std::get<std::string>(find_key("optimizer.type")->get(c)), "sgd");
  EXPECT_FALSE(same_settings(c, ExperimentConfig{}));
}

TEST(Schema, ChoiceDefaultsAreAllowed) {
  const ExperimentConfig defaults;
  for (const KeyInfo& k : schema()) {
    if (k.constraint.choices.empty()) continue;
    const std::string v = std::get<std::string>(k.get(defaults));
    EXPECT_NE(std::find(k.constraint.choices.begin(), k.constraint.choices.end(), v),
              k.constraint.choices.end())
        << k.path << " default " << v;
  }
}

TEST(KeysListing, OneLinePerKeyAndEntryKey) {
  std::istringstream in(keys_listing());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), schema().size() + layer_fields().size() + fault_fields().size());
  for (std::size_t i = 0; i < schema().size(); ++i) {
    EXPECT_EQ(lines[i].rfind(schema()[i].path + " ", 0), 0u) << lines[i];
    EXPECT_NE(lines[i].find(schema()[i].help), std::string::npos) << lines[i];
  }
  const std::string& lr =
      lines[static_cast<std::size_t>(find_key("optimizer.learning_rate") - &schema().front())];
  EXPECT_NE(lr.find("number"), std::string::npos);
  EXPECT_NE(lr.find("0.001"), std::string::npos);
  EXPECT_NE(lr.find("[0, 100]"), std::string::npos);
  EXPECT_EQ(lines[schema().size()].rfind("model.layers[].type ", 0), 0u);
}

}  // namespace
}  // namespace gradshare::config

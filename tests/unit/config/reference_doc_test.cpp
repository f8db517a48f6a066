// reference_doc_test.cpp: the committed docs/config-reference.md is the generated one.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "config/config_loader.h"
#include "config/schema.h"

namespace gradshare::config {
namespace {

TEST(ConfigReference, CommittedFileIsUpToDate) {
  const std::string path = GRADSHARE_SOURCE_DIR "/docs/config-reference.md";
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "cannot read " << path;
  std::ostringstream committed;
  committed << in.rdbuf();
  EXPECT_TRUE(committed.str() == reference_markdown())
      << "docs/config-reference.md is stale (the schema in lib/config/experiment_config.h "
         "changed). Regenerate it with:\n  build/gradshare config --reference > "
         "docs/config-reference.md";
}

TEST(ConfigReference, DocumentsEveryKey) {
  const std::string doc = reference_markdown();
  for (const KeyInfo& k : schema()) {
    EXPECT_NE(doc.find("\n## " + k.section + "\n"), std::string::npos) << k.section;
    EXPECT_NE(doc.find("| `" + k.key + "` |"), std::string::npos) << k.path;
  }
  EXPECT_NE(doc.find("## model.layers entries"), std::string::npos);
  EXPECT_NE(doc.find("## fault_tolerance.inject entries"), std::string::npos);
}

}  // namespace
}  // namespace gradshare::config

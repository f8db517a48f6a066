// corpus_test.cpp: the committed seed corpus of the codec decoder fuzzer is what the generator
// builds today (regenerate with `codec_corpus_gen tests/fuzz/corpus/codec_decoder` after a
// format change), and every seed is a valid message.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "codec/decoder.h"
#include "tests/fuzz/codec_corpus.h"

namespace gradshare::codec {
namespace {

TEST(FuzzCorpus, CommittedSeedsMatchTheGenerator) {
  const std::filesystem::path dir =
      std::filesystem::path(GRADSHARE_SOURCE_DIR) / "tests/fuzz/corpus/codec_decoder";
  const auto corpus = fuzz::make_decoder_corpus();
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    files += entry.is_regular_file();
  EXPECT_EQ(files, corpus.size());
  for (const auto& seed : corpus) {
    std::ifstream file(dir / seed.name, std::ios::binary);
    ASSERT_TRUE(file) << "missing " << (dir / seed.name);
    const std::vector<std::uint8_t> committed((std::istreambuf_iterator<char>(file)),
                                              std::istreambuf_iterator<char>());
    EXPECT_EQ(committed, seed.message) << seed.name << " is stale: regenerate the corpus";
    std::vector<float> params(fuzz::kFuzzParameterCount, 0.0f);
    std::string error;
    EXPECT_TRUE(apply_message(seed.message, params, &error)) << seed.name << ": " << error;
  }
}

}  // namespace
}  // namespace gradshare::codec

// codec_corpus.h: the seed corpus of the codec decoder fuzzer: valid messages of every encoding
// for kFuzzParameterCount parameters, built deterministically. codec_corpus_gen writes them to
// tests/fuzz/corpus/codec_decoder/ (committed); a unit test checks the committed files still
// match, so the corpus follows any format change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gradshare::codec::fuzz {

// Parameter count of the fuzzer's target vector: small, and not a multiple of 4 so bitmap
// padding is exercised.
inline constexpr std::size_t kFuzzParameterCount = 257;

struct CorpusEntry {
  std::string name;  // file name
  std::vector<std::uint8_t> message;
};

std::vector<CorpusEntry> make_decoder_corpus();

}  // namespace gradshare::codec::fuzz

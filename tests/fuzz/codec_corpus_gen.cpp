// codec_corpus_gen.cpp: writes the codec decoder fuzzer's seed corpus.
//   codec_corpus_gen <dir>      (the committed copy lives in tests/fuzz/corpus/codec_decoder/)
#include <cstdio>
#include <fstream>
#include <iostream>

#include "codec_corpus.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: codec_corpus_gen <output directory>\n";
    return 2;
  }
  for (const auto& entry : gradshare::codec::fuzz::make_decoder_corpus()) {
    const std::string path = std::string(argv[1]) + "/" + entry.name;
    std::ofstream file(path, std::ios::binary);
    file.write(reinterpret_cast<const char*>(entry.message.data()),
               static_cast<std::streamsize>(entry.message.size()));
    if (!file) {
      std::cerr << "codec_corpus_gen: cannot write " << path << "\n";
      return 1;
    }
    std::cout << path << " (" << entry.message.size() << " bytes)\n";
  }
  return 0;
}

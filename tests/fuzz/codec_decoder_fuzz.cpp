// codec_decoder_fuzz.cpp: libFuzzer target for the message decoder. Every input is decoded as
// is (which mostly exercises the header checks and the checksum) and, when it is long enough,
// once more with its checksum recomputed, so the fuzzer reaches the payload validators. Beyond
// "no crash, no sanitizer report" it checks the decoder's promises: apply and accumulate agree,
// a rejected message leaves the target untouched, an accepted one changes exactly entry_count
// parameters.
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "codec/decoder.h"
#include "codec/message.h"
#include "codec_corpus.h"
#include "kernels/cpu/codec_crc32c.h"

namespace {

using gradshare::codec::fuzz::kFuzzParameterCount;
namespace codec = gradshare::codec;

void require(bool condition) {
  if (!condition) __builtin_trap();
}

void check(std::span<const std::uint8_t> message) {
  codec::MessageHeader header;
  std::string error;
  const bool header_ok = codec::parse_header(message, kFuzzParameterCount, header, &error);
  std::vector<float> params(kFuzzParameterCount, 1.0f);
  std::vector<float> acc(kFuzzParameterCount, 0.0f);
  const bool applied = codec::apply_message(message, params, &error);
  const bool accumulated = codec::accumulate_message(message, acc, &error);
  require(applied == accumulated);
  require(!applied || header_ok);
  if (!applied) {
    require(!error.empty());
    for (std::size_t i = 0; i < kFuzzParameterCount; ++i) {
      require(params[i] == 1.0f && acc[i] == 0.0f);
    }
    return;
  }
  std::size_t changed = 0;
  for (std::size_t i = 0; i < kFuzzParameterCount; ++i) {
    require(params[i] == 1.0f - acc[i]);
    changed += acc[i] != 0.0f;
  }
  require(changed == header.entry_count);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  check({data, size});
  if (size >= codec::kHeaderBytes) {
    std::vector<std::uint8_t> resealed(data, data + size);
    std::uint32_t crc = gradshare::kernels::cpu::crc32c(0, resealed.data(), codec::kChecksumOffset);
    crc = gradshare::kernels::cpu::crc32c(crc, resealed.data() + codec::kHeaderBytes,
                                          size - codec::kHeaderBytes);
    std::memcpy(resealed.data() + codec::kChecksumOffset, &crc, sizeof crc);
    check(resealed);
  }
  return 0;
}

// decode_apply_test.cpp: DeviceDecoder against codec::apply_message / accumulate_message on
// messages of every encoding (sparse, compressed, bitmap, shake-up bitmaps of both signs from
// the CPU Encoder, exact ones from codec::encode_exact, values ones from a relay's encoder): the device target must match the host one bit for bit. A corrupted message
// is refused with the host decoder's verdict and leaves the device target untouched; the
// decode-apply kernels also run on unaligned targets and payloads.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codec/decoder.h"
#include "codec/encoder.h"
#include "codec/exact.h"
#include "config/experiment_config.h"
#include "gpu_test_util.h"
#include "kernels/cuda/codec_device.h"
#include "kernels/cuda/device_decoder.h"

namespace gradshare::kernels::cuda {
namespace {

using namespace testing;  // NOLINT: the gpu test helpers

config::EncodingConfig encoding(const std::string& format, std::int64_t shake_up_every = 0) {
  config::EncodingConfig config;
  config.format = format;
  config.threshold_algorithm = "fixed";
  config.residual = "none";
  config.initial_threshold = 1e-2;
  config.shake_up_every_steps = shake_up_every;
  return config;
}

// Messages of every kind over n parameters (several steps, so shake-ups of both signs occur).
std::vector<std::vector<std::uint8_t>> messages(std::size_t n) {
  std::vector<std::vector<std::uint8_t>> all;
  const std::pair<std::string, std::int64_t> kinds[] = {
      {"sparse", 0}, {"compressed", 0}, {"bitmap", 0}, {"auto", 0}, {"sparse", 2}};
  std::uint64_t seed = 1;
  for (const auto& [format, shake_up] : kinds) {
    codec::Encoder encoder(encoding(format, shake_up), n);
    for (int step = 0; step < 4; ++step) {
      const std::vector<float> update = normal_vector(n, 5e-3f, seed++);
      all.emplace_back();
      encoder.encode(update, {}, all.back());
    }
  }
  // Exact: every third element's value.
  const std::vector<float> values = normal_vector(n, 1.0f, seed);
  std::vector<std::uint32_t> every_third;
  for (std::size_t i = 0; i < n; i += 3) every_third.push_back(static_cast<std::uint32_t>(i));
  all.emplace_back();
  codec::encode_exact(values, every_third, {}, all.back());
  // Values: a relay's encoder (Encoder::carry_values) over every element.
  codec::Encoder relay(encoding("auto"), n);
  relay.carry_values();
  relay.accumulate(normal_vector(n, 5e-2f, seed + 1));
  std::vector<std::uint32_t> every(n);
  for (std::size_t i = 0; i < n; ++i) every[i] = static_cast<std::uint32_t>(i);
  all.emplace_back();
  relay.encode_candidates(every, {}, all.back());
  return all;
}

TEST(DeviceDecoder, AppliesAndAccumulatesLikeTheHostDecoder) {
  for (const std::size_t n :
       {std::size_t{1}, std::size_t{13}, std::size_t{4099}, std::size_t{200003}}) {
    DeviceDecoder decoder;
    const std::vector<float> start = normal_vector(n, 1.0f, n);
    std::vector<float> host_params = start, host_acc(n, 0.0f);
    DeviceBuffer<float> params = to_device(start);
    DeviceBuffer<float> acc = to_device(host_acc);
    for (const auto& message : messages(n)) {
      std::string error;
      ASSERT_TRUE(codec::apply_message(message, host_params, &error)) << error;
      ASSERT_TRUE(codec::accumulate_message(message, host_acc, &error)) << error;
      ASSERT_TRUE(decoder.apply_message(message, params.data(), n, &error)) << error;
      ASSERT_TRUE(decoder.accumulate_message(message, acc.data(), n, &error)) << error;
    }
    decoder.synchronize();
    EXPECT_BITS_EQ(host_params, to_host(params.data(), n));
    EXPECT_BITS_EQ(host_acc, to_host(acc.data(), n));
  }
}

TEST(DeviceDecoder, RefusesACorruptMessageAndLeavesTheTargetAlone) {
  const std::size_t n = 4099;
  DeviceDecoder decoder;
  const std::vector<float> start = normal_vector(n, 1.0f, 3);
  DeviceBuffer<float> params = to_device(start);
  for (auto message : messages(n)) {
    message.back() ^= 0x40;  // the checksum no longer matches
    std::string host_error, device_error;
    std::vector<float> host_params = start;
    EXPECT_FALSE(codec::apply_message(message, host_params, &host_error));
    EXPECT_FALSE(decoder.apply_message(message, params.data(), n, &device_error));
    EXPECT_EQ(device_error, host_error);
  }
  std::string error;
  const std::vector<std::uint8_t> truncated(10, 0);
  EXPECT_FALSE(decoder.apply_message(truncated, params.data(), n, &error));
  EXPECT_FALSE(error.empty());
  const std::vector<std::uint8_t> message = messages(n).front();
  EXPECT_FALSE(decoder.apply_message(message, params.data(), n + 1, &error));  // wrong count
  decoder.synchronize();
  EXPECT_BITS_EQ(start, to_host(params.data(), n));
}

TEST(DecodeApplyKernels, HandleUnalignedTargetsAndPayloads) {
  const std::size_t n = 10007;
  const std::vector<float> start = normal_vector(n, 1.0f, 5);
  // A bitmap with every code, and the sparse entries of its +-tau codes.
  std::vector<std::uint8_t> bitmap((n + 3) / 4, 0);
  std::vector<std::int32_t> entries;
  core::Rng rng(9);
  for (std::size_t i = 0; i < n; ++i) {
    const auto code = static_cast<std::uint8_t>(rng.below(4));
    bitmap[i / 4] = static_cast<std::uint8_t>(bitmap[i / 4] | (code << (2 * (i % 4))));
    if (code == 1) entries.push_back(static_cast<std::int32_t>(i + 1));
    if (code == 2) entries.push_back(-static_cast<std::int32_t>(i + 1));
  }
  const BitmapValues values{0.25f, -0.75f, 0.125f};
  std::vector<float> want_bitmap = start, want_sparse = start;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned code = (bitmap[i / 4] >> (2 * (i % 4))) & 3u;
    if (code != 0)
      want_bitmap[i] += code == 1 ? values.plus : code == 2 ? values.minus : values.half;
  }
  for (const std::int32_t v : entries) {
    want_sparse[static_cast<std::size_t>(v > 0 ? v : -v) - 1] += v > 0 ? 1.5f : -2.5f;
  }
  for (const std::size_t shift : {std::size_t{0}, std::size_t{1}, std::size_t{3}}) {
    SCOPED_TRACE("shift " + std::to_string(shift));
    std::vector<float> padded(shift, 0.0f);
    padded.insert(padded.end(), start.begin(), start.end());
    std::vector<std::uint8_t> padded_bitmap(shift, 0);
    padded_bitmap.insert(padded_bitmap.end(), bitmap.begin(), bitmap.end());
    DeviceBuffer<float> target = to_device(padded);
    DeviceBuffer<std::uint8_t> codes = to_device(padded_bitmap);
    enqueue_apply_bitmap(codes.data() + shift, n, target.data() + shift, values, nullptr);
    const std::vector<float> got = to_host(target.data() + shift, n);
    EXPECT_BITS_EQ(want_bitmap, got);

    DeviceBuffer<float> sparse_target = to_device(padded);
    DeviceBuffer<std::int32_t> device_entries = to_device(entries);
    enqueue_apply_sparse(device_entries.data(), entries.size(), sparse_target.data() + shift, 1.5f,
                         -2.5f, nullptr);
    EXPECT_BITS_EQ(want_sparse, to_host(sparse_target.data() + shift, n));
  }
}

}  // namespace
}  // namespace gradshare::kernels::cuda

// encoder_gpu_test.cpp: the codec's Encoder on CudaCodecKernels against the same Encoder on the
// CPU scalar twin, step by step over every format with shake-ups, clipping and an adaptive
// threshold: identical message bytes, residuals, thresholds and statistics (the clipped mass to
// rounding), and the same error, absorbed prefix and residual on a non-finite update.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "codec/encoder.h"
#include "config/experiment_config.h"
#include "core/errors.h"
#include "gpu_test_util.h"
#include "kernels/cuda/codec_kernels.h"

namespace gradshare::kernels::cuda {
namespace {

using namespace testing;  // NOLINT: the gpu test helpers

config::EncodingConfig encoding(const std::string& format) {
  config::EncodingConfig config;
  config.format = format;
  config.threshold_algorithm = "adaptive";
  config.residual = "clip";
  config.clip_every_steps = 3;
  config.clip_multiplier = 2.0;
  config.shake_up_every_steps = 4;
  config.initial_threshold = 2e-3;
  return config;
}

TEST(EncoderOnGpu, ProducesTheCpuMessagesStepByStep) {
  const CudaCodecKernels gpu;
  const codec::Kernels& cpu = codec::cpu_kernels(kernels::cpu::Isa::kScalar);
  for (const std::string format : {"auto", "sparse", "bitmap", "compressed"}) {
    for (const std::size_t n : {std::size_t{5}, std::size_t{70001}}) {
      SCOPED_TRACE(format + " n=" + std::to_string(n));
      codec::Encoder on_cpu(encoding(format), n, cpu);
      codec::Encoder on_gpu(encoding(format), n, gpu);
      for (int step = 0; step < 12; ++step) {
        // Growing updates, so the auto format moves from sparse to bitmap.
        const std::vector<float> update =
            normal_vector(n, 1e-3f * static_cast<float>(1 + step), 17 * n + step);
        std::vector<std::uint8_t> want, got;
        const codec::MessageMeta meta{3, static_cast<std::uint64_t>(step), 0, 0, 0};
        const auto want_stats = on_cpu.encode(update, meta, want);
        const auto got_stats = on_gpu.encode(update, meta, got);
        ASSERT_EQ(want, got) << "step " << step;
        EXPECT_EQ(got_stats.entries, want_stats.entries);
        EXPECT_EQ(got_stats.half_entries, want_stats.half_entries);
        EXPECT_EQ(got_stats.encoding, want_stats.encoding);
        EXPECT_NEAR(got_stats.clipped_mass, want_stats.clipped_mass,
                    1e-12 * want_stats.clipped_mass);
        EXPECT_EQ(on_gpu.threshold(), on_cpu.threshold());
        const std::vector<float> want_r(on_cpu.residual().begin(), on_cpu.residual().end());
        const std::vector<float> got_r(on_gpu.residual().begin(), on_gpu.residual().end());
        ASSERT_EQ(first_difference(want_r, got_r), "") << "step " << step;
      }
      on_cpu.accumulate(normal_vector(n, 1e-3f, 99));
      on_gpu.accumulate(normal_vector(n, 1e-3f, 99));
      const std::vector<float> want_r(on_cpu.residual().begin(), on_cpu.residual().end());
      const std::vector<float> got_r(on_gpu.residual().begin(), on_gpu.residual().end());
      EXPECT_BITS_EQ(want_r, got_r);
    }
  }
}

std::string encode_error(codec::Encoder& encoder, const std::vector<float>& update) {
  std::vector<std::uint8_t> out;
  try {
    encoder.encode(update, {}, out);
  } catch (const core::RuntimeError& e) {
    EXPECT_TRUE(out.empty());
    return e.what();
  }
  return "";
}

TEST(EncoderOnGpu, RefusesANonFiniteUpdateLikeTheCpu) {
  const CudaCodecKernels gpu;
  const codec::Kernels& cpu = codec::cpu_kernels(kernels::cpu::Isa::kScalar);
  const std::size_t n = 50001;
  for (const std::string format : {"sparse", "bitmap"}) {
    codec::Encoder on_cpu(encoding(format), n, cpu);
    codec::Encoder on_gpu(encoding(format), n, gpu);
    std::vector<float> update = normal_vector(n, 5e-3f, 1);
    update[30011] = std::numeric_limits<float>::quiet_NaN();
    const std::string want = encode_error(on_cpu, update);
    EXPECT_NE(want, "");
    EXPECT_EQ(encode_error(on_gpu, update), want);
    const std::vector<float> want_r(on_cpu.residual().begin(), on_cpu.residual().end());
    const std::vector<float> got_r(on_gpu.residual().begin(), on_gpu.residual().end());
    EXPECT_BITS_EQ(want_r, got_r);
  }
}

}  // namespace
}  // namespace gradshare::kernels::cuda

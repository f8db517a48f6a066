// codec_kernels_test.cpp: CudaCodecKernels (select, bitmap, add, clip) against the CPU scalar
// twin on random inputs with exact ties, signed zeros and denormals: results, residuals and
// outputs bit for bit (clip's mass to 1e-12 relative), outputs poisoned beforehand so an
// unwritten or stray element shows. Every case runs on device spans (aligned: vector loads;
// shifted by one element: scalar loads) and on host spans (the staging path).
#include "kernels/cuda/codec_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "codec/kernels.h"
#include "gpu_test_util.h"
#include "kernels/cpu/codec_bitmap_layout.h"
#include "kernels/cpu/codec_encode.h"

namespace gradshare::kernels::cuda {
namespace {

using namespace testing;  // NOLINT: the gpu test helpers
namespace cpu = kernels::cpu;

enum class Memory { kDevice, kDeviceShifted, kHost };
const Memory kMemories[] = {Memory::kDevice, Memory::kDeviceShifted, Memory::kHost};
const char* memory_name(Memory m) {
  return m == Memory::kDevice ? "device" : m == Memory::kDeviceShifted ? "shifted" : "host";
}

// Sizes around the chunk (8), the tile (8192 elements) and many tiles.
const std::size_t kSizes[] = {1, 7, 8, 9, 1000, 8191, 8192, 8200, 100003, 3000001};

struct Inputs {
  std::vector<float> u, r;
};

// u ~ N(0, scale), r ~ N(0, scale / 2), with exact ties |r + u| = tau, values just below tau,
// signed zeros and denormals sprinkled in.
Inputs make_inputs(std::size_t n, float tau, std::uint64_t seed, float scale = 1.0f) {
  Inputs in{normal_vector(n, scale, seed), normal_vector(n, 0.5f * scale, seed + 1)};
  core::Rng rng(seed + 2);
  for (std::size_t i = 0; i < n; i += 1 + rng.below(37)) {
    in.r[i] = 0.0f;
    switch (rng.below(6)) {
      case 0:
        in.u[i] = tau;
        break;
      case 1:
        in.u[i] = -tau;
        break;
      case 2:
        in.u[i] = std::nextafter(tau, 0.0f);
        break;
      case 3:
        in.u[i] = -0.0f, in.r[i] = -0.0f;
        break;
      case 4:
        in.u[i] = 1e-40f;
        break;
      default:
        in.u[i] = tau / 3.0f;
        break;  // the shake-up threshold
    }
  }
  return in;
}

// A span over `host`'s values where the kernels under test will find them: host memory itself,
// or a device copy (optionally one element past an aligned start), kept alive by `keep`.
template <class T>
std::span<T> place(std::vector<T>& host, Memory memory, std::vector<std::shared_ptr<void>>& keep) {
  if (memory == Memory::kHost) return host;
  const std::size_t shift = memory == Memory::kDeviceShifted ? 1 : 0;
  auto device = std::make_shared<DeviceBuffer<T>>(host.size() + shift + 1);
  if (!host.empty()) {
    GS_CUDA_CHECK(cudaMemcpy(device->data() + shift, host.data(), host.size() * sizeof(T),
                             cudaMemcpyHostToDevice));
  }
  keep.push_back(device);
  return {device->data() + shift, host.size()};
}

template <class T>
std::vector<T> fetch(std::span<T> span, Memory memory) {
  if (memory == Memory::kHost) return {span.begin(), span.end()};
  return to_host(span.data(), span.size());
}

class CudaCodecKernelsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { kernels_ = std::make_unique<CudaCodecKernels>(); }
  static void TearDownTestSuite() { kernels_.reset(); }
  static const codec::Kernels& gpu() { return *kernels_; }

  // Runs select on the CPU twin and on the GPU from the same inputs and compares everything.
  static void check_select(const Inputs& in, std::size_t first_index, float tau,
                           std::size_t capacity, Memory memory) {
    SCOPED_TRACE(std::string("select n=") + std::to_string(in.u.size()) +
                 " capacity=" + std::to_string(capacity) + " memory=" + memory_name(memory));
    std::vector<float> cpu_r = in.r;
    std::vector<std::int32_t> cpu_out = poisoned_host<std::int32_t>(capacity);
    const auto want = cpu::encode_select(cpu::Isa::kScalar, in.u, cpu_r, first_index, tau, cpu_out);
    std::vector<std::shared_ptr<void>> keep;
    std::vector<float> u = in.u, r = in.r;
    std::vector<std::int32_t> out = poisoned_host<std::int32_t>(capacity);
    const auto du = place(u, memory, keep);
    const auto dr = place(r, memory, keep);
    const auto dout = place(out, memory, keep);
    const auto got = gpu().select(du, dr, first_index, tau, dout);
    EXPECT_EQ(got.processed, want.processed);
    EXPECT_EQ(got.count, want.count);
    EXPECT_EQ(got.bad, want.bad);
    EXPECT_BITS_EQ(cpu_r, fetch(dr, memory));
    EXPECT_BITS_EQ(cpu_out, fetch(dout, memory));
  }

  static void check_bitmap(const Inputs& in, float tau, codec::HalfQuantum half, Memory memory) {
    SCOPED_TRACE(std::string("bitmap n=") + std::to_string(in.u.size()) +
                 " half=" + std::to_string(half.value) + " memory=" + memory_name(memory));
    const std::size_t bytes = cpu::bitmap_bytes(in.u.size()) + 3;  // 3 bytes never written
    std::vector<float> cpu_r = in.r;
    std::vector<std::uint8_t> cpu_bitmap = poisoned_host<std::uint8_t>(bytes);
    const auto want = cpu::encode_bitmap(cpu::Isa::kScalar, in.u, cpu_r, tau, half, cpu_bitmap);
    std::vector<std::shared_ptr<void>> keep;
    std::vector<float> u = in.u, r = in.r;
    std::vector<std::uint8_t> bitmap = poisoned_host<std::uint8_t>(bytes);
    const auto du = place(u, memory, keep);
    const auto dr = place(r, memory, keep);
    const auto dbitmap = place(bitmap, memory, keep);
    const auto got = gpu().bitmap(du, dr, tau, half, dbitmap);
    EXPECT_EQ(got.processed, want.processed);
    EXPECT_EQ(got.entries, want.entries);
    EXPECT_EQ(got.half_entries, want.half_entries);
    EXPECT_EQ(got.bad, want.bad);
    EXPECT_BITS_EQ(cpu_r, fetch(dr, memory));
    EXPECT_BITS_EQ(cpu_bitmap, fetch(dbitmap, memory));
  }

  static void check_add(const Inputs& in, Memory memory) {
    SCOPED_TRACE(std::string("add n=") + std::to_string(in.u.size()) +
                 " memory=" + memory_name(memory));
    std::vector<float> cpu_r = in.r;
    const auto want = cpu::add_checked(cpu::Isa::kScalar, in.u, cpu_r);
    std::vector<std::shared_ptr<void>> keep;
    std::vector<float> u = in.u, r = in.r;
    const auto du = place(u, memory, keep);
    const auto dr = place(r, memory, keep);
    const auto got = gpu().add(du, dr);
    EXPECT_EQ(got.processed, want.processed);
    EXPECT_EQ(got.bad, want.bad);
    EXPECT_BITS_EQ(cpu_r, fetch(dr, memory));
  }

 private:
  static std::unique_ptr<CudaCodecKernels> kernels_;
};
std::unique_ptr<CudaCodecKernels> CudaCodecKernelsTest::kernels_;

TEST_F(CudaCodecKernelsTest, SelectMatchesTheCpuTwin) {
  for (const std::size_t n : kSizes) {
    for (const float tau : {0.3f, 1.0f, 3.0f}) {  // many to few elements selected
      const Inputs in = make_inputs(n, tau, 100 + n);
      for (const Memory memory : kMemories) check_select(in, 0, tau, n, memory);
    }
  }
}

TEST_F(CudaCodecKernelsTest, SelectCarriesTheFirstIndex) {
  const Inputs in = make_inputs(100003, 1.0f, 7);
  for (const Memory memory : kMemories) check_select(in, 1234567, 1.0f, 100003, memory);
}

TEST_F(CudaCodecKernelsTest, SelectStopsWhereTheCpuStopsWhenTheIndexBufferFills) {
  const std::size_t n = 100003;
  const Inputs in = make_inputs(n, 1.0f, 11);
  std::vector<float> r = in.r;
  std::vector<std::int32_t> all(n);
  const std::size_t count = cpu::encode_select(cpu::Isa::kScalar, in.u, r, 0, 1.0f, all).count;
  ASSERT_GT(count, 100u);
  for (const std::size_t capacity :
       {std::size_t{0}, std::size_t{7}, std::size_t{8}, count / 2, count - 1, count, count + 3}) {
    for (const Memory memory : kMemories) check_select(in, 0, 1.0f, capacity, memory);
  }
}

TEST_F(CudaCodecKernelsTest, SelectStopsBeforeANonFiniteChunk) {
  const std::size_t n = 100003;
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Positions: first chunk, a chunk middle, a tile boundary, the last full chunk, the tail.
  for (const std::size_t at : {std::size_t{0}, std::size_t{13}, std::size_t{8192},
                               std::size_t{16383}, std::size_t{99999}, n - 2}) {
    for (const float bad : {nan, inf, -inf}) {
      Inputs in = make_inputs(n, 1.0f, at);
      in.u[at] = bad;
      for (const Memory memory : kMemories) check_select(in, 0, 1.0f, n, memory);
    }
    // A residual that overflows when the update is added.
    Inputs in = make_inputs(n, 1.0f, at + 1);
    in.r[at] = std::numeric_limits<float>::max();
    in.u[at] = std::numeric_limits<float>::max();
    check_select(in, 0, 1.0f, n, Memory::kDevice);
  }
}

TEST_F(CudaCodecKernelsTest, SelectReportsWhicheverStopComesFirst) {
  const std::size_t n = 100003;
  Inputs in = make_inputs(n, 1.0f, 21);
  in.u[50000] = std::numeric_limits<float>::quiet_NaN();
  for (const std::size_t capacity : {std::size_t{100}, std::size_t{20000}, n}) {
    check_select(in, 0, 1.0f, capacity, Memory::kDevice);
  }
}

TEST_F(CudaCodecKernelsTest, BitmapMatchesTheCpuTwin) {
  const float tau = 1.0f;
  const codec::HalfQuantum none;
  const codec::HalfQuantum plus{tau / 3.0f, tau * 0.5f};
  const codec::HalfQuantum minus{tau / 3.0f, -(tau * 0.5f)};
  for (const std::size_t n : kSizes) {
    const Inputs in = make_inputs(n, tau, 300 + n);
    for (const auto& half : {none, plus, minus}) {
      for (const Memory memory : kMemories) check_bitmap(in, tau, half, memory);
    }
  }
}

TEST_F(CudaCodecKernelsTest, BitmapStopsBeforeANonFiniteChunk) {
  const std::size_t n = 100003;
  for (const std::size_t at : {std::size_t{0}, std::size_t{8195}, std::size_t{99999}, n - 1}) {
    Inputs in = make_inputs(n, 1.0f, 400 + at);
    in.u[at] = std::numeric_limits<float>::quiet_NaN();
    for (const Memory memory : kMemories) {
      check_bitmap(in, 1.0f, {1.0f / 3.0f, 0.5f}, memory);
    }
  }
}

TEST_F(CudaCodecKernelsTest, AddMatchesTheCpuTwin) {
  for (const std::size_t n : kSizes) {
    Inputs in = make_inputs(n, 1.0f, 500 + n);
    for (const Memory memory : kMemories) check_add(in, memory);
    if (n > 10) {
      in.u[n / 2] = -std::numeric_limits<float>::infinity();
      for (const Memory memory : kMemories) check_add(in, memory);
    }
  }
}

TEST_F(CudaCodecKernelsTest, ClipMatchesTheCpuTwin) {
  for (const std::size_t n : kSizes) {
    for (const Memory memory : kMemories) {
      SCOPED_TRACE(std::string("clip n=") + std::to_string(n) + " memory=" + memory_name(memory));
      std::vector<float> r = normal_vector(n, 2.0f, 600 + n);
      if (n > 3) r[n / 3] = std::numeric_limits<float>::quiet_NaN();  // stays NaN on both
      std::vector<float> cpu_r = r;
      const double want = cpu::clip(cpu::Isa::kScalar, cpu_r, 2.5f);
      std::vector<std::shared_ptr<void>> keep;
      const auto dr = place(r, memory, keep);
      const double got = gpu().clip(dr, 2.5f);
      EXPECT_NEAR(got, want, 1e-12 * want);
      EXPECT_BITS_EQ(cpu_r, fetch(dr, memory));
    }
  }
}

TEST_F(CudaCodecKernelsTest, EmptySpansDoNothing) {
  std::vector<float> none;
  std::vector<std::int32_t> out;
  std::vector<std::uint8_t> bitmap;
  const auto selected = gpu().select(none, none, 0, 1.0f, out);
  EXPECT_EQ(selected.processed, 0u);
  EXPECT_EQ(selected.count, 0u);
  EXPECT_EQ(gpu().bitmap(none, none, 1.0f, {}, bitmap).processed, 0u);
  EXPECT_EQ(gpu().add(none, none).processed, 0u);
  EXPECT_EQ(gpu().clip(none, 1.0f), 0.0);
}

}  // namespace
}  // namespace gradshare::kernels::cuda

// kernel_twins_test.cpp: the scalar and AVX2 codec kernels give bit-identical results (residual,
// indices, codes, counts, stop positions) on random data of every length, with capacity stops,
// half quanta and non-finite values; plus the scalar twin checked against the definition.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/rng.h"
#include "kernels/cpu/codec_bitmap_layout.h"
#include "kernels/cpu/codec_encode.h"
#include "kernels/cpu/codec_isa.h"

namespace gradshare::kernels::cpu {
namespace {

constexpr float kTau = 1e-3f;

struct Input {
  std::vector<float> u;
  std::vector<float> r;
};

Input random_input(std::size_t n, std::uint64_t seed, std::size_t bad = kNoBadIndex) {
  core::Rng rng(seed);
  Input in{std::vector<float>(n), std::vector<float>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    in.u[i] = kTau * rng.normal();
    in.r[i] = kTau * rng.uniform(-1.0f, 1.0f);
    if (i % 17 == 0) in.u[i] = kTau - in.r[i];  // lands on or next to exactly tau
  }
  if (bad < n) in.u[bad] = std::numeric_limits<float>::quiet_NaN();
  return in;
}

// Bitwise equality (0.0f and -0.0f differ).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

class Twins : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "CPU without AVX2";
  }
};

TEST_F(Twins, SelectMatches) {
  for (std::size_t n = 0; n < 100; ++n) {
    for (const std::size_t capacity : {n, n / 3, std::size_t{5}}) {
      for (const std::size_t bad : {kNoBadIndex, n / 2}) {
        Input a = random_input(n, n * 31 + capacity, bad);
        Input b = a;
        std::vector<std::int32_t> out_a(capacity, 0), out_b(capacity, 0);
        const SelectResult ra = encode_select(Isa::kScalar, a.u, a.r, 40, kTau, out_a);
        const SelectResult rb = encode_select(Isa::kAvx2, b.u, b.r, 40, kTau, out_b);
        ASSERT_EQ(ra.processed, rb.processed) << n;
        ASSERT_EQ(ra.count, rb.count) << n;
        ASSERT_EQ(ra.bad, rb.bad) << n;
        ASSERT_EQ(ra.processed % 8 == 0 || ra.processed == n, true);
        out_a.resize(ra.count);  // entries past count are scratch
        out_b.resize(rb.count);
        ASSERT_EQ(out_a, out_b) << n;
        ASSERT_TRUE(same_bits(a.r, b.r)) << n;
      }
    }
  }
}

TEST_F(Twins, BitmapMatches) {
  for (std::size_t n = 0; n < 100; ++n) {
    for (const HalfQuantum half :
         {HalfQuantum{}, HalfQuantum{kTau / 3, kTau / 2}, HalfQuantum{kTau / 3, -kTau / 2}}) {
      for (const std::size_t bad : {kNoBadIndex, n / 2}) {
        Input a = random_input(n, n * 37 + 1, bad);
        Input b = a;
        std::vector<std::uint8_t> bits_a(bitmap_bytes(n), 0xEE), bits_b(bitmap_bytes(n), 0xEE);
        const BitmapResult ra = encode_bitmap(Isa::kScalar, a.u, a.r, kTau, half, bits_a);
        const BitmapResult rb = encode_bitmap(Isa::kAvx2, b.u, b.r, kTau, half, bits_b);
        ASSERT_EQ(ra.processed, rb.processed) << n;
        ASSERT_EQ(ra.entries, rb.entries) << n;
        ASSERT_EQ(ra.half_entries, rb.half_entries) << n;
        ASSERT_EQ(ra.bad, rb.bad) << n;
        ASSERT_EQ(bits_a, bits_b) << n;
        ASSERT_TRUE(same_bits(a.r, b.r)) << n;
      }
    }
  }
}

TEST_F(Twins, AddAndClipMatch) {
  for (std::size_t n = 0; n < 100; ++n) {
    for (const std::size_t bad : {kNoBadIndex, n / 3}) {
      Input a = random_input(n, n + 5, bad);
      Input b = a;
      const AddResult ra = add_checked(Isa::kScalar, a.u, a.r);
      const AddResult rb = add_checked(Isa::kAvx2, b.u, b.r);
      ASSERT_EQ(ra.processed, rb.processed);
      ASSERT_EQ(ra.bad, rb.bad);
      ASSERT_TRUE(same_bits(a.r, b.r)) << n;
      if (bad != kNoBadIndex) continue;
      const double ma = clip(Isa::kScalar, a.r, 1.5f * kTau);
      const double mb = clip(Isa::kAvx2, b.r, 1.5f * kTau);
      ASSERT_NEAR(ma, mb, 1e-12 * (ma + 1e-30));
      ASSERT_TRUE(same_bits(a.r, b.r)) << n;
    }
  }
}

TEST_F(Twins, CountFiringMatchesSelect) {
  for (std::size_t n = 0; n < 100; ++n) {
    Input in = random_input(n, n + 9);
    if (n > 3) in.u[n / 2] = std::numeric_limits<float>::quiet_NaN();  // never counts
    if (n > 5) in.u[n / 3] = -std::numeric_limits<float>::infinity();  // counts
    const std::size_t scalar = count_firing(Isa::kScalar, in.u, in.r, kTau);
    ASSERT_EQ(scalar, count_firing(Isa::kAvx2, in.u, in.r, kTau)) << n;
    std::size_t expected = 0;
    for (std::size_t j = 0; j < n; ++j) expected += std::fabs(in.r[j] + in.u[j]) >= kTau ? 1 : 0;
    ASSERT_EQ(scalar, expected) << n;
    // On finite data: exactly what the select pass picks.
    Input clean = random_input(n, n + 9);
    std::vector<std::int32_t> out(n + 8);
    const std::size_t counted = count_firing(Isa::kAvx2, clean.u, clean.r, kTau);
    ASSERT_EQ(counted, encode_select(Isa::kAvx2, clean.u, clean.r, 0, kTau, out).count) << n;
  }
}

TEST(ScalarKernels, SelectFollowsTheDefinition) {
  std::vector<float> u = {2e-3f, -1e-3f, 5e-4f, -5e-4f, 0.0f, 1e-3f, -3e-3f, 9.99e-4f, 1e-3f};
  std::vector<float> r(u.size(), 0.0f);
  r[4] = -1e-3f;
  std::vector<std::int32_t> out(u.size());
  const SelectResult result = encode_select(Isa::kScalar, u, r, 100, kTau, out);
  EXPECT_EQ(result.processed, u.size());
  EXPECT_EQ(result.bad, kNoBadIndex);
  ASSERT_EQ(result.count, 6u);
  EXPECT_EQ(out[0], 101);
  EXPECT_EQ(out[1], -102);
  EXPECT_EQ(out[2], -105);  // residual -tau, update 0
  EXPECT_EQ(out[3], 106);
  EXPECT_EQ(out[4], -107);
  EXPECT_EQ(out[5], 109);
  EXPECT_EQ(r[0], 2e-3f - 1e-3f);
  EXPECT_EQ(r[1], 0.0f);
  EXPECT_EQ(r[2], 5e-4f);
  EXPECT_EQ(r[6], -3e-3f + 1e-3f);
  EXPECT_EQ(r[7], 9.99e-4f);
}

TEST(ScalarKernels, StopsBeforeAChunkThatMightNotFit) {
  std::vector<float> u(20, 1.0f), r(20, 0.0f);
  std::vector<std::int32_t> out(12);
  const SelectResult result = encode_select(Isa::kScalar, u, r, 0, kTau, out);
  EXPECT_EQ(result.processed, 8u);  // 8 + 8 > 12
  EXPECT_EQ(result.count, 8u);
  EXPECT_EQ(r[8], 0.0f);
}

TEST(ScalarKernels, BitmapCodes) {
  const std::vector<float> u = {2e-3f, -2e-3f, 4e-4f, -4e-4f, 1e-4f};
  std::vector<float> r(u.size(), 0.0f);
  std::vector<std::uint8_t> bits(2, 0xFF);
  const BitmapResult result =
      encode_bitmap(Isa::kScalar, u, r, kTau, HalfQuantum{kTau / 3, -kTau / 2}, bits);
  EXPECT_EQ(result.entries, 3u);
  EXPECT_EQ(result.half_entries, 1u);
  EXPECT_EQ(bits[0], kCodePlus | (kCodeMinus << 2) | (kCodeNone << 4) | (kCodeHalf << 6));
  EXPECT_EQ(bits[1], 0);  // element 4 below every threshold, padding zero
  EXPECT_EQ(r[3], -4e-4f + kTau / 2);
}

TEST(ScalarKernels, ClipReportsTheMass) {
  std::vector<float> r = {3.0f, -4.0f, 0.5f, -0.5f, 2.0f};
  EXPECT_DOUBLE_EQ(clip(Isa::kScalar, r, 2.0f), 3.0);
  EXPECT_EQ(r, (std::vector<float>{2.0f, -2.0f, 0.5f, -0.5f, 2.0f}));
}

}  // namespace
}  // namespace gradshare::kernels::cpu

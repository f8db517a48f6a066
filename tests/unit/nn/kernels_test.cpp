// kernels_test.cpp: properties of the CPU kernels that layer tests do not pin down directly:
// col2im is the adjoint of im2col, GEMM transposes, max pooling with overlapping windows,
// the dropout mask's statistics and reproducibility, scale and divide.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"

namespace gradshare::kernels::cpu {
namespace {

std::vector<float> random_vector(std::size_t n, core::Rng& rng) {
  std::vector<float> v(n);
  for (float& x : v) x = rng.normal();
  return v;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

TEST(Im2col, Col2imIsItsAdjoint) {
  core::Rng rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    ConvGeometry g;
    g.channels = 1 + static_cast<int>(rng.below(3));
    g.kernel = 1 + static_cast<int>(rng.below(5));
    g.stride = 1 + static_cast<int>(rng.below(3));
    g.padding = static_cast<int>(rng.below(4));
    g.height = std::max(g.kernel, 1 + static_cast<int>(rng.below(9)));
    g.width = std::max(g.kernel, 1 + static_cast<int>(rng.below(9)));
    const std::size_t image_size = static_cast<std::size_t>(g.channels) * g.height * g.width;
    const std::vector<float> x = random_vector(image_size, rng);
    const std::vector<float> c = random_vector(g.col_rows() * g.col_cols(), rng);
    std::vector<float> col(c.size(), NAN), back(image_size, NAN);
    im2col(x.data(), g, col.data());
    col2im(c.data(), g, back.data());
    // <im2col(x), c> == <x, col2im(c)> for every x, c exactly when both are right.
    EXPECT_NEAR(dot(col, c), dot(x, back), 1e-3) << "trial " << trial;
  }
}

TEST(Im2col, PaddingReadsAsZero) {
  ConvGeometry g;
  g.channels = 1;
  g.height = g.width = 2;
  g.kernel = 3;
  g.padding = 1;
  const std::vector<float> x = {1, 2, 3, 4};
  std::vector<float> col(g.col_rows() * g.col_cols(), NAN);
  im2col(x.data(), g, col.data());
  // Kernel position (0,0) sees the pixel up-left of each output: only output (1,1) has one.
  EXPECT_EQ(std::vector<float>(col.begin(), col.begin() + 4), (std::vector<float>{0, 0, 0, 1}));
  // The centre position sees each pixel itself.
  EXPECT_EQ(std::vector<float>(col.begin() + 16, col.begin() + 20), x);
}

TEST(Gemm, AllTransposeCombinations) {
  core::Rng rng(5);
  const int m = 3, n = 4, k = 5;
  const std::vector<float> a = random_vector(m * k, rng), b = random_vector(k * n, rng);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      // Store A (m x k) and B (k x n) transposed when asked to.
      std::vector<float> as(a.size()), bs(b.size());
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < k; ++j) (ta ? as[j * m + i] : as[i * k + j]) = a[i * k + j];
      for (int i = 0; i < k; ++i)
        for (int j = 0; j < n; ++j) (tb ? bs[j * k + i] : bs[i * n + j]) = b[i * n + j];
      std::vector<float> c(m * n, 1.0f);
      gemm(ta, tb, m, n, k, 2.0f, as.data(), ta ? m : k, bs.data(), tb ? k : n, 0.5f, c.data(), n);
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double expected = 0.5;
          for (int l = 0; l < k; ++l) expected += 2.0 * a[i * k + l] * b[l * n + j];
          EXPECT_NEAR(c[i * n + j], expected, 1e-4);
        }
    }
  }
}

TEST(MaxPool, OverlappingWindowsAccumulateGradients) {
  PoolGeometry g;  // a 3x3 plane, 2x2 windows with stride 1 overlap
  g.height = g.width = 3;
  g.pool = 2;
  g.stride = 1;
  const std::vector<float> x = {1, 2, 0, 0, 9, 0, 3, 0, 4};  // 9 is the max of every window
  std::vector<float> y(4);
  std::vector<std::int32_t> arg(4);
  maxpool_forward(x.data(), g, 1, y.data(), arg.data());
  EXPECT_EQ(y, (std::vector<float>{9, 9, 9, 9}));
  const std::vector<float> dy = {1, 2, 3, 4};
  std::vector<float> dx(9, NAN);
  maxpool_backward(dy.data(), arg.data(), g, 1, dx.data());
  EXPECT_EQ(dx, (std::vector<float>{0, 0, 0, 0, 10, 0, 0, 0, 0}));
}

TEST(Dropout, MaskHasTheRateAndIsReproducible) {
  const std::size_t n = 100000;
  const std::vector<float> x(n, 1.0f);
  std::vector<float> y(n), mask(n), y2(n), mask2(n);
  dropout_forward(x.data(), y.data(), mask.data(), n, 0.25f, 77);
  dropout_forward(x.data(), y2.data(), mask2.data(), n, 0.25f, 77);
  EXPECT_EQ(mask, mask2);
  std::size_t dropped = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (mask[i] == 0.0f) {
      ++dropped;
    } else {
      EXPECT_FLOAT_EQ(mask[i], 1.0f / 0.75f);
    }
    EXPECT_EQ(y[i], x[i] * mask[i]);
  }
  EXPECT_NEAR(static_cast<double>(dropped) / n, 0.25, 0.01);
  dropout_forward(x.data(), y2.data(), mask2.data(), n, 0.25f, 78);
  EXPECT_NE(mask, mask2);
}

TEST(Elementwise, ScaleAndDivideInvertEachOther) {
  core::Rng rng(5);
  const auto x = random_vector(37, rng);
  std::vector<float> y(x.size());
  scale(3.0f, x.data(), y.data(), y.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], 3.0f * x[i]);
  divide(y.data(), 3.0f, y.size());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], (3.0f * x[i]) / 3.0f);
}

}  // namespace
}  // namespace gradshare::kernels::cpu

TEST(NormStats, L2AndLargestMagnitude) {
  const std::vector<float> x{3.0f, -4.0f, 0.0f, 1e-3f};
  const auto stats = gradshare::kernels::cpu::norm_stats(x.data(), x.size());
  EXPECT_NEAR(stats.l2, std::sqrt(25.0 + 1e-6), 1e-9);
  EXPECT_DOUBLE_EQ(stats.max_abs, 4.0);
  const auto empty = gradshare::kernels::cpu::norm_stats(x.data(), 0);
  EXPECT_EQ(empty.l2, 0.0);
  EXPECT_EQ(empty.max_abs, 0.0);
}

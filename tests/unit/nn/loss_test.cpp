// loss_test.cpp: softmax cross-entropy against the double-precision reference, its gradient
// against finite differences, and its stability for extreme logits.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "kernels/cpu/softmax.h"
#include "reference.h"

namespace gradshare::nn {
namespace {

using kernels::cpu::softmax_cross_entropy;
using testing::Vec;

TEST(SoftmaxCrossEntropy, LossAndGradientMatchReference) {
  core::Rng rng(3);
  for (std::size_t classes : {2u, 3u, 10u}) {
    const std::size_t batch = 5;
    std::vector<float> logits(batch * classes);
    for (float& v : logits) v = 3.0f * rng.normal();
    std::vector<std::int32_t> labels(batch);
    for (auto& l : labels) l = static_cast<std::int32_t>(rng.below(classes));

    std::vector<float> grad(logits.size(), -7.0f);
    std::vector<std::int32_t> predicted(batch, -1);
    const auto sums = softmax_cross_entropy(logits.data(), labels.data(), batch, classes,
                                            1.0f / batch, grad.data(), predicted.data());
    const Vec ld = testing::to_double(logits);
    EXPECT_NEAR(sums.loss_sum / batch, testing::ref_cross_entropy(ld, labels, classes), 1e-5);

    const Vec numeric = testing::numeric_gradient(
        [&](const Vec& l) { return testing::ref_cross_entropy(l, labels, classes); }, ld);
    std::int64_t correct = 0;
    for (std::size_t b = 0; b < batch; ++b) {
      std::size_t best = 0;
      for (std::size_t j = 0; j < classes; ++j) {
        EXPECT_NEAR(grad[b * classes + j], numeric[b * classes + j], 1e-5);
        if (logits[b * classes + j] > logits[b * classes + best]) best = j;
      }
      EXPECT_EQ(predicted[b], static_cast<std::int32_t>(best));
      if (best == static_cast<std::size_t>(labels[b])) ++correct;
    }
    EXPECT_EQ(sums.correct, correct);
  }
}

TEST(SoftmaxCrossEntropy, StableForHugeLogits) {
  const std::vector<float> logits = {1000.0f, -1000.0f, 0.0f, -50000.0f, 50000.0f, 49990.0f};
  const std::vector<std::int32_t> labels = {1, 2};
  std::vector<float> grad(6);
  const auto sums =
      softmax_cross_entropy(logits.data(), labels.data(), 2, 3, 0.5f, grad.data(), nullptr);
  // Sample 0 (label 1): 1000 - (-1000) = 2000 (the other terms vanish); sample 1 (label 2):
  // log(e^50000 + e^49990) - 49990 = 10 + log(1 + e^-10).
  EXPECT_NEAR(sums.loss_sum, 2000.0 + 10.0 + std::log1p(std::exp(-10.0)), 1e-6);
  for (float g : grad) EXPECT_TRUE(std::isfinite(g));
  EXPECT_NEAR(grad[0], 0.5f, 1e-6);
  EXPECT_NEAR(grad[1], -0.5f, 1e-6);
  EXPECT_EQ(sums.correct, 0);
}

TEST(SoftmaxCrossEntropy, WithoutLabelsOnlyPredicts) {
  const std::vector<float> logits = {0.1f, 0.9f, 0.3f, 2.0f, -1.0f, 2.0f};
  std::vector<std::int32_t> predicted(2);
  const auto sums =
      softmax_cross_entropy(logits.data(), nullptr, 2, 3, 1.0f, nullptr, predicted.data());
  EXPECT_EQ(predicted[0], 1);
  EXPECT_EQ(predicted[1], 0);  // first of the tied maxima
  EXPECT_EQ(sums.loss_sum, 0.0);
  EXPECT_EQ(sums.correct, 0);
}

}  // namespace
}  // namespace gradshare::nn

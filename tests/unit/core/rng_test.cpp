#include <gtest/gtest.h>

#include <set>

#include "core/rng.h"

using gradshare::core::Rng;

TEST(Rng, SameSeedSameSequenceAndStateRoundTrips) {
  Rng a(7), b(7);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
  auto saved = a.state();
  std::uint64_t expected = a.next();
  b.set_state(saved);
  EXPECT_EQ(b.next(), expected);
}

TEST(Rng, DerivedStreamsDiffer) {
  std::set<std::uint64_t> firsts;
  for (std::uint64_t stream = 0; stream < 50; ++stream) firsts.insert(Rng::derive(1, stream).next());
  EXPECT_EQ(firsts.size(), 50u);
}

TEST(Rng, UniformAndBelowStayInRange) {
  Rng r(3);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    ASSERT_LT(r.below(13), 13u);
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.01);
}

TEST(Rng, NormalHasUnitVariance) {
  Rng r(11);
  double sum = 0, sum_sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    double x = r.normal();
    sum += x;
    sum_sq += x * x;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum_sq / n, 1.0, 0.02);
}

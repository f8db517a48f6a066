// elementwise_test.cpp: the optimizers' update rules and subtract on the GPU against their
// kernels/cpu twins, bit for bit (no FMA contraction, IEEE division and square root), over a
// length that exercises the CPU's vector loops and their scalar tails.
#include "kernels/cpu/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gpu_test_util.h"
#include "kernels/cuda/layers_device.h"

namespace gradshare::kernels::cuda {
namespace {

using namespace testing;  // NOLINT: the gpu test helpers
namespace cpu = kernels::cpu;

constexpr std::size_t kN = 100003;

struct State {
  std::vector<float> g = normal_vector(kN, 1e-2f, 1);
  std::vector<float> params = normal_vector(kN, 1.0f, 2);
  std::vector<float> a = normal_vector(kN, 1e-2f, 3);  // first state vector (velocity, m, s)
  std::vector<float> b;                                // second (v), non-negative
  State() {
    b = normal_vector(kN, 1e-2f, 4);
    for (float& x : b) x *= x;
    for (float& x : a) x = std::fabs(x);  // s of RMSProp/AdaGrad must be >= 0; harmless for m
  }
};

TEST(ElementwiseOnGpu, SgdAndMomentumAreBitIdentical) {
  State s;
  DeviceBuffer<float> g = to_device(s.g), u = poisoned_device<float>(kN);
  std::vector<float> want = poisoned_host<float>(kN);
  cpu::sgd_update(s.g.data(), want.data(), kN, 0.05f);
  sgd_update(g.data(), u.data(), kN, 0.05f, nullptr);
  EXPECT_BITS_EQ(want, to_host(u.data(), kN));
  for (const bool nesterov : {false, true}) {
    std::vector<float> velocity = s.a;
    DeviceBuffer<float> dv = to_device(velocity);
    cpu::momentum_update(s.g.data(), velocity.data(), want.data(), kN, 0.05f, 0.9f, nesterov);
    momentum_update(g.data(), dv.data(), u.data(), kN, 0.05f, 0.9f, nesterov, nullptr);
    EXPECT_BITS_EQ(want, to_host(u.data(), kN));
    EXPECT_BITS_EQ(velocity, to_host(dv.data(), kN));
  }
}

TEST(ElementwiseOnGpu, AdamIsBitIdentical) {
  State s;
  for (const float decay : {0.0f, 1e-4f}) {
    const cpu::AdamStep step{0.9f, 0.999f, 1e-8f, 0.1f, 0.001f, 0.0031f, 1.02f, decay};
    std::vector<float> m = s.a, v = s.b, want = poisoned_host<float>(kN);
    DeviceBuffer<float> g = to_device(s.g), p = to_device(s.params), dm = to_device(m),
                        dv = to_device(v), u = poisoned_device<float>(kN);
    cpu::adam_update(s.g.data(), s.params.data(), m.data(), v.data(), want.data(), kN, step);
    adam_update(g.data(), p.data(), dm.data(), dv.data(), u.data(), kN, step, nullptr);
    EXPECT_BITS_EQ(want, to_host(u.data(), kN));
    EXPECT_BITS_EQ(m, to_host(dm.data(), kN));
    EXPECT_BITS_EQ(v, to_host(dv.data(), kN));
  }
}

TEST(ElementwiseOnGpu, RmsPropAdaGradAndSubtractAreBitIdentical) {
  State s;
  DeviceBuffer<float> g = to_device(s.g), u = poisoned_device<float>(kN);
  std::vector<float> want = poisoned_host<float>(kN);
  std::vector<float> sq = s.a;
  DeviceBuffer<float> dsq = to_device(sq);
  cpu::rmsprop_update(s.g.data(), sq.data(), want.data(), kN, 0.01f, 0.95f, 0.05f, 1e-8f);
  rmsprop_update(g.data(), dsq.data(), u.data(), kN, 0.01f, 0.95f, 0.05f, 1e-8f, nullptr);
  EXPECT_BITS_EQ(want, to_host(u.data(), kN));
  EXPECT_BITS_EQ(sq, to_host(dsq.data(), kN));

  sq = s.a;
  DeviceBuffer<float> dsq2 = to_device(sq);
  cpu::adagrad_update(s.g.data(), sq.data(), want.data(), kN, 0.01f, 1e-6f);
  adagrad_update(g.data(), dsq2.data(), u.data(), kN, 0.01f, 1e-6f, nullptr);
  EXPECT_BITS_EQ(want, to_host(u.data(), kN));
  EXPECT_BITS_EQ(sq, to_host(dsq2.data(), kN));

  std::vector<float> params = s.params;
  DeviceBuffer<float> dp = to_device(params);
  cpu::subtract(params.data(), want.data(), kN);
  subtract(dp.data(), u.data(), kN, nullptr);
  EXPECT_BITS_EQ(params, to_host(dp.data(), kN));
}

}  // namespace
}  // namespace gradshare::kernels::cuda

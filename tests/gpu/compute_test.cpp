// compute_test.cpp: CudaCompute against the CPU backend (nn::cpu_compute()) on random inputs,
// outputs poisoned with NaN first. Bit for bit: relu/leaky/none forward, every activation
// derivative, bias gradients, im2col, col2im, max pooling (with ties and overlapping windows),
// dropout, multiply, axpy, the arg-max and the correct count. Within a stated tolerance:
//   gemm                     |gpu - cpu| <= 4 k 2^-24 (|alpha| sum|a||b| + |beta c|)  (FP32)
//   elu / tanh / sigmoid     2e-6 relative (expm1f/tanhf/expf round differently)
//   softmax gradient         1e-6 relative + 1e-7 grad_scale; loss sum 1e-12 relative
#include "nn/compute.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "gpu_test_util.h"
#include "kernels/cuda/cuda_compute.h"

namespace gradshare::kernels::cuda {
namespace {

using namespace testing;  // NOLINT: the gpu test helpers
using nn::Activation;

class CudaComputeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { gpu_ = std::make_unique<CudaCompute>(); }
  static void TearDownTestSuite() { gpu_.reset(); }
  static CudaCompute& gpu() { return *gpu_; }
  static nn::Compute& cpu() { return nn::cpu_compute(); }

 private:
  static std::unique_ptr<CudaCompute> gpu_;
};
std::unique_ptr<CudaCompute> CudaComputeTest::gpu_;

// Row-major op(X) element (i, j) of a matrix stored with row stride ld.
float at(const std::vector<float>& x, bool transpose, int ld, int i, int j) {
  return transpose ? x[static_cast<std::size_t>(j) * ld + i]
                   : x[static_cast<std::size_t>(i) * ld + j];
}

TEST_F(CudaComputeTest, GemmMatchesTheCpuWithinFp32Rounding) {
  struct Case {
    int m, n, k;
    float alpha, beta;
  };
  const Case cases[] = {{1, 1, 1, 1.0f, 0.0f},
                        {37, 53, 29, 1.0f, 0.0f},
                        {64, 10, 784, 1.0f, 0.0f},
                        {128, 96, 64, -0.5f, 0.75f},
                        {5, 300, 7, 2.0f, 1.0f}};
  std::uint64_t seed = 1;
  for (const Case& c : cases) {
    for (const bool ta : {false, true}) {
      for (const bool tb : {false, true}) {
        SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k) +
                     " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
        // Padded row strides: the leading dimensions exceed the logical widths.
        const int lda = (ta ? c.m : c.k) + 3, ldb = (tb ? c.k : c.n) + 1, ldc = c.n + 2;
        const std::vector<float> a = normal_vector(std::size_t(ta ? c.k : c.m) * lda, 1.0f, seed++);
        const std::vector<float> b = normal_vector(std::size_t(tb ? c.n : c.k) * ldb, 1.0f, seed++);
        // With beta = 0, C is output only: poisoned on the device, zero for the CPU.
        const std::size_t c_size = std::size_t(c.m) * ldc;
        std::vector<float> want =
            c.beta == 0.0f ? std::vector<float>(c_size, 0.0f) : normal_vector(c_size, 1.0f, seed++);
        const std::vector<float> c0 = want;
        DeviceBuffer<float> da = to_device(a), db = to_device(b);
        DeviceBuffer<float> dc = c.beta == 0.0f ? poisoned_device<float>(c_size) : to_device(want);
        cpu().gemm(ta, tb, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb, c.beta,
                   want.data(), ldc);
        gpu().gemm(ta, tb, c.m, c.n, c.k, c.alpha, da.data(), lda, db.data(), ldb, c.beta,
                   dc.data(), ldc);
        const std::vector<float> got = to_host(dc.data(), want.size());
        for (int i = 0; i < c.m; ++i) {
          for (int j = 0; j < c.n; ++j) {
            double magnitude = 0.0;
            for (int p = 0; p < c.k; ++p) {
              magnitude += std::fabs(double(at(a, ta, lda, i, p)) * at(b, tb, ldb, p, j));
            }
            magnitude = std::fabs(c.alpha) * magnitude;
            if (c.beta != 0.0f) magnitude += std::fabs(c.beta * c0[std::size_t(i) * ldc + j]);
            const std::size_t e = std::size_t(i) * ldc + j;
            ASSERT_LE(std::fabs(double(got[e]) - want[e]), 4.0 * c.k * 0x1p-24 * magnitude + 1e-30)
                << "C(" << i << ", " << j << ")";
          }
        }
      }
    }
  }
}

// The batched GEMM on strided matrices, A shared (stride 0) as the convolution uses it, against
// the CPU's loop of GEMMs: ||gpu - cpu|| / ||cpu|| <= 1e-5; C's padding between the matrices
// stays untouched (poisoned on both sides).
TEST_F(CudaComputeTest, BatchedGemmMatchesTheCpu) {
  const int m = 32, n = 196, k = 288;
  const std::size_t count = 7;
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      SCOPED_TRACE("ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
      const int lda = ta ? m : k, ldb = tb ? k : n, ldc = n;
      const std::size_t stride_b = std::size_t(k) * n + 5, stride_c = std::size_t(m) * n + 3;
      const std::vector<float> a = normal_vector(std::size_t(m) * k, 1.0f, 31);
      const std::vector<float> b = normal_vector(stride_b * count, 1.0f, 32);
      std::vector<float> want = poisoned_host<float>(stride_c * count);
      DeviceBuffer<float> da = to_device(a), db = to_device(b);
      DeviceBuffer<float> dc = to_device(want);
      cpu().gemm_batch(ta, tb, m, n, k, 1.0f, a.data(), lda, 0, b.data(), ldb, stride_b, 0.0f,
                       want.data(), ldc, stride_c, count);
      gpu().gemm_batch(ta, tb, m, n, k, 1.0f, da.data(), lda, 0, db.data(), ldb, stride_b, 0.0f,
                       dc.data(), ldc, stride_c, count);
      const std::vector<float> got = to_host(dc.data(), want.size());
      std::vector<float> want_values, got_values;
      for (std::size_t i = 0; i < count; ++i) {
        for (std::size_t e = 0; e < stride_c; ++e) {
          const std::size_t at = i * stride_c + e;
          if (e < std::size_t(m) * n) {
            want_values.push_back(want[at]);
            got_values.push_back(got[at]);
          } else {
            EXPECT_EQ(std::memcmp(&want[at], &got[at], sizeof(float)), 0) << "padding " << at;
          }
        }
      }
      EXPECT_LT(relative_error(want_values, got_values), 1e-5);
    }
  }
}

TEST_F(CudaComputeTest, BiasActivationMatchesTheCpu) {
  struct Layout {
    std::size_t outer, channels, inner;
  };
  const Layout layouts[] = {{64, 100, 1}, {8, 16, 28 * 28}, {3, 5, 7}};
  for (const Activation activation : {Activation::kNone, Activation::kRelu, Activation::kLeakyRelu,
                                      Activation::kElu, Activation::kTanh, Activation::kSigmoid}) {
    for (const Layout& l : layouts) {
      for (const bool with_bias : {true, false}) {
        SCOPED_TRACE("activation " + std::to_string(int(activation)) + " inner " +
                     std::to_string(l.inner) + " bias " + std::to_string(with_bias));
        const std::size_t n = l.outer * l.channels * l.inner;
        std::vector<float> want = normal_vector(n, 2.0f, n + int(activation));
        want[0] = -0.0f;
        const std::vector<float> bias = normal_vector(l.channels, 1.0f, 7);
        DeviceBuffer<float> dy = to_device(want), dbias = to_device(bias);
        cpu().bias_activation(want.data(), with_bias ? bias.data() : nullptr, l.outer, l.channels,
                              l.inner, activation, 0.3f);
        gpu().bias_activation(dy.data(), with_bias ? dbias.data() : nullptr, l.outer, l.channels,
                              l.inner, activation, 0.3f);
        const std::vector<float> got = to_host(dy.data(), n);
        if (activation == Activation::kElu || activation == Activation::kTanh ||
            activation == Activation::kSigmoid) {
          EXPECT_CLOSE(want, got, 2e-6, 1e-30);
        } else {
          EXPECT_BITS_EQ(want, got);
        }
      }
    }
  }
}

TEST_F(CudaComputeTest, ActivationBackwardIsBitIdentical) {
  const std::size_t n = 100003;
  for (const Activation activation : {Activation::kNone, Activation::kRelu, Activation::kLeakyRelu,
                                      Activation::kElu, Activation::kTanh, Activation::kSigmoid}) {
    SCOPED_TRACE("activation " + std::to_string(int(activation)));
    std::vector<float> y = normal_vector(n, 1.0f, 3);
    if (activation == Activation::kSigmoid) {
      for (float& v : y) v = 1.0f / (1.0f + std::exp(-v));
    }
    std::vector<float> want = normal_vector(n, 1.0f, 4);
    DeviceBuffer<float> dyv = to_device(y), ddy = to_device(want);
    cpu().activation_backward(y.data(), want.data(), n, activation, 0.3f);
    gpu().activation_backward(dyv.data(), ddy.data(), n, activation, 0.3f);
    EXPECT_BITS_EQ(want, to_host(ddy.data(), n));
  }
}

TEST_F(CudaComputeTest, BiasGradientIsBitIdentical) {
  struct Layout {
    std::size_t outer, channels, inner;
  };
  for (const Layout& l :
       {Layout{64, 100, 1}, Layout{100, 16, 28 * 28}, Layout{33, 5, 7}, Layout{2, 3, 8}}) {
    SCOPED_TRACE("inner " + std::to_string(l.inner) + " outer " + std::to_string(l.outer));
    const std::vector<float> dy = normal_vector(l.outer * l.channels * l.inner, 1.0f, l.inner);
    std::vector<float> want = poisoned_host<float>(l.channels);
    DeviceBuffer<float> ddy = to_device(dy);
    DeviceBuffer<float> db = poisoned_device<float>(l.channels);
    cpu().bias_gradient(dy.data(), want.data(), l.outer, l.channels, l.inner);
    gpu().bias_gradient(ddy.data(), db.data(), l.outer, l.channels, l.inner);
    EXPECT_BITS_EQ(want, to_host(db.data(), l.channels));
  }
}

TEST_F(CudaComputeTest, Im2colAndCol2imAreBitIdentical) {
  const nn::ConvGeometry geometries[] = {{1, 28, 28, 5, 1, 2}, {3, 14, 13, 3, 1, 1},
                                         {4, 11, 9, 3, 2, 1},  {2, 10, 10, 1, 1, 0},
                                         {2, 13, 13, 4, 3, 0}, {3, 7, 8, 5, 2, 3}};
  for (const nn::ConvGeometry& g : geometries) {
    for (const std::size_t count : {std::size_t{1}, std::size_t{5}}) {
      SCOPED_TRACE("kernel " + std::to_string(g.kernel) + " stride " + std::to_string(g.stride) +
                   " padding " + std::to_string(g.padding) + ", " + std::to_string(count) +
                   " images");
      const std::size_t image_size = count * g.channels * g.height * g.width;
      const std::size_t col_size = count * g.col_rows() * g.col_cols();
      const std::vector<float> image = normal_vector(image_size, 1.0f, 1);
      std::vector<float> want_col = poisoned_host<float>(col_size);
      DeviceBuffer<float> dimage = to_device(image);
      DeviceBuffer<float> dcol = poisoned_device<float>(col_size);
      cpu().im2col(image.data(), g, count, want_col.data());
      gpu().im2col(dimage.data(), g, count, dcol.data());
      EXPECT_BITS_EQ(want_col, to_host(dcol.data(), col_size));

      const std::vector<float> col = normal_vector(col_size, 1.0f, 2);
      std::vector<float> want_image = poisoned_host<float>(image_size);
      DeviceBuffer<float> dcol2 = to_device(col);
      DeviceBuffer<float> dimage2 = poisoned_device<float>(image_size);
      cpu().col2im(col.data(), g, count, want_image.data());
      gpu().col2im(dcol2.data(), g, count, dimage2.data());
      EXPECT_BITS_EQ(want_image, to_host(dimage2.data(), image_size));
    }
  }
}

TEST_F(CudaComputeTest, MaxPoolingIsBitIdentical) {
  const nn::PoolGeometry geometries[] = {
      {28, 28, 2, 2}, {13, 11, 3, 2}, {9, 9, 3, 1}, {7, 6, 2, 3}};
  const std::size_t planes = 37;
  for (const nn::PoolGeometry& g : geometries) {
    SCOPED_TRACE("pool " + std::to_string(g.pool) + " stride " + std::to_string(g.stride));
    const std::size_t in = planes * g.height * g.width;
    const std::size_t out = planes * g.out_height() * g.out_width();
    std::vector<float> x = normal_vector(in, 1.0f, 3);
    for (float& v : x) v = std::round(v * 2.0f);  // few levels: ties inside windows
    std::vector<float> want_y = poisoned_host<float>(out);
    std::vector<std::int32_t> want_arg = poisoned_host<std::int32_t>(out);
    DeviceBuffer<float> dx = to_device(x), dy = poisoned_device<float>(out);
    DeviceBuffer<std::int32_t> darg = poisoned_device<std::int32_t>(out);
    cpu().maxpool_forward(x.data(), g, planes, want_y.data(), want_arg.data());
    gpu().maxpool_forward(dx.data(), g, planes, dy.data(), darg.data());
    EXPECT_BITS_EQ(want_y, to_host(dy.data(), out));
    EXPECT_BITS_EQ(want_arg, to_host(darg.data(), out));

    const std::vector<float> grad = normal_vector(out, 1.0f, 4);
    std::vector<float> want_dx = poisoned_host<float>(in);
    DeviceBuffer<float> dgrad = to_device(grad), ddx = poisoned_device<float>(in);
    cpu().maxpool_backward(grad.data(), want_arg.data(), g, planes, want_dx.data());
    gpu().maxpool_backward(dgrad.data(), darg.data(), g, planes, ddx.data());
    EXPECT_BITS_EQ(want_dx, to_host(ddx.data(), in));
  }
}

TEST_F(CudaComputeTest, DropoutMultiplyAndAxpyAreBitIdentical) {
  const std::size_t n = 100003;
  const std::vector<float> x = normal_vector(n, 1.0f, 5), z = normal_vector(n, 1.0f, 6);
  DeviceBuffer<float> dx = to_device(x), dz = to_device(z);
  for (const float rate : {0.0f, 0.25f, 0.5f}) {
    std::vector<float> want_y = poisoned_host<float>(n), want_mask = poisoned_host<float>(n);
    DeviceBuffer<float> dy = poisoned_device<float>(n), dmask = poisoned_device<float>(n);
    cpu().dropout_forward(x.data(), want_y.data(), want_mask.data(), n, rate, 0x1234567);
    gpu().dropout_forward(dx.data(), dy.data(), dmask.data(), n, rate, 0x1234567);
    EXPECT_BITS_EQ(want_y, to_host(dy.data(), n));
    EXPECT_BITS_EQ(want_mask, to_host(dmask.data(), n));
  }
  std::vector<float> want = poisoned_host<float>(n);
  DeviceBuffer<float> dout = poisoned_device<float>(n);
  cpu().multiply(x.data(), z.data(), want.data(), n);
  gpu().multiply(dx.data(), dz.data(), dout.data(), n);
  EXPECT_BITS_EQ(want, to_host(dout.data(), n));
  want = z;
  cpu().axpy(0.37f, x.data(), want.data(), n);
  gpu().axpy(0.37f, dx.data(), dz.data(), n);
  EXPECT_BITS_EQ(want, to_host(dz.data(), n));
}

TEST_F(CudaComputeTest, SoftmaxCrossEntropyMatchesTheCpu) {
  for (const std::size_t classes :
       {std::size_t{1}, std::size_t{10}, std::size_t{37}, std::size_t{1000}}) {
    SCOPED_TRACE("classes " + std::to_string(classes));
    const std::size_t batch = 301;
    std::vector<float> logits = normal_vector(batch * classes, 3.0f, classes);
    for (std::size_t i = 0; i < logits.size(); i += 7) logits[i] = std::round(logits[i]);  // ties
    std::vector<std::int32_t> labels(batch);
    core::Rng rng(classes);
    for (auto& label : labels) label = static_cast<std::int32_t>(rng.below(classes));
    const float grad_scale = 1.0f / static_cast<float>(batch);
    std::vector<float> want_grad = poisoned_host<float>(batch * classes);
    std::vector<std::int32_t> want_pred = poisoned_host<std::int32_t>(batch);
    DeviceBuffer<float> dlogits = to_device(logits);
    DeviceBuffer<std::int32_t> dlabels = to_device(labels);
    DeviceBuffer<float> dgrad = poisoned_device<float>(batch * classes);
    DeviceBuffer<std::int32_t> dpred = poisoned_device<std::int32_t>(batch);
    const auto want = cpu().softmax_cross_entropy(logits.data(), labels.data(), batch, classes,
                                                  grad_scale, want_grad.data(), want_pred.data());
    const auto got = gpu().softmax_cross_entropy(dlogits.data(), dlabels.data(), batch, classes,
                                                 grad_scale, dgrad.data(), dpred.data());
    EXPECT_NEAR(got.loss_sum, want.loss_sum, 1e-12 * std::fabs(want.loss_sum) + 1e-12);
    EXPECT_EQ(got.correct, want.correct);
    EXPECT_BITS_EQ(want_pred, to_host(dpred.data(), batch));
    EXPECT_CLOSE(want_grad, to_host(dgrad.data(), batch * classes), 1e-6, 1e-7 * grad_scale);

    // Without labels: predictions only, zero sums; a NaN first logit predicts class 0.
    logits[0] = std::nanf("");
    logits[classes] = -std::numeric_limits<float>::infinity();
    DeviceBuffer<float> dlogits2 = to_device(logits);
    const auto plain = cpu().softmax_cross_entropy(logits.data(), nullptr, batch, classes, 1.0f,
                                                   nullptr, want_pred.data());
    const auto gplain = gpu().softmax_cross_entropy(dlogits2.data(), nullptr, batch, classes, 1.0f,
                                                    nullptr, dpred.data());
    EXPECT_EQ(gplain.loss_sum, plain.loss_sum);
    EXPECT_EQ(gplain.correct, plain.correct);
    EXPECT_BITS_EQ(want_pred, to_host(dpred.data(), batch));
  }
}

}  // namespace
}  // namespace gradshare::kernels::cuda

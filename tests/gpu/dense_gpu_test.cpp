// dense_gpu_test.cpp: the Dense layer, unchanged, computing through CudaCompute on device
// buffers (it has no work buffers of its own, so it runs on the GPU today) against the same
// layer on the CPU backend: output, parameter gradients and input gradient agree to FP32 GEMM
// rounding, ||gpu - cpu|| / ||cpu|| <= 1e-5 (method: float32 lands far under 1e-3).
#include <gtest/gtest.h>

#include <vector>

#include "gpu_test_util.h"
#include "kernels/cuda/cuda_compute.h"
#include "nn/dense.h"

namespace gradshare::kernels::cuda {
namespace {

using namespace testing;  // NOLINT: the gpu test helpers

TEST(DenseOnGpu, ForwardAndBackwardMatchTheCpu) {
  CudaCompute gpu;
  const std::size_t batch = 64, inputs = 784, units = 256;
  for (const nn::Activation activation : {nn::Activation::kRelu, nn::Activation::kTanh}) {
    nn::Dense layer({static_cast<std::int64_t>(inputs)}, units, activation, 0.0f);
    const std::size_t count = layer.parameter_count();
    const std::vector<float> params = normal_vector(count, 0.05f, 1);
    const std::vector<float> x = normal_vector(batch * inputs, 1.0f, 2);
    const std::vector<float> dy0 = normal_vector(batch * units, 1.0f, 3);

    std::vector<float> y(batch * units), grads(count), dx(batch * inputs), dy = dy0;
    nn::Pass pass{&nn::cpu_compute(), params.data(), grads.data(), batch, true, nullptr};
    layer.forward(pass, x.data(), y.data());
    layer.backward(pass, x.data(), y.data(), dy.data(), dx.data());

    DeviceBuffer<float> dparams = to_device(params), dx_in = to_device(x), ddy = to_device(dy0);
    DeviceBuffer<float> dyv = poisoned_device<float>(batch * units);
    DeviceBuffer<float> dgrads = poisoned_device<float>(count);
    DeviceBuffer<float> ddx = poisoned_device<float>(batch * inputs);
    nn::Pass gpass{&gpu, dparams.data(), dgrads.data(), batch, true, nullptr};
    layer.forward(gpass, dx_in.data(), dyv.data());
    layer.backward(gpass, dx_in.data(), dyv.data(), ddy.data(), ddx.data());
    gpu.synchronize();

    EXPECT_LT(relative_error(y, to_host(dyv.data(), y.size())), 1e-5);
    EXPECT_LT(relative_error(grads, to_host(dgrads.data(), count)), 1e-5);
    EXPECT_LT(relative_error(dx, to_host(ddx.data(), dx.size())), 1e-5);
  }
}

}  // namespace
}  // namespace gradshare::kernels::cuda

// gpu_test_main.cpp: main() of every gpu test binary. Without a usable GPU it prints
// "skipped: no GPU" and why, then exits with GS_GPU_SKIP_CODE, which ctest's SKIP_RETURN_CODE
// reports as Skipped; with one it names the device and runs the GoogleTest cases.
#include <gtest/gtest.h>

#include <cstdio>

#include "kernels/cuda/device.h"

int main(int argc, char** argv) {
  namespace cuda = gradshare::kernels::cuda;
  if (!cuda::gpu_available()) {
    std::printf("skipped: no GPU\n%s\n", cuda::describe_device().c_str());
    return GS_GPU_SKIP_CODE;
  }
  std::printf("GPU: %s\n", cuda::describe_device().c_str());
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

// device_test.cpp: GPU detection never crashes and explains itself, and require_cuda_device()
// turns "no GPU" and "built without CUDA" into a UserError naming compute.device. Runs on
// every machine; which branch it checks depends on the build and the machine.
#include "kernels/cuda/device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "core/errors.h"

namespace gradshare::kernels::cuda {
namespace {

using ::testing::HasSubstr;

// The message require_cuda_device() throws, or "" when it does not.
std::string require_message() {
  try {
    require_cuda_device();
  } catch (const core::UserError& e) {
    return e.what();
  }
  return "";
}

TEST(GpuDevice, DetectionAnswersWithoutThrowing) {
  bool available = false;
  EXPECT_NO_THROW(available = gpu_available());
  std::string description;
  EXPECT_NO_THROW(description = describe_device());
  EXPECT_FALSE(description.empty());
  if (available) {
    EXPECT_THAT(description, HasSubstr("sm_"));
  } else {
    EXPECT_THAT(description, ::testing::AnyOf(HasSubstr("no GPU"), HasSubstr("without CUDA")));
  }
}

TEST(GpuDevice, RequireCudaDeviceExplainsWhatIsMissing) {
  const std::string message = require_message();
#if defined(GRADSHARE_HAVE_CUDA)
  if (gpu_available()) {
    EXPECT_EQ(message, "");
  } else {
    EXPECT_THAT(message, HasSubstr("compute.device is cuda but no GPU is visible"));
    EXPECT_THAT(message, HasSubstr("cudaGetDeviceCount"));
  }
#else
  EXPECT_FALSE(gpu_available());
  EXPECT_THAT(message,
              HasSubstr("compute.device is cuda but this gradshare was built without CUDA"));
#endif
}

}  // namespace
}  // namespace gradshare::kernels::cuda

// gpu_test_util.h: helpers of the gpu tests: device copies of host vectors, poisoned device
// outputs (every byte 0xFF unless told otherwise: a NaN for floats, -1 for ints, so an unwritten
// element shows), random inputs, and comparisons bit for bit or within a stated tolerance.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/rng.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_buffer.h"

namespace gradshare::kernels::cuda::testing {

inline constexpr int kPoison = 0xFF;

template <class T>
DeviceBuffer<T> to_device(const std::vector<T>& host) {
  DeviceBuffer<T> device(std::max<std::size_t>(host.size(), 1));
  if (!host.empty()) {
    GS_CUDA_CHECK(
        cudaMemcpy(device.data(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  return device;
}

template <class T>
std::vector<T> to_host(const T* device, std::size_t n) {
  GS_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<T> host(n);
  if (n > 0) {
    GS_CUDA_CHECK(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost));
  }
  return host;
}

// A device buffer of n elements with every byte `byte`, and its host twin.
template <class T>
DeviceBuffer<T> poisoned_device(std::size_t n, int byte = kPoison) {
  DeviceBuffer<T> device(std::max<std::size_t>(n, 1));
  GS_CUDA_CHECK(cudaMemset(device.data(), byte, std::max<std::size_t>(n, 1) * sizeof(T)));
  return device;
}
template <class T>
std::vector<T> poisoned_host(std::size_t n, int byte = kPoison) {
  std::vector<T> host(n);
  if (n > 0) std::memset(host.data(), byte, n * sizeof(T));
  return host;
}

inline std::vector<float> normal_vector(std::size_t n, float scale, std::uint64_t seed) {
  core::Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = scale * static_cast<float>(rng.normal());
  return v;
}

// Index of the first element whose bytes differ, or "" when all are equal.
template <class T>
std::string first_difference(const std::vector<T>& expected, const std::vector<T>& actual) {
  if (expected.size() != actual.size()) {
    return "sizes " + std::to_string(expected.size()) + " vs " + std::to_string(actual.size());
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (std::memcmp(&expected[i], &actual[i], sizeof(T)) != 0) {
      return "element " + std::to_string(i) + ": expected " + std::to_string(expected[i]) +
             ", got " + std::to_string(actual[i]);
    }
  }
  return "";
}

#define EXPECT_BITS_EQ(expected, actual) \
  EXPECT_EQ(::gradshare::kernels::cuda::testing::first_difference(expected, actual), "")

// Every |actual - expected| <= relative * |expected| + absolute, and no NaN where none is expected.
inline std::string first_outside(const std::vector<float>& expected,
                                 const std::vector<float>& actual, double relative,
                                 double absolute) {
  if (expected.size() != actual.size()) return "sizes differ";
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double e = expected[i], a = actual[i];
    if (std::isnan(e) && std::isnan(a)) continue;
    if (!(std::fabs(a - e) <= relative * std::fabs(e) + absolute)) {
      return "element " + std::to_string(i) + ": expected " + std::to_string(e) + ", got " +
             std::to_string(a);
    }
  }
  return "";
}

#define EXPECT_CLOSE(expected, actual, relative, absolute)                                      \
  EXPECT_EQ(                                                                                    \
      ::gradshare::kernels::cuda::testing::first_outside(expected, actual, relative, absolute), \
      "")

// ||actual - expected|| / ||expected|| in double (the method's relative error).
inline double relative_error(const std::vector<float>& expected, const std::vector<float>& actual) {
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double d = static_cast<double>(actual[i]) - expected[i];
    diff += d * d;
    norm += static_cast<double>(expected[i]) * expected[i];
  }
  return norm == 0.0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

}  // namespace gradshare::kernels::cuda::testing

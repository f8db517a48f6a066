// device_buffer.h: RAII owners of GPU memory (DeviceBuffer, cudaMalloc) and of page-locked host
// memory (PinnedBuffer, cudaMallocHost: the staging area for asynchronous copies and MPI).
// Both are move-only arrays of T that never shrink; reserve(n) grows them, dropping contents.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "kernels/cuda/cuda_check.h"

namespace gradshare::kernels::cuda {

// Memory provides static allocate(bytes) -> void* (throws) and release(void*) noexcept.
template <class T, class Memory>
class BasicBuffer {
 public:
  BasicBuffer() = default;
  explicit BasicBuffer(std::size_t n) { reserve(n); }
  ~BasicBuffer() { Memory::release(data_); }
  BasicBuffer(const BasicBuffer&) = delete;
  BasicBuffer& operator=(const BasicBuffer&) = delete;
  BasicBuffer(BasicBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  BasicBuffer& operator=(BasicBuffer&& other) noexcept {
    if (this != &other) {
      Memory::release(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }

  // At least n elements; when it has to grow, the old contents are dropped.
  T* reserve(std::size_t n) {
    if (n > size_) {
      Memory::release(data_);
      data_ = nullptr;
      size_ = 0;
      data_ = static_cast<T*>(Memory::allocate(n * sizeof(T)));
      size_ = n;
    }
    return data_;
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

struct DeviceMemory {
  static void* allocate(std::size_t bytes) {
    void* p = nullptr;
    GS_CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
  }
  static void release(void* p) noexcept {
    if (p != nullptr) cudaFree(p);  // nothing to do about a failure while releasing
  }
};

struct PinnedMemory {
  static void* allocate(std::size_t bytes) {
    void* p = nullptr;
    GS_CUDA_CHECK(cudaMallocHost(&p, bytes));
    return p;
  }
  static void release(void* p) noexcept {
    if (p != nullptr) cudaFreeHost(p);
  }
};

template <class T>
using DeviceBuffer = BasicBuffer<T, DeviceMemory>;
template <class T>
using PinnedBuffer = BasicBuffer<T, PinnedMemory>;

}  // namespace gradshare::kernels::cuda

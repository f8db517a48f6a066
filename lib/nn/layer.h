// layer.h: what every layer provides to the Model: its shapes, its parameter blocks (in the
// order they sit in the flat buffer), forward and backward through a Compute backend.
// Layers own no parameters: the Model passes pointers into its one flat buffer on each call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/rng.h"
#include "nn/compute.h"

namespace gradshare::nn {

// Shape of one sample, without the batch dimension: [features] or [channels, height, width].
using Shape = std::vector<std::int64_t>;
std::size_t element_count(const Shape& shape);
std::string shape_string(const Shape& shape);  // "32x14x14"

// One parameter tensor of a layer. fan_in / fan_out feed the initialisers.
struct ParameterBlock {
  std::string role;  // "kernel" | "bias"
  Shape shape;
  std::size_t fan_in = 0, fan_out = 0;
};

// Everything a layer needs for one pass besides its input and output.
struct Pass {
  Compute* compute = nullptr;
  const float* params = nullptr;  // this layer's first parameter in the flat buffer
  float* grads = nullptr;         // the same position in the gradient buffer
  std::size_t batch = 0;
  bool training = false;
  core::Rng* rng = nullptr;  // dropout draws; only used when training
};

// A growable work buffer in a backend's memory (Compute::allocate) that copies as empty, so a
// cloned layer or model allocates its own on first use and no pass allocates once the largest
// batch has been seen. Contents are kept only while it does not grow.
template <class T>
class Scratch {
 public:
  Scratch() = default;
  ~Scratch() { reset(); }
  Scratch(const Scratch&) {}
  Scratch& operator=(const Scratch& other) {
    if (this != &other) reset();
    return *this;
  }
  Scratch(Scratch&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        compute_(std::exchange(other.compute_, nullptr)) {}
  Scratch& operator=(Scratch&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      compute_ = std::exchange(other.compute_, nullptr);
    }
    return *this;
  }
  // At least n elements in compute's memory.
  T* get(std::size_t n, Compute& compute) {
    if (size_ < n || compute_ != &compute) {
      reset();
      data_ = static_cast<T*>(compute.allocate(n * sizeof(T)));
      size_ = n;
      compute_ = &compute;
    }
    return data_;
  }

 private:
  void reset() {
    if (compute_ != nullptr) compute_->release(data_);
    data_ = nullptr;
    size_ = 0;
    compute_ = nullptr;
  }
  T* data_ = nullptr;
  std::size_t size_ = 0;
  Compute* compute_ = nullptr;
};

class Layer {
 public:
  Layer(Shape input, Shape output) : input_(std::move(input)), output_(std::move(output)) {}
  virtual ~Layer() = default;
  virtual std::unique_ptr<Layer> clone() const = 0;

  virtual std::string_view type() const = 0;  // "dense", "conv2d", ...
  const Shape& input_shape() const { return input_; }
  const Shape& output_shape() const { return output_; }
  std::size_t input_size() const { return element_count(input_); }
  std::size_t output_size() const { return element_count(output_); }

  virtual std::vector<ParameterBlock> parameter_blocks() const { return {}; }
  std::size_t parameter_count() const;
  virtual Activation activation() const { return Activation::kNone; }

  // True when the output equals the input (flatten; dropout outside training): the Model then
  // hands the input buffer on and calls neither forward nor backward.
  virtual bool passes_through(bool training) const { return false; }

  // x: [batch][input_size], y: [batch][output_size].
  virtual void forward(const Pass& pass, const float* x, float* y) = 0;
  // Writes the parameter gradients (overwriting) and, when dx is not null, dL/dx.
  // x and y are this pass's input and output; dy may be overwritten.
  virtual void backward(const Pass& pass, const float* x, const float* y, float* dy, float* dx) = 0;

 protected:
  Layer(const Layer&) = default;

 private:
  Shape input_, output_;
};

// Owns a layer and deep-copies it, so a Model copies like a value.
class LayerPtr {
 public:
  explicit LayerPtr(std::unique_ptr<Layer> layer) : layer_(std::move(layer)) {}
  LayerPtr(const LayerPtr& other) : layer_(other.layer_->clone()) {}
  LayerPtr& operator=(const LayerPtr& other) {
    if (this != &other) layer_ = other.layer_->clone();
    return *this;
  }
  LayerPtr(LayerPtr&&) noexcept = default;
  LayerPtr& operator=(LayerPtr&&) noexcept = default;
  Layer* operator->() const { return layer_.get(); }
  Layer& operator*() const { return *layer_; }

 private:
  std::unique_ptr<Layer> layer_;
};

}  // namespace gradshare::nn

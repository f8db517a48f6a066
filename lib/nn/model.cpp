// model.cpp: building, checking and running the layer stack.
#include "nn/model.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>

#include "core/errors.h"
#include "nn/init.h"
#include "nn/layer_factory.h"
#include "nn/threads.h"
#include "nn/torchscript_loader.h"

namespace gradshare::nn {
namespace {

// Largest flat buffer the model accepts (2^31 floats = 8 GiB).
constexpr std::size_t kMaxParameters = std::size_t{1} << 31;

Shape checked_input_shape(const std::vector<std::int64_t>& shape) {
  if (shape.size() != 1 && shape.size() != 3)
    throw core::UserError(
        "model.input_shape: expected [features] or [channels, height, width], got [" +
        shape_string(shape) + "]");
  std::int64_t count = 1;
  for (std::int64_t d : shape) {
    if (d < 1)
      throw core::UserError("model.input_shape: sizes must be >= 1, got [" + shape_string(shape) +
                            "]");
    if (__builtin_mul_overflow(count, d, &count) || count > std::numeric_limits<int>::max())
      throw core::UserError("model.input_shape: [" + shape_string(shape) +
                            "] is larger than the supported 2^31 - 1 values per sample");
  }
  return shape;
}

std::size_t checked_classes(std::int64_t classes) {
  if (classes < 2)
    throw core::UserError("model.num_classes: must be >= 2, got " + std::to_string(classes));
  return static_cast<std::size_t>(classes);
}

std::string with_commas(std::size_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

Model Model::build(const config::ModelConfig& spec, std::uint64_t seed) {
  ensure_default_compute_threads();
  if (!spec.torchscript.empty()) return build_module(spec);
  Model model;
  model.input_shape_ = checked_input_shape(spec.input_shape);
  model.num_classes_ = checked_classes(spec.num_classes);
  model.l2_ = static_cast<float>(spec.l2);
  if (spec.layers.empty())
    throw core::UserError("model.layers: empty; list the layers, e.g. [{type: dense, units: " +
                          std::to_string(spec.num_classes) + "}]");

  // Layers, their parameter ranges and views.
  Shape shape = model.input_shape_;
  std::size_t offset = 0;
  model.first_trainable_ = spec.layers.size();
  model.max_width_ = element_count(shape);
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    LayerPtr layer(make_layer(spec.layers[i], shape, i));
    model.offsets_.push_back(offset);
    const std::string name = std::string(layer->type()) + "_" + std::to_string(i);
    for (const ParameterBlock& block : layer->parameter_blocks()) {
      const std::size_t size = element_count(block.shape);
      model.views_.push_back({name, block.role, block.shape, offset, size});
      offset += size;
      if (offset > kMaxParameters)
        throw core::UserError(layer_location(spec.layers[i], i) + ": the model exceeds " +
                              with_commas(kMaxParameters) + " parameters");
    }
    if (layer->parameter_count() > 0 && model.first_trainable_ == spec.layers.size())
      model.first_trainable_ = i;
    shape = layer->output_shape();
    model.max_width_ = std::max(model.max_width_, element_count(shape));
    model.layers_.push_back(std::move(layer));
  }
  if (element_count(shape) != model.num_classes_) {
    throw core::UserError(layer_location(spec.layers.back(), spec.layers.size() - 1) +
                          ": the last layer outputs " + std::to_string(element_count(shape)) +
                          " values but model.num_classes is " + std::to_string(spec.num_classes) +
                          " (end with {type: dense, units: " + std::to_string(spec.num_classes) +
                          "})");
  }

  model.parameters_.assign(offset, 0.0f);
  model.gradients_.assign(offset, 0.0f);
  core::Rng rng = core::Rng::derive(seed, 1);
  for (std::size_t i = 0; i < model.layers_.size(); ++i) {
    const Layer& layer = *model.layers_[i];
    initialise_layer(
        layer, spec.init,
        std::span<float>(model.parameters_).subspan(model.offsets_[i], layer.parameter_count()),
        rng);
  }
  model.outputs_.resize(model.layers_.size());
  model.output_ptrs_.resize(model.layers_.size());
  return model;
}

Model Model::build_module(const config::ModelConfig& spec) {
  if (!spec.layers.empty())
    throw core::UserError("model.layers: set together with model.torchscript; the module is "
                          "the model, so leave model.layers out");
  Model model;
  model.input_shape_ = checked_input_shape(spec.input_shape);
  model.num_classes_ = checked_classes(spec.num_classes);
  model.l2_ = static_cast<float>(spec.l2);
  model.max_width_ = element_count(model.input_shape_);
  model.module_.network =
      load_torchscript(spec.torchscript, model.input_shape_, model.num_classes_, compute_threads());
  const ModuleNetwork& network = *model.module_.network;
  std::size_t count = 0;
  for (const ModuleTensor& tensor : network.parameters()) {
    model.views_.push_back(view_of(tensor));
    count = tensor.offset + tensor.size;
  }
  if (count > kMaxParameters)
    throw core::UserError("model.torchscript: " + spec.torchscript + ": the module exceeds " +
                          with_commas(kMaxParameters) + " parameters");
  model.parameters_.assign(count, 0.0f);
  model.gradients_.assign(count, 0.0f);
  network.read_parameters(model.parameters_.data());
  return model;
}

ParameterView view_of(const ModuleTensor& tensor) {
  const auto dot = tensor.name.rfind('.');
  const bool top = dot == std::string::npos;
  // A 0-dimensional tensor (a learnt scalar, num_batches_tracked) is [1], as in HDF5.
  return {top ? "module" : tensor.name.substr(0, dot), top ? tensor.name : tensor.name.substr(dot + 1),
          tensor.shape.empty() ? Shape{1} : tensor.shape, tensor.offset, tensor.size};
}

ModuleNetwork& Model::bound_module() {
  Module& m = module_;
  if (m.bound_parameters != parameters_.data() || m.bound_gradients != gradients_.data()) {
    m.network->bind(parameters_.data(), gradients_.data());
    m.bound_parameters = parameters_.data();
    m.bound_gradients = gradients_.data();
  }
  return *m.network;
}

const std::vector<ModuleTensor>& Model::buffer_views() const {
  static const std::vector<ModuleTensor> none;
  return is_module() ? module_.network->buffers() : none;
}

std::size_t Model::buffer_count() const {
  const auto& views = buffer_views();
  return views.empty() ? 0 : views.back().offset + views.back().size;
}

std::vector<float> Model::buffers() const {
  std::vector<float> values(buffer_count());
  if (!values.empty()) module_.network->read_buffers(values.data());
  return values;
}

void Model::set_buffers(std::span<const float> values) {
  const std::size_t expected = buffer_count();
  GS_CHECK(values.size() == expected, "set_buffers: " + std::to_string(values.size()) +
                                          " values for " + std::to_string(expected) + " buffers");
  if (!values.empty()) module_.network->write_buffers(values.data());
}

void Model::refresh_statistics(const float* inputs, std::size_t batch, std::size_t count) {
  if (is_module() && batch > 0 && count > 0)
    bound_module().refresh_statistics(inputs, batch, count);
}

void Model::save_module(const std::string& path, const std::string& metadata_name,
                        const std::string& metadata) const {
  GS_CHECK(is_module(), "save_module: a built-in model is no module");
  const_cast<Model*>(this)->bound_module().save(path, metadata_name, metadata);
}

void Model::swap_parameters(std::vector<float>& other) {
  GS_CHECK(other.size() == parameters_.size(),
           "swap_parameters: " + std::to_string(other.size()) + " values for " +
               std::to_string(parameters_.size()) + " parameters");
  parameters_.swap(other);
}

Pass Model::pass_for(std::size_t layer, std::size_t batch, bool training, core::Rng* rng) {
  Pass pass;
  pass.compute = &compute();
  pass.params = active_parameters_ + offsets_[layer];
  pass.grads = active_gradients_ + offsets_[layer];
  pass.batch = batch;
  pass.training = training;
  pass.rng = rng;
  return pass;
}

const float* Model::forward(const float* inputs, std::size_t batch, bool training, core::Rng* rng) {
  const float* x = inputs;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    Layer& layer = *layers_[i];
    if (!layer.passes_through(training)) {
      float* y = outputs_[i].get(batch * layer.output_size(), compute());
      layer.forward(pass_for(i, batch, training, rng), x, y);
      x = y;
    }
    output_ptrs_[i] = x;
  }
  return x;
}

void Model::backward(const float* inputs, std::size_t batch) {
  // dL/dlogits is in grad_a_; each layer's input gradient goes to the other buffer.
  float* buffers[2] = {grad_a_.get(batch * max_width_, compute()),
                       grad_b_.get(batch * max_width_, compute())};
  int current = 0;
  for (std::size_t i = layers_.size(); i-- > first_trainable_;) {
    Layer& layer = *layers_[i];
    if (layer.passes_through(true)) continue;
    float* dx = i > first_trainable_ ? buffers[1 - current] : nullptr;
    const float* x = i == 0 ? inputs : output_ptrs_[i - 1];
    layer.backward(pass_for(i, batch, true, nullptr), x, output_ptrs_[i], buffers[current], dx);
    current = 1 - current;
  }
  if (l2_ > 0.0f) {
    for (const ParameterView& view : views_) {
      if (view.role == "kernel")
        compute().axpy(l2_, active_parameters_ + view.offset, active_gradients_ + view.offset,
                       view.size);
    }
  }
}

void Model::check_labels(const std::int32_t* labels, std::size_t batch) const {
  for (std::size_t b = 0; b < batch; ++b) {
    if (labels[b] < 0 || static_cast<std::size_t>(labels[b]) >= num_classes_)
      throw core::UserError("label " + std::to_string(labels[b]) + " of sample " +
                            std::to_string(b) + " in the batch is outside [0, " +
                            std::to_string(num_classes_) + ") (model.num_classes)");
  }
}

BatchResult Model::train_batch(const float* inputs, const std::int32_t* labels, std::size_t batch,
                               core::Rng& rng) {
  GS_CHECK(batch > 0 && inputs != nullptr && labels != nullptr, "train_batch needs a batch");
  GS_CHECK(batch <= static_cast<std::size_t>(std::numeric_limits<int>::max()) / max_width_,
           "batch too large");
  check_labels(labels, batch);
  if (is_module()) {
    ModuleNetwork& network = bound_module();
    std::fill(gradients_.begin(), gradients_.end(), 0.0f);  // backward adds into them
    const BatchResult result = network.train_batch(inputs, labels, batch, rng.next());
    if (l2_ > 0.0f) {  // weight decay on weights (two or more dimensions), not biases or norms
      for (const ParameterView& view : views_) {
        if (view.shape.size() >= 2)
          cpu_compute().axpy(l2_, parameters_.data() + view.offset, gradients_.data() + view.offset,
                         view.size);
      }
    }
    return result;
  }
  const Staged staged = stage(inputs, labels, batch);
  const float* logits = forward(staged.inputs, batch, true, &rng);
  float* dlogits = grad_a_.get(batch * max_width_, compute());
  const LossSums sums =
      compute().softmax_cross_entropy(logits, staged.labels, batch, num_classes_,
                                      1.0f / static_cast<float>(batch), dlogits, nullptr);
  backward(staged.inputs, batch);
  if (active_gradients_ != gradients_.data())
    compute().download(gradients_.data(), active_gradients_, gradients_.size() * sizeof(float));
  return {sums.loss_sum / static_cast<double>(batch), sums.correct};
}

BatchResult Model::evaluate_batch(const float* inputs, const std::int32_t* labels,
                                  std::size_t batch, std::int32_t* predicted) {
  if (batch == 0) return {};
  GS_CHECK(inputs != nullptr, "evaluate_batch needs inputs");
  GS_CHECK(batch <= static_cast<std::size_t>(std::numeric_limits<int>::max()) / max_width_,
           "batch too large");
  if (labels != nullptr) check_labels(labels, batch);
  if (is_module()) return bound_module().evaluate_batch(inputs, labels, batch, predicted);
  const Staged staged = stage(inputs, labels, batch);
  const float* logits = forward(staged.inputs, batch, false, nullptr);
  std::int32_t* classes = compute().computes_in_host_memory() || predicted == nullptr
                              ? predicted
                              : staged_predicted_.get(batch, compute());
  const LossSums sums = compute().softmax_cross_entropy(logits, staged.labels, batch,
                                                        num_classes_, 0.0f, nullptr, classes);
  if (classes != predicted) compute().download(predicted, classes, batch * sizeof(std::int32_t));
  return {sums.loss_sum / static_cast<double>(batch), sums.correct};
}

Model::Staged Model::stage(const float* inputs, const std::int32_t* labels, std::size_t batch) {
  Compute& c = compute();
  if (c.computes_in_host_memory()) {
    active_parameters_ = parameters_.data();
    active_gradients_ = gradients_.data();
    return {inputs, labels};
  }
  const std::size_t count = parameters_.size(), values = batch * sample_size();
  float* parameters = staged_parameters_.get(count, c);
  c.upload(parameters, parameters_.data(), count * sizeof(float));
  active_parameters_ = parameters;
  active_gradients_ = staged_gradients_.get(count, c);
  float* staged_inputs = staged_inputs_.get(values, c);
  c.upload(staged_inputs, inputs, values * sizeof(float));
  std::int32_t* staged_labels = nullptr;
  if (labels != nullptr) {
    staged_labels = staged_labels_.get(batch, c);
    c.upload(staged_labels, labels, batch * sizeof(std::int32_t));
  }
  return {staged_inputs, staged_labels};
}

std::string Model::summary() const {
  std::string out;
  char line[160];
  if (is_module()) {
    for (const ModuleTensor& tensor : module_.network->parameters()) {
      std::snprintf(line, sizeof(line), "%-40s %-14s %12s\n", tensor.name.c_str(),
                    shape_string(tensor.shape).c_str(), with_commas(tensor.size).c_str());
      out += line;
    }
    const std::size_t buffered = buffer_count();
    if (buffered > 0) {
      std::snprintf(line, sizeof(line), "%-55s %12s buffer values (%zu tensors)\n", "buffers",
                    with_commas(buffered).c_str(), buffer_views().size());
      out += line;
    }
    std::snprintf(line, sizeof(line), "%-55s %12s parameters\n", "total",
                  with_commas(parameters_.size()).c_str());
    return out + line;
  }
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Layer& layer = *layers_[i];
    const std::string name = std::string(layer.type()) + "_" + std::to_string(i);
    std::snprintf(line, sizeof(line), "%-14s %-11s %-14s %12s\n", name.c_str(),
                  activation_name(layer.activation()), shape_string(layer.output_shape()).c_str(),
                  with_commas(layer.parameter_count()).c_str());
    out += line;
  }
  std::snprintf(line, sizeof(line), "%-41s %12s parameters\n", "total",
                with_commas(parameters_.size()).c_str());
  return out + line;
}

}  // namespace gradshare::nn

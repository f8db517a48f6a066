// model.h: a network built from config::ModelConfig, ending in softmax + cross-entropy:
// either gradshare's own layer stack (model.layers) or the user's module (model.torchscript,
// run by libtorch through nn::ModuleNetwork; see module_network.h). All parameters live in ONE contiguous float32 buffer (layer by layer, kernel
// then bias) with per-tensor views; the gradient buffer has the same layout. That flat vector
// is what gradient sharing, averaging, checkpoints and the parameter server move around.
// A Model copies like a value (workers and the master each hold a replica); work buffers are
// not copied but grow on first use, so no pass allocates once the largest batch has been seen.
// A Model is not thread-safe; give each thread its own copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "config/experiment_config.h"
#include "core/rng.h"
#include "nn/compute.h"
#include "nn/layer.h"
#include "nn/module_network.h"

namespace gradshare::nn {

struct ParameterView {
  std::string layer;                 // "<type>_<index in model.layers>", e.g. "dense_0", "conv2d_2";
                                     // a module's dotted path, e.g. "stage1.bn1" ("module" at the top)
  std::string role;                  // "kernel" | "bias"; a module's own name ("weight", "bias", ...)
  std::vector<std::int64_t> shape;   // dense kernel [in, out]; conv2d kernel [out, in, k, k]
  std::size_t offset = 0, size = 0;  // in floats, into parameters() / gradients()
};

// A module tensor's view: its dotted name split at the last dot into layer ("module" at the
// top) and role.
ParameterView view_of(const ModuleTensor& tensor);

class Model {
 public:
  // Builds and checks the layers (UserError naming the entry, e.g. "model.layers[2] (conv2d,
  // line 14): kernel 5 larger than input 4x4") and initialises the weights from
  // Rng::derive(seed, 1). The last layer must output num_classes values. With
  // model.torchscript the module is loaded instead (torchscript_loader.h says what it checks)
  // and its saved values are the initial parameters; `threads` is libtorch's per process.
  static Model build(const config::ModelConfig& spec, std::uint64_t seed);

  std::size_t parameter_count() const { return parameters_.size(); }
  std::span<float> parameters() { return parameters_; }
  std::span<const float> parameters() const { return parameters_; }
  std::span<float> gradients() { return gradients_; }
  std::span<const float> gradients() const { return gradients_; }
  const std::vector<ParameterView>& parameter_views() const { return views_; }
  // Exchanges the parameter buffer with `other` (the same size, else core::RuntimeError): a
  // caller that trains one step at other parameters swaps them in and back without a copy.
  void swap_parameters(std::vector<float>& other);

  // Forward + backward on inputs [batch][sample_size()] with labels in [0, num_classes).
  // Overwrites gradients() with the batch-mean gradient plus l2 * w on kernels. Dropout masks
  // are drawn from rng. A label out of range is a UserError.
  BatchResult train_batch(const float* inputs, const std::int32_t* labels, std::size_t batch,
                          core::Rng& rng);
  // Inference (dropout off). labels may be null (then loss and correct are 0); predicted
  // (nullable) receives the arg-max class of each sample.
  BatchResult evaluate_batch(const float* inputs, const std::int32_t* labels, std::size_t batch,
                             std::int32_t* predicted);

  // Computes on `compute` from now on (the CPU's until then); it must outlive this model, and a
  // copy of the model computes on the CPU. Off host memory (the GPU) each train_batch and
  // evaluate_batch uploads the parameters and the batch and train_batch downloads the
  // gradients, so parameters() and gradients() stay the host vectors every caller works on.
  void compute_on(Compute& compute) { backend_.compute = &compute; }
  bool computes_on_host() const { return backend_.compute->computes_in_host_memory(); }

  // A TorchScript module's state besides its parameters (batch norm's running statistics,
  // num_batches_tracked as floats), in buffer_views() order; empty for built-in models.
  bool is_module() const { return module_.network != nullptr; }
  const std::vector<ModuleTensor>& buffer_views() const;
  std::size_t buffer_count() const;
  std::vector<float> buffers() const;
  void set_buffers(std::span<const float> values);  // buffers().size() values
  // Sets the running statistics (batch norm) to their average over `count` batches of `batch`
  // samples (inputs: one batch after another), at the current parameters.
  void refresh_statistics(const float* inputs, std::size_t batch, std::size_t count);
  // Saves the module (torch.jit.load opens it) with its current parameters and buffers and
  // `metadata` stored beside it as extra file `metadata_name`. Only for is_module().
  void save_module(const std::string& path, const std::string& metadata_name,
                   const std::string& metadata) const;

  // One line per layer (name, activation, output shape, parameters) and a total line.
  std::string summary() const;
  std::size_t sample_size() const { return element_count(input_shape_); }
  std::size_t num_classes() const { return num_classes_; }

 private:
  Model() = default;
  static Model build_module(const config::ModelConfig& spec);
  // The module's tensors are views of parameters_ and gradients_: bind them again after either
  // moved (a copy of the Model, swap_parameters).
  ModuleNetwork& bound_module();
  // Runs every layer; returns the logits [batch][num_classes].
  const float* forward(const float* inputs, std::size_t batch, bool training, core::Rng* rng);
  // Backpropagates dL/dlogits, which forward's caller left in grad_a_.
  void backward(const float* inputs, std::size_t batch);
  void check_labels(const std::int32_t* labels, std::size_t batch) const;
  // Where this call computes: the host vectors, or their copies in the backend's memory with
  // the batch uploaded there (labels may be null).
  struct Staged {
    const float* inputs;
    const std::int32_t* labels;
  };
  Staged stage(const float* inputs, const std::int32_t* labels, std::size_t batch);
  Compute& compute() const { return *backend_.compute; }
  Pass pass_for(std::size_t layer, std::size_t batch, bool training, core::Rng* rng);

  Shape input_shape_;
  std::size_t num_classes_ = 0;
  float l2_ = 0.0f;
  // The backend; a copy of a Model gets the CPU's (the original's belongs to its owner).
  struct Backend {
    Compute* compute = &cpu_compute();
    Backend() = default;
    Backend(const Backend&) {}
    Backend& operator=(const Backend&) {
      compute = &cpu_compute();
      return *this;
    }
    Backend(Backend&&) noexcept = default;
    Backend& operator=(Backend&&) noexcept = default;
  } backend_;
  // The user's module, when model.torchscript names one (then layers_ is empty). A copy of the
  // Model clones it, bound to nothing until its first pass.
  struct Module {
    std::unique_ptr<ModuleNetwork> network;
    const float* bound_parameters = nullptr;
    const float* bound_gradients = nullptr;
    Module() = default;
    Module(const Module& other) : network(other.network ? other.network->clone() : nullptr) {}
    Module& operator=(const Module& other) {
      if (this != &other) *this = Module(other);
      return *this;
    }
    Module(Module&&) noexcept = default;
    Module& operator=(Module&&) noexcept = default;
  } module_;
  std::vector<LayerPtr> layers_;
  std::vector<std::size_t> offsets_;  // first parameter of each layer
  std::size_t first_trainable_ = 0;   // no input gradient is needed at or before this layer
  std::vector<float> parameters_, gradients_;
  std::vector<ParameterView> views_;
  std::size_t max_width_ = 0;  // largest per-sample activation (for the gradient buffers)

  // Work buffers (copied as empty).
  std::vector<Scratch<float>> outputs_;    // each layer's output
  std::vector<const float*> output_ptrs_;  // where each layer's output is in this pass
  Scratch<float> grad_a_, grad_b_;         // ping-pong buffers for dL/d(activation)
  // The parameters and gradients this call computes with (the host vectors or their copies),
  // and the copies with the batch when the backend computes off host memory.
  const float* active_parameters_ = nullptr;
  float* active_gradients_ = nullptr;
  Scratch<float> staged_parameters_, staged_gradients_, staged_inputs_;
  Scratch<std::int32_t> staged_labels_, staged_predicted_;
};

}  // namespace gradshare::nn

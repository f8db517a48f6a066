// module_network.h: a network gradshare does not build itself: the user's module, run by the
// library it was written for (TorchScript through libtorch, lib/torch/).
//
// Contract with nn::Model, which owns the state every strategy moves:
//   - parameters: the module's trainable float tensors, in the module's order, laid end to end
//     in Model's flat parameter vector. bind() makes each module parameter a view of its range
//     and its gradient a view of the same range of the flat gradient vector; no copy per step.
//     Model calls bind() again whenever either vector moved (a copy, swap_parameters).
//   - buffers: the module's other tensors (batch norm's running mean and variance,
//     num_batches_tracked, frozen parameters). They stay in the module; read_buffers and
//     write_buffers copy them as floats in buffers() order, for checkpoints and the strategies.
//   - train_batch: train mode, forward, mean softmax cross-entropy of the logits
//     [batch, classes], backward; the gradient overwrites the bound gradient vector.
//     evaluate_batch: eval mode, no autograd. refresh_statistics: running statistics as the
//     plain average of what `count` batches give (see the implementation), nothing else.
// Implementations report failures as std::exception (they may live in a library loaded at
// run time); Model's loader turns them into errors that name model.torchscript.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gradshare::nn {

struct BatchResult {
  double loss = 0.0;         // mean cross-entropy over the batch, WITHOUT the L2 term
  std::int64_t correct = 0;  // samples whose arg-max equals the label
};

struct ModuleTensor {
  std::string name;                  // the module's dotted name, e.g. "stage1.bn1.weight"
  std::vector<std::int64_t> shape;
  std::size_t offset = 0, size = 0;  // in floats, into the flat parameter or buffer vector
};

class ModuleNetwork {
 public:
  virtual ~ModuleNetwork() = default;
  // A deep copy (parameters, buffers), bound to nothing.
  virtual std::unique_ptr<ModuleNetwork> clone() const = 0;

  virtual const std::vector<ModuleTensor>& parameters() const = 0;
  virtual const std::vector<ModuleTensor>& buffers() const = 0;
  // The values the module was saved with, in parameters() order.
  virtual void read_parameters(float* out) const = 0;
  virtual void read_buffers(float* out) const = 0;
  virtual void write_buffers(const float* in) = 0;

  virtual void bind(float* parameters, float* gradients) = 0;

  // inputs [batch][sample], labels in [0, classes). `seed` seeds this step's random draws
  // (dropout).
  virtual BatchResult train_batch(const float* inputs, const std::int32_t* labels,
                                  std::size_t batch, std::uint64_t seed) = 0;
  // labels and predicted may be null.
  virtual BatchResult evaluate_batch(const float* inputs, const std::int32_t* labels,
                                     std::size_t batch, std::int32_t* predicted) = 0;
  // inputs: `count` batches of `batch` samples, one after another.
  virtual void refresh_statistics(const float* inputs, std::size_t batch, std::size_t count) = 0;

  // Saves the module with its current parameters and buffers where the library can load it
  // again (torch.jit.load), with `metadata` stored beside it under `metadata_name`.
  virtual void save(const std::string& path, const std::string& metadata_name,
                    const std::string& metadata) const = 0;
};

}  // namespace gradshare::nn

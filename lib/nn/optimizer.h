// optimizer.h: optimizers ("updaters" in DL4J) turn a gradient into an update vector u that the
// caller applies as params -= u (gradient sharing encodes u instead of applying it). Their
// state is a set of flat vectors with the parameter layout, so it can be averaged,
// checkpointed and sent to a recovering worker.
//   sgd       u = lr g
//   momentum  v = mu v + g;                         u = lr v
//   nesterov  v = mu v + g;                         u = lr (g + mu v)
//   adam      m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
//             u = lr mhat / (sqrt(vhat) + eps), mhat = m / (1-b1^t), vhat = v / (1-b2^t)
//   adamw     adam + lr * weight_decay * params (decoupled weight decay)
//   rmsprop   s = d s + (1-d) g^2;                  u = lr g / (sqrt(s) + eps)
//   adagrad   s = s + g^2;                          u = lr g / (sqrt(s) + eps)
// t is the step count after the increment (1 on the first update).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "config/experiment_config.h"

namespace gradshare::nn {

struct StateBuffer {
  std::string name;         // "velocity" | "m" | "v" | "mean_square" | "sum_squares"
  std::span<float> values;  // parameter layout
};

class Optimizer {
 public:
  // Throws UserError for an unknown optimizer.type.
  static std::unique_ptr<Optimizer> create(const config::OptimizerConfig& config,
                                           std::size_t parameter_count);
  virtual ~Optimizer() = default;

  // Writes update[i] for every parameter and increments step(). All spans have
  // parameter_count elements; parameters is only read, by adamw (others accept it empty).
  void compute_update(std::span<const float> gradient, std::span<const float> parameters,
                      std::span<float> update, double learning_rate);
  // The state vectors, in a fixed order (empty for sgd). Writable: averaging and recovery
  // overwrite them in place.
  virtual std::vector<StateBuffer> state() = 0;
  virtual std::string_view type() const = 0;

  std::int64_t step() const { return step_; }
  void set_step(std::int64_t step) { step_ = step; }
  std::size_t parameter_count() const { return parameter_count_; }
  virtual std::unique_ptr<Optimizer> clone() const = 0;

 protected:
  explicit Optimizer(std::size_t parameter_count) : parameter_count_(parameter_count) {}
  Optimizer(const Optimizer&) = default;
  // step_ has already been incremented when this runs.
  virtual void update(const float* gradient, const float* parameters, float* update,
                      float learning_rate) = 0;

 private:
  std::size_t parameter_count_;
  std::int64_t step_ = 0;
};

// params -= update
void apply_update(std::span<float> parameters, std::span<const float> update);

}  // namespace gradshare::nn

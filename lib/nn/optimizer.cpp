// optimizer.cpp: the seven update rules over flat state vectors (loops in
// kernels/cpu/elementwise).
#include "nn/optimizer.h"

#include <cmath>

#include "core/errors.h"
#include "kernels/cpu/elementwise.h"

namespace gradshare::nn {
namespace {

namespace cpu = kernels::cpu;

class Sgd final : public Optimizer {
 public:
  explicit Sgd(std::size_t n) : Optimizer(n) {}
  std::vector<StateBuffer> state() override { return {}; }
  std::string_view type() const override { return "sgd"; }
  std::unique_ptr<Optimizer> clone() const override { return std::make_unique<Sgd>(*this); }

 private:
  void update(const float* g, const float*, float* u, float lr) override {
    cpu::sgd_update(g, u, parameter_count(), lr);
  }
};

class Momentum final : public Optimizer {
 public:
  Momentum(std::size_t n, double momentum, bool nesterov)
      : Optimizer(n),
        momentum_(static_cast<float>(momentum)),
        nesterov_(nesterov),
        velocity_(n, 0.0f) {}
  std::vector<StateBuffer> state() override { return {{"velocity", velocity_}}; }
  std::string_view type() const override { return nesterov_ ? "nesterov" : "momentum"; }
  std::unique_ptr<Optimizer> clone() const override { return std::make_unique<Momentum>(*this); }

 private:
  void update(const float* g, const float*, float* u, float lr) override {
    cpu::momentum_update(g, velocity_.data(), u, parameter_count(), lr, momentum_, nesterov_);
  }
  float momentum_;
  bool nesterov_;
  std::vector<float> velocity_;
};

class Adam final : public Optimizer {
 public:
  // decoupled: AdamW, with config.weight_decay; otherwise plain Adam.
  Adam(std::size_t n, const config::OptimizerConfig& c, bool decoupled)
      : Optimizer(n),
        beta1_(c.beta1),
        beta2_(c.beta2),
        epsilon_(c.epsilon),
        weight_decay_(decoupled ? c.weight_decay : 0.0),
        decoupled_(decoupled),
        m_(n, 0.0f),
        v_(n, 0.0f) {}
  std::vector<StateBuffer> state() override { return {{"m", m_}, {"v", v_}}; }
  std::string_view type() const override { return decoupled_ ? "adamw" : "adam"; }
  std::unique_ptr<Optimizer> clone() const override { return std::make_unique<Adam>(*this); }

 private:
  void update(const float* g, const float* params, float* u, float lr) override {
    // Bias corrections in double: 1 - beta^t loses precision in float for small t.
    const auto t = static_cast<double>(step());
    cpu::AdamStep s;
    s.beta1 = static_cast<float>(beta1_);
    s.beta2 = static_cast<float>(beta2_);
    s.epsilon = static_cast<float>(epsilon_);
    s.one_minus_beta1 = static_cast<float>(1.0 - beta1_);
    s.one_minus_beta2 = static_cast<float>(1.0 - beta2_);
    s.step_size = static_cast<float>(lr / (1.0 - std::pow(beta1_, t)));
    s.inv_sqrt_bias2 = static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(beta2_, t)));
    s.decoupled_decay = static_cast<float>(lr * weight_decay_);
    GS_CHECK(s.decoupled_decay == 0.0f || params != nullptr, "adamw needs the parameters");
    cpu::adam_update(g, params, m_.data(), v_.data(), u, parameter_count(), s);
  }
  double beta1_, beta2_, epsilon_, weight_decay_;
  bool decoupled_;
  std::vector<float> m_, v_;
};

class RmsProp final : public Optimizer {
 public:
  RmsProp(std::size_t n, double decay, double epsilon)
      : Optimizer(n),
        decay_(static_cast<float>(decay)),
        one_minus_decay_(static_cast<float>(1.0 - decay)),
        epsilon_(static_cast<float>(epsilon)),
        mean_square_(n, 0.0f) {}
  std::vector<StateBuffer> state() override { return {{"mean_square", mean_square_}}; }
  std::string_view type() const override { return "rmsprop"; }
  std::unique_ptr<Optimizer> clone() const override { return std::make_unique<RmsProp>(*this); }

 private:
  void update(const float* g, const float*, float* u, float lr) override {
    cpu::rmsprop_update(g, mean_square_.data(), u, parameter_count(), lr, decay_, one_minus_decay_,
                        epsilon_);
  }
  float decay_, one_minus_decay_, epsilon_;
  std::vector<float> mean_square_;
};

class AdaGrad final : public Optimizer {
 public:
  AdaGrad(std::size_t n, double epsilon)
      : Optimizer(n), epsilon_(static_cast<float>(epsilon)), sum_squares_(n, 0.0f) {}
  std::vector<StateBuffer> state() override { return {{"sum_squares", sum_squares_}}; }
  std::string_view type() const override { return "adagrad"; }
  std::unique_ptr<Optimizer> clone() const override { return std::make_unique<AdaGrad>(*this); }

 private:
  void update(const float* g, const float*, float* u, float lr) override {
    cpu::adagrad_update(g, sum_squares_.data(), u, parameter_count(), lr, epsilon_);
  }
  float epsilon_;
  std::vector<float> sum_squares_;
};

}  // namespace

std::unique_ptr<Optimizer> Optimizer::create(const config::OptimizerConfig& config,
                                             std::size_t parameter_count) {
  const std::string& type = config.type;
  if (type == "sgd") return std::make_unique<Sgd>(parameter_count);
  if (type == "momentum")
    return std::make_unique<Momentum>(parameter_count, config.momentum, false);
  if (type == "nesterov") return std::make_unique<Momentum>(parameter_count, config.momentum, true);
  if (type == "adam") return std::make_unique<Adam>(parameter_count, config, false);
  if (type == "adamw") return std::make_unique<Adam>(parameter_count, config, true);
  if (type == "rmsprop")
    return std::make_unique<RmsProp>(parameter_count, config.rms_decay, config.epsilon);
  if (type == "adagrad") return std::make_unique<AdaGrad>(parameter_count, config.epsilon);
  throw core::UserError("optimizer.type: unknown optimizer '" + type +
                        "' (sgd, momentum, nesterov, adam, adamw, rmsprop, adagrad)");
}

void Optimizer::compute_update(std::span<const float> gradient, std::span<const float> parameters,
                               std::span<float> update_out, double learning_rate) {
  GS_CHECK(gradient.size() == parameter_count_ && update_out.size() == parameter_count_,
           "gradient/update size differs from the optimizer's parameter count");
  GS_CHECK(parameters.empty() || parameters.size() == parameter_count_,
           "parameter span size differs from the optimizer's parameter count");
  ++step_;
  update(gradient.data(), parameters.data(), update_out.data(), static_cast<float>(learning_rate));
}

void apply_update(std::span<float> parameters, std::span<const float> update) {
  GS_CHECK(parameters.size() == update.size(), "update size differs from the parameter count");
  cpu::subtract(parameters.data(), update.data(), parameters.size());
}

}  // namespace gradshare::nn

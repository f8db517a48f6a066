// torchscript_network.cpp: nn::ModuleNetwork over a TorchScript module (libtorch). Built as
// libgradshare_torch.so, which gradshare loads with dlopen the first time a config names
// model.torchscript (nn/torchscript_loader.cpp), so runs of built-in models never map libtorch.
// The exported C functions below are the whole interface; errors leave as std::exception.
#include <torch/script.h>
#include <torch/version.h>
#include <ATen/Parallel.h>

#include <malloc.h>

#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "nn/module_network.h"

namespace gradshare::nn {
namespace {

std::string shape_text(c10::IntArrayRef shape) {
  std::ostringstream out;
  out << "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

// The last line of a libtorch error: c10::Error's what() carries a C++ backtrace after its
// message (msg() has none) and the TorchScript interpreter's a traceback before its last line,
// which says what went wrong ("RuntimeError: mat1 and mat2 shapes cannot be multiplied ...").
std::string torch_reason(const std::exception& error) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&error);
  std::string message = c10_error != nullptr ? c10_error->msg() : error.what();
  while (!message.empty() && (message.back() == '\n' || message.back() == ' '))
    message.pop_back();
  const auto last_line = message.rfind('\n');
  return last_line == std::string::npos ? message : message.substr(last_line + 1);
}

class TorchScriptNetwork final : public ModuleNetwork {
 public:
  TorchScriptNetwork(torch::jit::Module module, std::vector<std::int64_t> sample_shape,
                     std::int64_t classes)
      : module_(std::move(module)), sample_shape_(std::move(sample_shape)), classes_(classes) {
    collect();
  }

  std::unique_ptr<ModuleNetwork> clone() const override {
    return std::make_unique<TorchScriptNetwork>(module_.clone(), sample_shape_, classes_);
  }

  const std::vector<ModuleTensor>& parameters() const override { return parameter_info_; }
  const std::vector<ModuleTensor>& buffers() const override { return buffer_info_; }

  void read_parameters(float* out) const override {
    for (std::size_t i = 0; i < parameters_.size(); ++i)
      copy_out(parameters_[i], out + parameter_info_[i].offset);
  }
  void read_buffers(float* out) const override {
    for (std::size_t i = 0; i < buffers_.size(); ++i)
      copy_out(buffers_[i], out + buffer_info_[i].offset);
  }
  void write_buffers(const float* in) override {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < buffers_.size(); ++i) {
      const auto& info = buffer_info_[i];
      auto values = torch::from_blob(const_cast<float*>(in + info.offset), buffers_[i].sizes());
      buffers_[i].copy_(values.to(buffers_[i].scalar_type()));
    }
  }

  void bind(float* parameters, float* gradients) override {
    torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < parameters_.size(); ++i) {
      const auto& info = parameter_info_[i];
      parameters_[i].set_data(torch::from_blob(parameters + info.offset, parameters_[i].sizes()));
      parameters_[i].mutable_grad() =
          torch::from_blob(gradients + info.offset, parameters_[i].sizes());
    }
  }

  BatchResult train_batch(const float* inputs, const std::int32_t* labels, std::size_t batch,
                          std::uint64_t seed) override {
    torch::manual_seed(seed);
    module_.train(true);
    const torch::Tensor logits = forward(inputs, batch);
    const torch::Tensor targets = label_tensor(labels, batch);
    const torch::Tensor loss = at::cross_entropy_loss(logits, targets);
    // The gradients are views of the flat vector (bind), which Model zeroed: backward adds
    // this batch's gradient into them in place.
    loss.backward();
    torch::NoGradGuard no_grad;
    return {loss.item<double>(), logits.argmax(1).eq(targets).sum().item<std::int64_t>()};
  }

  BatchResult evaluate_batch(const float* inputs, const std::int32_t* labels, std::size_t batch,
                             std::int32_t* predicted) override {
    torch::NoGradGuard no_grad;
    module_.train(false);
    const torch::Tensor logits = forward(inputs, batch);
    const torch::Tensor classes = logits.argmax(1);
    if (predicted != nullptr) {
      const torch::Tensor as_int = classes.to(torch::kInt32).contiguous();
      std::memcpy(predicted, as_int.data_ptr<std::int32_t>(), batch * sizeof(std::int32_t));
    }
    if (labels == nullptr) return {};
    const torch::Tensor targets = label_tensor(labels, batch);
    return {at::cross_entropy_loss(logits, targets).item<double>(),
            classes.eq(targets).sum().item<std::int64_t>()};
  }

  // Running statistics follow s <- (1 - m) s + m x for each batch's statistic x, with a
  // momentum m that the module keeps to itself (a TorchScript constant). Two forwards of the
  // first batch, from all zeros and from all ones, give m per element (ones - zeros = 1 - m);
  // then each batch from zeros gives m x, and the plain average of x over the batches replaces
  // the statistics. Elements a forward does not move so (m = 0: frozen tensors) and integer
  // buffers (num_batches_tracked) keep their values.
  void refresh_statistics(const float* inputs, std::size_t batch, std::size_t count) override {
    torch::NoGradGuard no_grad;
    module_.train(true);
    const std::size_t n = buffers_.size(), stride = batch * sample_size();
    std::vector<torch::Tensor> saved, from_ones(n), gain(n), sum(n);
    for (const auto& buffer : buffers_) saved.push_back(buffer.clone());
    const auto start_from = [&](double value) {
      for (std::size_t i = 0; i < n; ++i) {
        if (buffers_[i].is_floating_point()) buffers_[i].fill_(value);
        else buffers_[i].copy_(saved[i]);
      }
    };
    start_from(1.0);
    forward(inputs, batch);
    for (std::size_t i = 0; i < n; ++i) from_ones[i] = buffers_[i].clone();
    for (std::size_t k = 0; k < count; ++k) {
      start_from(0.0);
      forward(inputs + k * stride, batch);
      for (std::size_t i = 0; i < n; ++i) {
        if (!buffers_[i].is_floating_point()) continue;
        if (k == 0) {
          gain[i] = 1.0 - (from_ones[i] - buffers_[i]);
          sum[i] = torch::zeros_like(buffers_[i]);
        }
        sum[i] += buffers_[i];
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!buffers_[i].is_floating_point()) {
        buffers_[i].copy_(saved[i]);
        continue;
      }
      const torch::Tensor moving = gain[i].abs() > 1e-6;
      const torch::Tensor average = sum[i] / (gain[i] * static_cast<double>(count));
      buffers_[i].copy_(torch::where(moving, average, saved[i]));
    }
  }

  void save(const std::string& path, const std::string& metadata_name,
            const std::string& metadata) const override {
    torch::jit::ExtraFilesMap extra{{metadata_name, metadata}};
    // A copy owns its tensors: the saved file never refers to the flat vectors.
    module_.clone().save(path, extra);
  }

  // Runs the module on `batch` zero samples in eval mode and checks what it returns.
  void check_forward(std::int64_t batch) {
    std::vector<float> zeros(static_cast<std::size_t>(batch) * sample_size(), 0.0f);
    torch::NoGradGuard no_grad;
    module_.train(false);
    torch::Tensor logits;
    try {
      logits = run(zeros.data(), static_cast<std::size_t>(batch));
    } catch (const std::exception& error) {
      throw std::runtime_error("forward() failed on a batch of " + std::to_string(batch) +
                               " zero samples shaped " + shape_text(input_sizes(batch)) +
                               " (model.input_shape): " + torch_reason(error));
    }
    check_logits(logits, batch);
  }

 private:
  std::size_t sample_size() const {
    std::size_t n = 1;
    for (auto d : sample_shape_) n *= static_cast<std::size_t>(d);
    return n;
  }
  std::vector<std::int64_t> input_sizes(std::int64_t batch) const {
    std::vector<std::int64_t> sizes{batch};
    sizes.insert(sizes.end(), sample_shape_.begin(), sample_shape_.end());
    return sizes;
  }

  torch::Tensor run(const float* inputs, std::size_t batch) {
    // A copy: a module may change its input in place, and evaluation hands it the data set.
    const auto x = torch::from_blob(const_cast<float*>(inputs),
                                    input_sizes(static_cast<std::int64_t>(batch)))
                       .clone();
    auto output = module_.forward({x});
    if (!output.isTensor())
      throw std::runtime_error("forward() returned " + output.tagKind() +
                               ", not a tensor of logits [batch, classes]");
    return output.toTensor();
  }

  torch::Tensor forward(const float* inputs, std::size_t batch) {
    torch::Tensor logits = run(inputs, batch);
    check_logits(logits, static_cast<std::int64_t>(batch));
    return logits;
  }

  void check_logits(const torch::Tensor& logits, std::int64_t batch) const {
    if (logits.dim() != 2 || logits.size(0) != batch || logits.size(1) != classes_ ||
        logits.scalar_type() != torch::kFloat32) {
      throw std::runtime_error("forward() returned " + std::string(logits.dtype().name()) + " " +
                               shape_text(logits.sizes()) + " for a batch of " +
                               std::to_string(batch) + "; expected float logits [" +
                               std::to_string(batch) + ", " + std::to_string(classes_) +
                               "] (model.num_classes)");
    }
  }

  static torch::Tensor label_tensor(const std::int32_t* labels, std::size_t batch) {
    return torch::from_blob(const_cast<std::int32_t*>(labels),
                            {static_cast<std::int64_t>(batch)}, torch::kInt32)
        .to(torch::kInt64);
  }

  static void copy_out(const torch::Tensor& tensor, float* out) {
    const torch::Tensor values = tensor.detach().to(torch::kFloat32).contiguous();
    std::memcpy(out, values.data_ptr<float>(), static_cast<std::size_t>(values.numel()) * 4);
  }

  // Trainable float parameters become parameters; everything else with a value (buffers,
  // frozen parameters) becomes a buffer.
  void collect() {
    std::size_t parameter_offset = 0, buffer_offset = 0;
    auto add = [](std::vector<ModuleTensor>& infos, std::vector<torch::Tensor>& tensors,
                  const std::string& name, const torch::Tensor& tensor, std::size_t& offset) {
      const auto size = static_cast<std::size_t>(tensor.numel());
      infos.push_back({name, tensor.sizes().vec(), offset, size});
      tensors.push_back(tensor);
      offset += size;
    };
    for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
      if (p.value.requires_grad() && p.value.scalar_type() == torch::kFloat32)
        add(parameter_info_, parameters_, p.name, p.value, parameter_offset);
      else
        add(buffer_info_, buffers_, p.name, p.value, buffer_offset);
    }
    for (const auto& b : module_.named_buffers(/*recurse=*/true))
      add(buffer_info_, buffers_, b.name, b.value, buffer_offset);
  }

  mutable torch::jit::Module module_;
  std::vector<std::int64_t> sample_shape_;
  std::int64_t classes_;
  std::vector<ModuleTensor> parameter_info_, buffer_info_;
  std::vector<torch::Tensor> parameters_, buffers_;
};

void copy_message(const std::string& message, char* out, std::size_t size) {
  if (size == 0) return;
  const std::size_t n = std::min(message.size(), size - 1);
  std::memcpy(out, message.data(), n);
  out[n] = '\0';
}

}  // namespace
}  // namespace gradshare::nn

// Loads the module at `path` for samples shaped sample_shape[0..rank) and `classes` logits;
// null with `error` filled on failure (no exception crosses this boundary).
extern "C" __attribute__((visibility("default"))) gradshare::nn::ModuleNetwork*
gradshare_torch_load(const char* path, const std::int64_t* sample_shape, std::size_t rank,
                     std::int64_t classes, int threads, char* error, std::size_t error_size) {
  using gradshare::nn::TorchScriptNetwork;
  try {
    if (threads > 0) {
      at::set_num_threads(threads);
    }
    // libtorch frees and allocates its activations every step. With glibc's thresholds as this
    // process has them, blocks over 128 KiB went back to the kernel each time and came back as
    // page faults: 444k for 20 ResNet steps against PyTorch's 158k, 10 % of the step. Blocks up
    // to 32 MiB (glibc's most) now stay in the heap, and only 128 MiB free at its top is trimmed.
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 128 << 20);
    torch::jit::Module module;
    try {
      module = torch::jit::load(path);
    } catch (const std::exception& e) {
      throw std::runtime_error("not a TorchScript archive (save it with torch.jit.save): " +
                               gradshare::nn::torch_reason(e));
    }
    auto network = std::make_unique<TorchScriptNetwork>(
        std::move(module), std::vector<std::int64_t>(sample_shape, sample_shape + rank), classes);
    if (network->parameters().empty())
      throw std::runtime_error("the module has no trainable float32 parameters");
    network->check_forward(2);
    return network.release();
  } catch (const std::exception& e) {
    gradshare::nn::copy_message(e.what(), error, error_size);
  } catch (...) {
    gradshare::nn::copy_message("unknown error", error, error_size);
  }
  return nullptr;
}

// The libtorch version this library was built against, e.g. "1.13.1".
extern "C" __attribute__((visibility("default"))) const char* gradshare_torch_version() {
  return TORCH_VERSION;
}

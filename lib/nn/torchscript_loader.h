// torchscript_loader.h: loads a TorchScript module (model.torchscript) as an nn::ModuleNetwork
// through libgradshare_torch.so, opened with dlopen on the first call so that runs of built-in
// models never map libtorch (about 400 MB of shared libraries).
#pragma once

#include <memory>
#include <string>

#include "nn/layer.h"
#include "nn/module_network.h"

namespace gradshare::nn {

// Throws core::UserError naming model.torchscript and `path`: a missing file, not a
// TorchScript archive, no trainable float parameters, a forward that fails on a batch of zero
// samples shaped input_shape or returns anything but float logits [batch, classes]; and when
// this gradshare was built without libtorch or its plugin cannot be loaded.
std::unique_ptr<ModuleNetwork> load_torchscript(const std::string& path, const Shape& input_shape,
                                                std::size_t classes, int threads);

// "libtorch 1.13.1 (loaded on first use)" or "not built (GRADSHARE_TORCH=OFF or no libtorch)":
// for --version and the banner; loads nothing.
std::string torchscript_support();

}  // namespace gradshare::nn

// module_file.h: model.pt, a TorchScript run's trained module for PyTorch.
//
// The user's module with the run's final parameters and buffers, saved by libtorch, so
// torch.jit.load opens it and predicts what `gradshare eval` predicts. The input normalisation
// the run used is not built into the module; it is stated beside it in the archive's extra file
// `gradshare.json` (as the ONNX export states it in its metadata): feed
// (x - normalize_offset) * normalize_scale of the raw features.
#pragma once

#include <string>

#include "nn/model.h"
#include "runtime/run_context.h"

namespace gradshare::runtime {

inline constexpr const char* kModuleMetadata = "gradshare.json";

// The JSON stored as gradshare.json: normalize, normalize_offset, normalize_scale, input_shape,
// num_classes, gradshare_version.
std::string module_metadata(const RunContext& context);

// Writes <run dir>/model.pt for a TorchScript model; nothing for a built-in one.
void write_module_file(const RunContext& context, const nn::Model& model);

}  // namespace gradshare::runtime

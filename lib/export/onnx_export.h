// onnx_export.h: `gradshare export MODEL.h5 -o OUT.onnx`: a trained model as an ONNX model
// (IR 7, opset 13) that any ONNX runtime can run.
//
// Graph input "input": float32 [batch, <model.input_shape>] of NORMALISED features; output
// "probabilities": float32 [batch, num_classes], the softmax gradshare's loss applies (its
// arg-max is gradshare's prediction). Each layer of model.layers, in order, becomes:
//   dense      Gemm(x, W [inputs, units], b), preceded by Flatten(axis 1) when x is an image
//   conv2d     Conv(x, W [filters, channels, k, k], b), strides [s, s], pads [p, p, p, p]
//   maxpool2d  MaxPool, kernel_shape [pool, pool], strides [stride, stride], no padding
//   flatten    Flatten(axis 1): C x H x W row-major, the order gradshare keeps an image in
//   dropout    nothing (the identity at inference)
// followed, for dense and conv2d, by its activation: Relu, LeakyRelu(alpha), Elu(alpha), Tanh
// or Sigmoid. Parameters are initializers "<layer>_kernel" and "<layer>_bias" (layer names as
// in the model file: dense_0, conv2d_2, ...).
//
// metadata_props (all strings):
//   gradshare_version, trained_with_version   the exporting binary, the one that trained
//   source_model, iteration, epoch             where the parameters came from
//   dataset, input_shape, num_classes          input_shape as a JSON list, e.g. [1, 28, 28]
//   class_labels                               JSON list of class names (Fashion-MNIST only)
//   normalize, normalize_offset, normalize_scale
//       the data.normalize mode and its fitted affine map: feed
//       (x - normalize_offset) * normalize_scale of the raw features (Fashion-MNIST: the pixel
//       bytes 0..255) in float32; offset 0 and scale 1 for none. Both are printed with 9
//       significant digits, so they read back as the exact float32 values.
// The model file does not hold the fitted normalisation: export fits it again on the stored
// config's training data (same files, subset and validation split), as training did.
#pragma once

#include <string>
#include <vector>

#include "data/dataset.h"
#include "export/onnx_model.h"

namespace gradshare::runtime {
struct LoadedModel;  // runtime/model_file.h
}

namespace gradshare::onnx {

// The ONNX model of `loaded`; `source` (the model file) names it in metadata and errors.
// UserError for a layer type the exporter does not know.
Model to_onnx(const runtime::LoadedModel& loaded, const data::Normalization& normalization,
              const std::string& source);

// Loads MODEL (overrides as for eval, e.g. data.dir), fits the normalisation, writes OUT through
// a temporary file in its directory. UserError naming the file for a missing or invalid model,
// missing training data or an unwritable OUT; nothing is written then.
int export_command(const std::string& model_path, const std::string& output_path,
                   const std::vector<std::string>& overrides);

}  // namespace gradshare::onnx

// report/evaluation.h: accuracy, mean loss and confusion matrix of a model on a dataset.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "nn/model.h"

namespace gradshare::report {

struct Evaluation {
  double loss = 0;
  double accuracy = 0;  // fraction in [0, 1]
  std::int64_t samples = 0;
  // confusion[true_class][predicted_class]
  std::vector<std::vector<std::int64_t>> confusion;
  std::vector<std::int32_t> predictions;  // the predicted class of each sample, in order
};

Evaluation evaluate(nn::Model& model, const data::Dataset& dataset, std::size_t batch_size = 256);

// Rows are true classes, columns predictions, with per-class recall at the end of each row.
std::string format_confusion(const Evaluation& evaluation);

}  // namespace gradshare::report

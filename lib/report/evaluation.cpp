#include "report/evaluation.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace gradshare::report {

Evaluation evaluate(nn::Model& model, const data::Dataset& dataset, std::size_t batch_size) {
  Evaluation result;
  const std::size_t classes = static_cast<std::size_t>(std::max<std::int32_t>(dataset.num_classes, 1));
  result.confusion.assign(classes, std::vector<std::int64_t>(classes, 0));
  result.predictions.resize(dataset.size());
  double loss_sum = 0;
  std::int64_t correct = 0;
  for (std::size_t first = 0; first < dataset.size(); first += batch_size) {
    const std::size_t count = std::min(batch_size, dataset.size() - first);
    std::int32_t* predicted = result.predictions.data() + first;
    const auto batch = model.evaluate_batch(dataset.sample(first), dataset.labels.data() + first,
                                            count, predicted);
    loss_sum += batch.loss * static_cast<double>(count);
    correct += batch.correct;
    for (std::size_t i = 0; i < count; ++i) {
      const auto truth = static_cast<std::size_t>(dataset.labels[first + i]);
      const auto guess = static_cast<std::size_t>(predicted[i]);
      if (truth < classes && guess < classes) ++result.confusion[truth][guess];
    }
  }
  result.samples = static_cast<std::int64_t>(dataset.size());
  if (result.samples > 0) {
    result.loss = loss_sum / static_cast<double>(result.samples);
    result.accuracy = static_cast<double>(correct) / static_cast<double>(result.samples);
  }
  return result;
}

std::string format_confusion(const Evaluation& evaluation) {
  std::string out = "confusion matrix (rows: true class, columns: predicted)\n      ";
  char cell[32];
  const std::size_t classes = evaluation.confusion.size();
  for (std::size_t c = 0; c < classes; ++c) {
    std::snprintf(cell, sizeof cell, "%6zu", c);
    out += cell;
  }
  out += "  recall\n";
  for (std::size_t t = 0; t < classes; ++t) {
    std::snprintf(cell, sizeof cell, "%6zu", t);
    out += cell;
    const auto& row = evaluation.confusion[t];
    for (auto count : row) {
      std::snprintf(cell, sizeof cell, "%6lld", static_cast<long long>(count));
      out += cell;
    }
    const auto total = std::accumulate(row.begin(), row.end(), std::int64_t{0});
    std::snprintf(cell, sizeof cell, "  %5.1f%%\n",
                  total > 0 ? 100.0 * static_cast<double>(row[t]) / static_cast<double>(total) : 0.0);
    out += cell;
  }
  return out;
}

}  // namespace gradshare::report

// eval_command.h: `gradshare eval MODEL [--data DIR] [--predictions FILE] [overrides]`: test
// accuracy and confusion matrix of a saved model or checkpoint on its config's test set.
#pragma once

#include <string>
#include <vector>

namespace gradshare::cli {

// When predictions_path is not empty, writes the predicted class of every test sample there,
// one per line in test-set order (UserError naming the file when it cannot be written).
int eval_command(const std::string& model_path, const std::vector<std::string>& overrides,
                 const std::string& predictions_path = "");

}  // namespace gradshare::cli

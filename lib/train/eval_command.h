// eval_command.h: `gradshare eval MODEL [--data DIR] [overrides]`: test accuracy and confusion
// matrix of a saved model or checkpoint on its config's test set.
#pragma once

#include <string>
#include <vector>

namespace gradshare::train {

int eval_command(const std::string& model_path, const std::vector<std::string>& overrides);

}  // namespace gradshare::train

#include "core/errors.h"

namespace gradshare::core {

void check_failed(const char* expression, const char* file, int line, const std::string& detail) {
  std::string message = std::string("internal check failed at ") + file + ":" +
                        std::to_string(line) + ": " + expression;
  if (!detail.empty()) message += " (" + detail + ")";
  throw RuntimeError(message);
}

}  // namespace gradshare::core

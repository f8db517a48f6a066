// cross_checks.cpp: semantic checks between keys. One line per rule; later issues add theirs.
#include "config/cross_checks.h"

#include <string>
#include <utility>
#include <vector>

#include "config/value_format.h"
#include "core/errors.h"

namespace gradshare::config {
namespace {

class Checker {
 public:
  Checker(const std::map<std::string, std::string>& where, std::string source)
      : where_(where), source_(std::move(source)) {}

  // `a` <= `b`; the message points at whichever of the two the user set (a first).
  void require_le(const std::string& a, double va, const std::string& b, double vb) const {
    if (va <= vb) return;
    const std::string& blame = where_.count(a) || !where_.count(b) ? a : b;
    fail(blame, "'" + a + "' (" + format_double(va) + ") must not exceed '" + b + "' (" +
                    format_double(vb) + ")");
  }

  // `path` must be set to a non-empty string because of `because` ("data.dataset=custom").
  void require_set(const std::string& path, const std::string& value, const std::string& anchor,
                   const std::string& because) const {
    if (!value.empty()) return;
    fail(anchor, because + " needs '" + path + "'");
  }

  [[noreturn]] void fail(const std::string& path, const std::string& message) const {
    auto it = where_.find(path);
    const std::string& at = it == where_.end() ? source_ : it->second;
    throw core::UserError((at.empty() ? "" : at + ": ") + message);
  }

 private:
  const std::map<std::string, std::string>& where_;
  std::string source_;
};

}  // namespace

void cross_check(const ExperimentConfig& c, const std::map<std::string, std::string>& where,
                 const std::string& source) {
  const Checker check(where, source);
  const EncodingConfig& e = c.encoding;
  check.require_le("encoding.min_sparsity", e.min_sparsity, "encoding.max_sparsity",
                   e.max_sparsity);
  if (e.initial_threshold > 0) {  // 0: chosen at the first step
    check.require_le("encoding.min_threshold", e.min_threshold, "encoding.initial_threshold",
                     e.initial_threshold);
    check.require_le("encoding.initial_threshold", e.initial_threshold, "encoding.max_threshold",
                     e.max_threshold);
  }
  check.require_le("optimizer.min_learning_rate", c.optimizer.min_learning_rate,
                   "optimizer.learning_rate", c.optimizer.learning_rate);
  check.require_le("fault_tolerance.heartbeat_ms",
                   static_cast<double>(c.fault_tolerance.heartbeat_ms),
                   "fault_tolerance.timeout_ms", static_cast<double>(c.fault_tolerance.timeout_ms));

  if (c.model.input_shape.empty())
    check.fail("model.input_shape", "model.input_shape must not be an empty list");
  if (!c.model.torchscript.empty() && c.compute.device == "cuda")
    check.fail("compute.device",
               "compute.device is cuda, which trains built-in models (model.layers) only; a "
               "model.torchscript module trains on libtorch's CPU backend here: set "
               "compute.device: cpu");

  const DataConfig& d = c.data;
  if (d.dataset == "custom") {
    const std::string because = "data.dataset=custom with data.format=" + d.format;
    const std::vector<std::pair<std::string, std::string>> files =
        d.format == "idx"
            ? std::vector<std::pair<std::string, std::string>>{{"data.train_images",
                                                                d.train_images},
                                                               {"data.train_labels",
                                                                d.train_labels},
                                                               {"data.test_images", d.test_images},
                                                               {"data.test_labels", d.test_labels}}
            : std::vector<std::pair<std::string, std::string>>{{"data.train_file", d.train_file},
                                                               {"data.test_file", d.test_file}};
    for (const auto& [path, value] : files) check.require_set(path, value, "data.dataset", because);
  }
}

}  // namespace gradshare::config

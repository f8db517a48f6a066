// entry_schema.cpp: the key tables of layer entries and fault-injection entries.
#include "config/entry_schema.h"

#include <cstdint>
#include <utility>

namespace gradshare::config {
namespace {

// Getter/setter pair of one member of an entry struct.
#define GS_ENTRY_ACCESS(Entry, member, cpp_type)  \
  [](const Entry& e) { return Value{e.member}; }, \
      [](Entry& e, Value v) { e.member = std::get<cpp_type>(std::move(v)); }

constexpr double kMaxSize = 1.0e7;

}  // namespace

const std::vector<EntryField<LayerSpec>>& layer_fields() {
  using L = LayerSpec;
  static const std::vector<EntryField<LayerSpec>> fields = {
      {"type",
       ValueType::kString,
       Constraint::one_of({"dense", "conv2d", "maxpool2d", "flatten", "dropout"}),
       {},
       {"*"},
       "Layer kind",
       GS_ENTRY_ACCESS(L, type, std::string)},
      {"units",
       ValueType::kInt,
       Constraint::range(1, kMaxSize),
       {"dense"},
       {"dense"},
       "Output units",
       GS_ENTRY_ACCESS(L, units, std::int64_t)},
      {"filters",
       ValueType::kInt,
       Constraint::range(1, kMaxSize),
       {"conv2d"},
       {"conv2d"},
       "Output channels",
       GS_ENTRY_ACCESS(L, filters, std::int64_t)},
      {"kernel",
       ValueType::kInt,
       Constraint::range(1, 1024),
       {"conv2d"},
       {},
       "Square kernel size",
       GS_ENTRY_ACCESS(L, kernel, std::int64_t)},
      {"stride",
       ValueType::kInt,
       Constraint::range(0, 1024),
       {"conv2d", "maxpool2d"},
       {},
       "Stride; conv2d: >= 1; maxpool2d: 0 (its default) means equal to pool",
       GS_ENTRY_ACCESS(L, stride, std::int64_t)},
      {"padding",
       ValueType::kInt,
       Constraint::range(0, 1024),
       {"conv2d"},
       {},
       "Zero padding on each side",
       GS_ENTRY_ACCESS(L, padding, std::int64_t)},
      {"pool",
       ValueType::kInt,
       Constraint::range(1, 1024),
       {"maxpool2d"},
       {},
       "Square pooling window",
       GS_ENTRY_ACCESS(L, pool, std::int64_t)},
      {"rate",
       ValueType::kDouble,
       Constraint::below(0.0, 1.0),
       {"dropout"},
       {},
       "Fraction of activations dropped while training",
       GS_ENTRY_ACCESS(L, rate, double)},
      {"activation",
       ValueType::kString,
       Constraint::one_of({"none", "relu", "leaky_relu", "elu", "tanh", "sigmoid"}),
       {"dense", "conv2d"},
       {},
       "Activation after the layer",
       GS_ENTRY_ACCESS(L, activation, std::string)},
      {"alpha",
       ValueType::kDouble,
       Constraint::range(0.0, 1000.0),
       {"dense", "conv2d"},
       {},
       "leaky_relu slope for negative inputs; elu alpha",
       GS_ENTRY_ACCESS(L, alpha, double)},
  };
  return fields;
}

const std::vector<EntryField<FaultInjection>>& fault_fields() {
  using F = FaultInjection;
  static const std::vector<EntryField<FaultInjection>> fields = {
      {"rank",
       ValueType::kInt,
       Constraint::range(0, 1.0e6),
       {},
       {},
       "Rank that fails",
       GS_ENTRY_ACCESS(F, rank, std::int64_t)},
      {"at_step",
       ValueType::kInt,
       Constraint::range(-1, 1.0e12),
       {},
       {},
       "Worker step at which it fails (0: as it enters its first recovery from another failure; "
       "-1: right after it hands its results to the master at the end of the run)",
       GS_ENTRY_ACCESS(F, at_step, std::int64_t)},
      {"at_startup",
       ValueType::kString,
       Constraint::one_of({"none", "config", "data", "run_directory", "hosts", "setup"}),
       {},
       {},
       "Start-up point at which it fails instead of a step (kind sigkill): as it "
       "checks the config, loads the data, opens the run directory, gathers the host names, "
       "or sets up the strategy",
       GS_ENTRY_ACCESS(F, at_startup, std::string)},
      {"kind",
       ValueType::kString,
       Constraint::one_of({"sigkill", "exit", "hang", "stall"}),
       {},
       {},
       "sigkill: SIGKILL itself; exit: exit code 3 without finalizing MPI; hang: stop responding; "
       "stall: a "
       "step three times fault_tolerance.timeout_ms long",
       GS_ENTRY_ACCESS(F, kind, std::string)},
  };
  return fields;
}

#undef GS_ENTRY_ACCESS

}  // namespace gradshare::config

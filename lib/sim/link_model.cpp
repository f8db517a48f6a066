#include "sim/link_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>

#include "core/errors.h"

namespace gradshare::sim {

double LinkModel::wire_bytes(double payload_bytes, double messages) const {
  return payload_bytes * (1.0 + packet_overhead) + messages * message_overhead_bytes;
}

double LinkModel::seconds(double payload_bytes, double messages) const {
  if (unlimited()) return 0.0;
  return wire_bytes(payload_bytes, messages) * 8.0 / bits_per_second;
}

double LinkModel::burst_seconds() const {
  if (unlimited()) return 0.0;
  return burst_bytes * 8.0 / bits_per_second;
}

double cluster_local_burst_bytes(double bits_per_second) {
  // One timer tick at HZ=250, at least four 64 KiB GSO packets (scripts/cluster-local).
  return std::max(bits_per_second / 8.0 / 250.0, 262144.0);
}

namespace {

struct Unit {
  double scale;
  const char* name;
};
// Largest first, as rate_name picks the first that fits.
constexpr Unit kUnits[] = {{1e12, "tbit"}, {1e9, "gbit"}, {1e6, "mbit"}, {1e3, "kbit"}, {1, "bit"}};

}  // namespace

double parse_rate(const std::string& text, const std::string& what) {
  if (text == "unlimited") return 0.0;
  const auto bad = [&] {
    return core::UserError(what + " '" + text +
                           "' is not a rate: write it as tc does, e.g. 100mbit, 1gbit, 10gbit, "
                           "500kbit, or unlimited");
  };
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(value) || value <= 0) throw bad();
  for (const auto& unit : kUnits)
    if (std::string(end) == unit.name) return value * unit.scale;
  throw bad();
}

std::string rate_name(double bits_per_second) {
  if (bits_per_second <= 0) return "unlimited";
  const Unit* unit = &kUnits[std::size(kUnits) - 1];
  for (const auto& u : kUnits)
    if (bits_per_second >= u.scale) {
      unit = &u;
      break;
    }
  char text[32];
  std::snprintf(text, sizeof text, "%g%s", bits_per_second / unit->scale, unit->name);
  return text;
}

}  // namespace gradshare::sim

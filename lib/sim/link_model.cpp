#include "sim/link_model.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/errors.h"

namespace gradshare::sim {

double LinkModel::wire_bytes(double payload_bytes, double messages) const {
  return payload_bytes * (1.0 + packet_overhead) + messages * message_overhead_bytes;
}

double LinkModel::seconds(double payload_bytes, double messages) const {
  if (unlimited()) return 0.0;
  return wire_bytes(payload_bytes, messages) * 8.0 / bits_per_second;
}

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
  const std::string unit(end);
  double scale = 0;
  if (unit == "bit") scale = 1;
  else if (unit == "kbit") scale = 1e3;
  else if (unit == "mbit") scale = 1e6;
  else if (unit == "gbit") scale = 1e9;
  else if (unit == "tbit") scale = 1e12;
  else throw bad();
  return value * scale;
}

std::string rate_name(double bits_per_second) {
  if (bits_per_second <= 0) return "unlimited";
  const struct { double scale; const char* unit; } units[] = {
      {1e12, "tbit"}, {1e9, "gbit"}, {1e6, "mbit"}, {1e3, "kbit"}, {1, "bit"}};
  for (const auto& u : units)
    if (bits_per_second >= u.scale) {
      char text[32];
      std::snprintf(text, sizeof text, "%g%s", bits_per_second / u.scale, u.unit);
      return text;
    }
  return "unlimited";
}

}  // namespace gradshare::sim

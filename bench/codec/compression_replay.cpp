// compression_replay.cpp: the compression report. Replays recorded update vectors through one
// Encoder per format (sparse, bitmap, compressed, auto) and prints the bytes per message (mean
// over all steps, and at steady state = the last half of the steps) and the ratio to dense
// float32 (4 n bytes), then one summary row ("| label | ...") for scripts/bench/compression.
//   compression_replay <updates file> [--label L] [--config FILE] [--threshold-algorithm A]
//                      [--initial-threshold T] [--min-sparsity S] [--max-sparsity S]
//                      [--target-sparsity S] [--residual clip|none] [--shake-up-every N]
//   compression_replay --write-synthetic <file> [--n N] [--steps S]
// --config takes the encoding section of an experiment file (e.g. configs/fashion-mnist-mlp.yaml);
// the options after it override single keys. Without it every key is at its default.
// The updates file is what `gradshare train` writes with GRADSHARE_RECORD_UPDATES=<file>:
// little-endian uint64 n, then n float32 per step. --write-synthetic writes Adam updates of a
// synthetic noisy quadratic problem in that format, to try the report without a training run.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "codec/encoder.h"
#include "config/config_loader.h"
#include "core/errors.h"
#include "core/rng.h"

namespace {

namespace codec = gradshare::codec;
using gradshare::core::UserError;

struct FormatResult {
  std::string format;
  std::unique_ptr<codec::Encoder> encoder;
  std::vector<std::size_t> bytes;
  std::vector<double> sparsity;
  std::map<std::string, int> steady_encodings;
};

std::string need_value(int& i, int argc, char** argv) {
  if (i + 1 >= argc) throw UserError(std::string(argv[i]) + " needs a value");
  return argv[++i];
}

double to_number(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw UserError(flag + ": '" + text + "' is not a number");
}

// Adam (lr 1e-3) on a noisy quadratic whose curvatures span four decades, like the mix of
// layers of a small network: updates start at ~lr everywhere and fade as parameters settle.
void write_synthetic(const std::string& path, std::size_t n, int steps) {
  std::ofstream file(path, std::ios::binary);
  if (!file) throw UserError(path + ": cannot write");
  const std::uint64_t count = n;
  file.write(reinterpret_cast<const char*>(&count), sizeof count);
  gradshare::core::Rng rng(2024);
  std::vector<float> x(n), curvature(n), m(n, 0.0f), v(n, 0.0f), update(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = rng.normal();
    curvature[i] = static_cast<float>(std::pow(10.0, rng.uniform(-3.0f, 1.0f)));
  }
  const float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
  for (int t = 1; t <= steps; ++t) {
    const float c1 = 1.0f - std::pow(beta1, static_cast<float>(t));
    const float c2 = 1.0f - std::pow(beta2, static_cast<float>(t));
    for (std::size_t i = 0; i < n; ++i) {
      const float g = curvature[i] * x[i] + 0.1f * rng.normal();
      m[i] = beta1 * m[i] + (1 - beta1) * g;
      v[i] = beta2 * v[i] + (1 - beta2) * g * g;
      update[i] = lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + epsilon);
      x[i] -= update[i];
    }
    file.write(reinterpret_cast<const char*>(update.data()),
               static_cast<std::streamsize>(n * sizeof(float)));
  }
  if (!file) throw UserError(path + ": write failed");
  std::printf("wrote %d synthetic steps of %zu parameters to %s\n", steps, n, path.c_str());
}

double mean(const std::vector<std::size_t>& values, std::size_t from) {
  double sum = 0.0;
  for (std::size_t i = from; i < values.size(); ++i) sum += static_cast<double>(values[i]);
  return values.size() > from ? sum / static_cast<double>(values.size() - from) : 0.0;
}

// The threshold settings that decide the steady-state sparsity, in words.
std::string describe_threshold(const gradshare::config::EncodingConfig& c) {
  char text[160];
  if (c.threshold_algorithm == "adaptive") {
    std::snprintf(text, sizeof text, "adaptive, sparsity kept in [%g, %g]", c.min_sparsity,
                  c.max_sparsity);
  } else if (c.threshold_algorithm == "target_sparsity") {
    std::snprintf(text, sizeof text, "target_sparsity %g", c.target_sparsity);
  } else {
    std::snprintf(text, sizeof text, "%s", c.threshold_algorithm.c_str());
  }
  return text;
}

int replay(const std::string& path, const std::string& label,
           const gradshare::config::EncodingConfig& base) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) throw UserError(path + ": cannot open the updates file");
  const auto file_bytes = static_cast<std::uint64_t>(file.tellg());
  file.seekg(0);
  std::uint64_t n = 0;
  if (file_bytes < sizeof n || !file.read(reinterpret_cast<char*>(&n), sizeof n)) {
    throw UserError(path + ": too short for the parameter count header");
  }
  if (n == 0 || n > codec::kMaxParameterCount) {
    throw UserError(path + ": parameter count " + std::to_string(n) + " out of range");
  }
  const std::uint64_t step_bytes = 4 * n;
  const std::uint64_t steps = (file_bytes - sizeof n) / step_bytes;
  if ((file_bytes - sizeof n) % step_bytes != 0) {
    std::fprintf(stderr, "compression_replay: %s: ignoring a partial last step\n", path.c_str());
  }
  if (steps < 2) throw UserError(path + ": needs at least 2 recorded steps");

  std::vector<FormatResult> results;
  for (const std::string format : {"sparse", "bitmap", "compressed", "auto"}) {
    gradshare::config::EncodingConfig config = base;
    config.format = format;
    results.push_back({format, std::make_unique<codec::Encoder>(config, n), {}, {}, {}});
  }
  std::vector<float> update(n);
  std::vector<std::uint8_t> message;
  const std::uint64_t steady_from = steps / 2;
  for (std::uint64_t step = 0; step < steps; ++step) {
    if (!file.read(reinterpret_cast<char*>(update.data()),
                   static_cast<std::streamsize>(step_bytes))) {
      throw UserError(path + ": read failed at step " + std::to_string(step));
    }
    for (FormatResult& r : results) {
      const codec::MessageMeta meta{0, step + 1, step, 0, 0};
      const codec::EncodeStats stats = r.encoder->encode(update, meta, message);
      r.bytes.push_back(stats.bytes);
      r.sparsity.push_back(stats.sparsity);
      if (step >= steady_from) ++r.steady_encodings[codec::encoding_name(stats.encoding)];
    }
  }

  const double dense = 4.0 * static_cast<double>(n);
  std::printf(
      "updates: %s: %llu parameters, %llu steps; steady state = steps %llu..%llu\n", path.c_str(),
      static_cast<unsigned long long>(n), static_cast<unsigned long long>(steps),
      static_cast<unsigned long long>(steady_from + 1), static_cast<unsigned long long>(steps));
  std::printf("case: %s\nthreshold: %s, initial %g, residual %s; dense float32 = %.0f bytes\n",
              label.c_str(), describe_threshold(base).c_str(), base.initial_threshold,
              base.residual.c_str(), dense);
  std::printf("%-11s %12s %14s %10s %14s %12s %10s  %s\n", "format", "mean B/msg", "steady B/msg",
              "ratio", "ratio payload", "sparsity", "final tau", "steady encodings");
  std::string summary = "| " + label + " |";
  for (const FormatResult& r : results) {
    const double steady = mean(r.bytes, steady_from);
    double sparsity = 0.0;
    for (std::size_t i = steady_from; i < r.sparsity.size(); ++i) sparsity += r.sparsity[i];
    sparsity /= static_cast<double>(steps - steady_from);
    char cell[64];
    if (r.format == "sparse") {
      std::snprintf(cell, sizeof cell, " %.2e |", sparsity);
      summary += cell;
    }
    std::snprintf(cell, sizeof cell, " %.0f B %.0fx |", steady, dense / steady);
    summary += cell;
    std::string encodings;
    for (const auto& [name, count] : r.steady_encodings) {
      encodings += (encodings.empty() ? "" : ", ") + name + " " + std::to_string(count);
    }
    const double payload = steady - static_cast<double>(codec::kHeaderBytes);
    std::printf("%-11s %12.1f %14.1f %9.0fx %13.0fx %12.2e %10.3g  %s\n", r.format.c_str(),
                mean(r.bytes, 0), steady, dense / steady, payload > 0 ? dense / payload : 0.0,
                sparsity, static_cast<double>(r.encoder->threshold()), encodings.c_str());
  }
  std::printf(
      "(ratio: dense / whole message incl. the %zu-byte header; ratio payload: without "
      "it)\n%s\n",
      codec::kHeaderBytes, summary.c_str());
  return 0;
}

int run(int argc, char** argv) {
  if (argc < 2) {
    throw UserError(
        "usage: compression_replay <updates file> [--label L] [--config FILE] "
        "[--threshold-algorithm A] [--initial-threshold T] [--min-sparsity S] "
        "[--max-sparsity S] [--target-sparsity S] [--residual clip|none] [--shake-up-every N]\n"
        "       compression_replay --write-synthetic <file> [--n N] [--steps S]");
  }
  if (std::string(argv[1]) == "--write-synthetic") {
    if (argc < 3) throw UserError("--write-synthetic needs a file");
    std::size_t n = 235146;  // the parameters of configs/fashion-mnist-mlp.yaml
    int steps = 300;
    for (int i = 3; i < argc; ++i) {
      const std::string flag = argv[i];
      if (flag == "--n") {
        n = static_cast<std::size_t>(to_number(flag, need_value(i, argc, argv)));
      } else if (flag == "--steps") {
        steps = static_cast<int>(to_number(flag, need_value(i, argc, argv)));
      } else {
        throw UserError("unknown option " + flag);
      }
    }
    if (n == 0 || steps < 1) throw UserError("--n and --steps must be positive");
    write_synthetic(argv[2], n, steps);
    return 0;
  }
  gradshare::config::EncodingConfig config;
  std::string label = "defaults";
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--label") {
      label = need_value(i, argc, argv);
    } else if (flag == "--config") {
      const std::string file = need_value(i, argc, argv);
      config = gradshare::config::load_experiment(file).encoding;
      if (label == "defaults") label = file;
    } else if (flag == "--threshold-algorithm") {
      config.threshold_algorithm = need_value(i, argc, argv);
    } else if (flag == "--initial-threshold") {
      config.initial_threshold = to_number(flag, need_value(i, argc, argv));
    } else if (flag == "--min-sparsity") {
      config.min_sparsity = to_number(flag, need_value(i, argc, argv));
    } else if (flag == "--max-sparsity") {
      config.max_sparsity = to_number(flag, need_value(i, argc, argv));
    } else if (flag == "--target-sparsity") {
      config.target_sparsity = to_number(flag, need_value(i, argc, argv));
    } else if (flag == "--residual") {
      config.residual = need_value(i, argc, argv);
    } else if (flag == "--shake-up-every") {
      config.shake_up_every_steps =
          static_cast<std::int64_t>(to_number(flag, need_value(i, argc, argv)));
    } else {
      throw UserError("unknown option " + flag);
    }
  }
  return replay(argv[1], label, config);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UserError& e) {
    std::fprintf(stderr, "compression_replay: %s\n", e.what());
    return gradshare::core::kExitUserError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "compression_replay: %s\n", e.what());
    return gradshare::core::kExitRuntimeFailure;
  }
}

// codec_bench.cpp: speed of the codec kernels on one core, against the memory bandwidth measured
// in the same run.
//   build/bench/codec_bench [--device cpu|cuda] [Google Benchmark flags, e.g.
//                           --benchmark_filter='n:10000000/']
// Grid: n in {1e5, 1e6, 1e7, 1e8} x density (ppm) in {100, 1000, 10000, 62500, 500000}.
// Kernels and the bytes each must move at least (its bandwidth bound):
//   Encode            r += u, select, subtract, emit indices       12 n + 4 entries
//   EncodeScalar      the same with the portable twin (n = 1e7)
//   EncodeBitmap      the same writing 2-bit codes                  12 n + n / 4
//   CountFiring       |r + u| >= tau counted (the congestion cap)   8 n
//   CompressedEncode  Rice parameter choice + coding of the indices 4 entries + payload
//   CompressedDecode  Rice decoding (validated) back to indices     payload + 4 entries
//   DecodeApply/<fmt> apply_message (checksum, validation, params -= value); the scattered
//                     writes touch a 64-byte line each: message + min(128 entries, 8 n)
//   EncoderStep       a whole Encoder::encode (auto format)         12 n + message
//   EncoderStepCapped the same where the congestion cap binds (n = 1e6)  36 n + message
// Times are thread CPU time (the machine may be shared). bw_fraction = (bound bytes / fastest
// iteration's time) / ref_GBps, where ref_GBps is the best rate of the plain loop r += u over
// n floats (encode's access pattern without the selection), measured right after each kernel:
// same conditions, same level of the memory hierarchy (n = 1e5 and 1e6 run from cache, 1e7 and
// 1e8 from DRAM). At start the run also prints the one-core DRAM bandwidth of copy (a = b),
// triad (a = b + s c) and add (a += b) over 3 x 128 MiB arrays, counted STREAM-style (no
// write-allocate traffic).
#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "codec/decoder.h"
#include "codec/encoder.h"
#include "core/rng.h"
#include "kernels/cpu/codec_bitmap_layout.h"
#include "kernels/cpu/codec_encode.h"
#include "kernels/cpu/codec_isa.h"
#include "kernels/cpu/codec_rice.h"

namespace {

namespace cpu = gradshare::kernels::cpu;
namespace codec = gradshare::codec;

constexpr float kTau = 1e-3f;
// Inputs where exactly the chosen elements fire every time the encoder runs: firing elements
// have r = 0 and u = +-tau (r returns to 0), the others r in (-tau/2, tau/2) and u = 0.
struct Workload {
  std::vector<float> u;
  std::vector<float> r;
  std::vector<std::int32_t> indices;  // the signed 1-based indices that fire
};

Workload make_workload(std::size_t n, std::int64_t density_ppm) {
  gradshare::core::Rng rng(static_cast<std::uint64_t>(n) * 1000003u +
                           static_cast<std::uint64_t>(density_ppm));
  Workload w{std::vector<float>(n), std::vector<float>(n), {}};
  const std::uint64_t cut = static_cast<std::uint64_t>(density_ppm);
  for (std::size_t i = 0; i < n; ++i) {
    if (rng.below(1000000) < cut) {
      const bool negative = rng.below(2) == 1;
      w.u[i] = negative ? -kTau : kTau;
      w.r[i] = 0.0f;
      const auto one_based = static_cast<std::int32_t>(i + 1);
      w.indices.push_back(negative ? -one_based : one_based);
    } else {
      w.u[i] = 0.0f;
      w.r[i] = rng.uniform(-0.5f * kTau, 0.5f * kTau);
    }
  }
  return w;
}

// This thread's CPU time: unlike the wall clock it does not count the time the thread waits
// while other processes of a shared machine run.
double thread_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// Runs the benchmark loop over `body`, timing every iteration in thread CPU time; returns the
// fastest one's seconds (the bandwidth reference is a best-of measurement too).
template <class Body>
double timed_loop(benchmark::State& state, Body&& body) {
  double best = std::numeric_limits<double>::infinity();
  for (auto _ : state) {
    const double start = thread_seconds();
    body();
    benchmark::ClobberMemory();
    best = std::min(best, thread_seconds() - start);
  }
  return best;
}

// Best rate of r += u over two arrays of n floats (12 n bytes; best of 5 to 50 runs, thread
// CPU time), measured right after the kernel so both run under the same conditions and from
// the same level of the memory hierarchy: the bound a kernel streaming over n parameters has.
double reference_bandwidth(std::size_t n) {
  std::vector<float> u(n, 1e-3f), r(n, 0.0f);
  float* pr = r.data();
  const float* pu = u.data();
  const auto repeats = std::clamp<std::size_t>(100000000 / n, 5, 50);
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t repeat = 0; repeat < repeats; ++repeat) {
    const double start = thread_seconds();
    for (std::size_t i = 0; i < n; ++i) pr[i] += pu[i];
    benchmark::ClobberMemory();
    best = std::min(best, thread_seconds() - start);
  }
  benchmark::DoNotOptimize(pr);
  return 12.0 * static_cast<double>(n) / best;
}

void report(benchmark::State& state, double bytes_per_iteration, std::size_t entries,
            double best_seconds) {
  const double bandwidth = reference_bandwidth(static_cast<std::size_t>(state.range(0)));
  state.SetBytesProcessed(
      static_cast<std::int64_t>(bytes_per_iteration * static_cast<double>(state.iterations())));
  state.counters["bw_fraction"] = bytes_per_iteration / best_seconds / bandwidth;
  state.counters["ref_GBps"] = bandwidth / 1e9;
  state.counters["entries"] = static_cast<double>(entries);
}

void encode(benchmark::State& state, cpu::Isa isa) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Workload w = make_workload(n, state.range(1));
  std::vector<std::int32_t> out(n);
  std::size_t count = 0;
  const double best =
      timed_loop(state, [&] { count = cpu::encode_select(isa, w.u, w.r, 0, kTau, out).count; });
  if (count != w.indices.size()) state.SkipWithError("encode selected the wrong entries");
  report(state, 12.0 * n + 4.0 * count, count, best);
  state.SetLabel(cpu::isa_name(isa));
}

void BM_Encode(benchmark::State& state) { encode(state, cpu::best_isa()); }
// The portable twin, for comparison (n = 1e7 only).
void BM_EncodeScalar(benchmark::State& state) { encode(state, cpu::Isa::kScalar); }

// The read-only pass before each capped-format encode (encoder.h step 3b).
void BM_CountFiring(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Workload w = make_workload(n, state.range(1));
  std::size_t count = 0;
  const double best =
      timed_loop(state, [&] { count = cpu::count_firing(cpu::best_isa(), w.u, w.r, kTau); });
  if (count != w.indices.size()) state.SkipWithError("count_firing counted the wrong entries");
  report(state, 8.0 * n, count, best);
  state.SetLabel(cpu::isa_name(cpu::best_isa()));
}

void BM_EncodeBitmap(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Workload w = make_workload(n, state.range(1));
  std::vector<std::uint8_t> bitmap(cpu::bitmap_bytes(n));
  std::size_t count = 0;
  const double best = timed_loop(state, [&] {
    count = cpu::encode_bitmap(cpu::best_isa(), w.u, w.r, kTau, cpu::HalfQuantum{}, bitmap).entries;
  });
  if (count != w.indices.size()) state.SkipWithError("bitmap selected the wrong entries");
  report(state, 12.0 * n + 0.25 * n, count, best);
}

void BM_CompressedEncode(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const Workload w = make_workload(n, state.range(1));
  std::vector<std::uint8_t> payload(n / 2 + 2);
  std::size_t bytes = 0;
  const double best = timed_loop(state, [&] {
    const cpu::RiceChoice choice = cpu::rice_choose(w.indices);
    cpu::rice_encode(w.indices, choice.k,
                     std::span<std::uint8_t>(payload).first(choice.payload_bytes));
    bytes = choice.payload_bytes;
  });
  report(state, 4.0 * w.indices.size() + static_cast<double>(bytes), w.indices.size(), best);
  state.counters["bits_per_entry"] = 8.0 * bytes / std::max<std::size_t>(1, w.indices.size());
}

void BM_CompressedDecode(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const Workload w = make_workload(n, state.range(1));
  const cpu::RiceChoice choice = cpu::rice_choose(w.indices);
  std::vector<std::uint8_t> payload(choice.payload_bytes);
  cpu::rice_encode(w.indices, choice.k, payload);
  std::vector<std::int32_t> decoded;
  bool ok = true;
  const double best = timed_loop(
      state, [&] { ok = ok && cpu::rice_decode(payload, w.indices.size(), n, decoded, nullptr); });
  if (!ok || decoded != w.indices) state.SkipWithError("decode failed or differs");
  report(state, static_cast<double>(payload.size()) + 4.0 * w.indices.size(), w.indices.size(),
         best);
}

void BM_DecodeApply(benchmark::State& state, const char* format) {
  const auto n = static_cast<std::size_t>(state.range(0));
  Workload w = make_workload(n, state.range(1));
  gradshare::config::EncodingConfig config;
  config.format = format;
  config.threshold_algorithm = "fixed";
  config.initial_threshold = kTau;
  codec::Encoder encoder(config, n);
  std::copy(w.r.begin(), w.r.end(), encoder.residual().begin());
  std::vector<std::uint8_t> message;
  const codec::EncodeStats stats = encoder.encode(w.u, {}, message);
  w = Workload{};  // free the inputs: only the message and the parameters are needed now
  std::vector<float> params(n, 0.0f);
  bool ok = true;
  const double best =
      timed_loop(state, [&] { ok = ok && codec::apply_message(message, params, nullptr); });
  if (!ok) state.SkipWithError("apply failed");
  const double scattered = std::min(128.0 * stats.entries, 8.0 * n);
  report(state, static_cast<double>(message.size()) + scattered, stats.entries, best);
  state.counters["message_bytes"] = static_cast<double>(message.size());
  state.SetLabel(codec::encoding_name(stats.encoding));
}

// A whole Encoder::encode (auto format); `capped`: the congestion cap binds (encoder.h step
// 3b), a tenth of the elements that reach tau are sent and the rest stay in the residual and
// grow. Half the elements reach tau at 500,000 ppm, where whether each does is a coin toss.
void encoder_step(benchmark::State& state, bool capped) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const Workload w = make_workload(n, state.range(1));
  gradshare::config::EncodingConfig config;
  config.threshold_algorithm = "fixed";
  config.initial_threshold = kTau;
  config.residual = "none";
  if (capped) {
    config.max_message_sparsity = 0.1 * static_cast<double>(state.range(1)) / 1e6;
    config.min_quanta = 0;
  }
  codec::Encoder encoder(config, n);
  std::copy(w.r.begin(), w.r.end(), encoder.residual().begin());
  // Distinct magnitudes among those that fire (equal ones would tie at the cap and none go).
  gradshare::core::Rng rng(7);
  if (capped)
    for (const std::int32_t index : w.indices)
      encoder.residual()[static_cast<std::size_t>(std::abs(index) - 1)] =
          (index > 0 ? 1.0f : -1.0f) * rng.uniform(0.0f, kTau);
  std::vector<std::uint8_t> message;
  codec::EncodeStats stats;
  const double best = timed_loop(state, [&] { stats = encoder.encode(w.u, {}, message); });
  if (capped && (!stats.capped || stats.entries == 0)) state.SkipWithError("the cap did not bind");
  // Capped: count_firing, then r += u, the cap's pass and the select: 8 n + 12 n + 4 n + 12 n.
  const double passes = capped ? 36.0 : 12.0;
  report(state, passes * n + static_cast<double>(message.size()), stats.entries, best);
  state.SetLabel(codec::encoding_name(stats.encoding));
}

void BM_EncoderStep(benchmark::State& state) { encoder_step(state, false); }
void BM_EncoderStepCapped(benchmark::State& state) { encoder_step(state, true); }

void grid(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "density_ppm"});
  for (const std::int64_t n : {100000, 1000000, 10000000, 100000000}) {
    for (const std::int64_t ppm : {100, 1000, 10000, 62500, 500000}) b->Args({n, ppm});
  }
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_Encode)->Apply(grid);
BENCHMARK(BM_EncodeScalar)
    ->ArgNames({"n", "density_ppm"})
    ->Unit(benchmark::kMillisecond)
    ->Args({10000000, 100})
    ->Args({10000000, 10000})
    ->Args({10000000, 500000});
BENCHMARK(BM_EncodeBitmap)->Apply(grid);
BENCHMARK(BM_CountFiring)->Apply(grid);
BENCHMARK(BM_CompressedEncode)->Apply(grid);
BENCHMARK(BM_CompressedDecode)->Apply(grid);
BENCHMARK_CAPTURE(BM_DecodeApply, sparse, "sparse")->Apply(grid);
BENCHMARK_CAPTURE(BM_DecodeApply, compressed, "compressed")->Apply(grid);
BENCHMARK_CAPTURE(BM_DecodeApply, bitmap, "bitmap")->Apply(grid);
BENCHMARK(BM_EncoderStep)->Apply(grid);
BENCHMARK(BM_EncoderStepCapped)
    ->ArgNames({"n", "density_ppm"})
    ->Unit(benchmark::kMillisecond)
    ->Args({1000000, 10000})
    ->Args({1000000, 62500})
    ->Args({1000000, 500000});

// ------------------------------------------------------------------ memory bandwidth

struct Bandwidth {
  double copy = 0.0;
  double triad = 0.0;
  double add = 0.0;
};

template <class Kernel>
double best_rate(double bytes, Kernel&& kernel) {
  double best = std::numeric_limits<double>::infinity();
  for (int repeat = 0; repeat < 5; ++repeat) {
    const double start = thread_seconds();
    kernel();
    best = std::min(best, thread_seconds() - start);
  }
  return bytes / best;
}

Bandwidth measure_bandwidth() {
  const std::size_t n = std::size_t{1} << 25;  // 128 MiB per array
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n, 3.0f);
  float* pa = a.data();
  const float* pb = b.data();
  const float* pc = c.data();
  Bandwidth bw;
  bw.copy = best_rate(8.0 * n, [&] {
    for (std::size_t i = 0; i < n; ++i) pa[i] = pb[i];
    benchmark::ClobberMemory();
  });
  bw.triad = best_rate(12.0 * n, [&] {
    for (std::size_t i = 0; i < n; ++i) pa[i] = pb[i] + 0.5f * pc[i];
    benchmark::ClobberMemory();
  });
  bw.add = best_rate(12.0 * n, [&] {
    for (std::size_t i = 0; i < n; ++i) pa[i] += pb[i];
    benchmark::ClobberMemory();
  });
  benchmark::DoNotOptimize(a.data());
  return bw;
}

// Removes "--device X" / "--device=X" from argv; returns X ("cpu" when absent).
std::string take_device_flag(int& argc, char** argv) {
  std::string device = "cpu";
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc) {
      device = argv[++i];
    } else if (arg.rfind("--device=", 0) == 0) {
      device = arg.substr(9);
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  return device;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string device = take_device_flag(argc, argv);
  if (device == "cuda") {
    std::fprintf(stderr,
                 "codec_bench: --device cuda: the CUDA codec backend is not built yet (issue 9), "
                 "so there is no GPU codec to measure; run without --device for the CPU kernels\n");
    return 2;
  }
  if (device != "cpu") {
    std::fprintf(stderr, "codec_bench: --device must be cpu or cuda, not '%s'\n", device.c_str());
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  const Bandwidth bw = measure_bandwidth();
  std::printf(
      "memory bandwidth, one core, 128 MiB arrays: copy %.2f GB/s, triad %.2f GB/s, "
      "add %.2f GB/s; codec kernels: %s\n",
      bw.copy / 1e9, bw.triad / 1e9, bw.add / 1e9, cpu::isa_name(cpu::best_isa()));
  std::fflush(stdout);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

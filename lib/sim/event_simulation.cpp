#include "sim/event_simulation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "codec/encoder.h"
#include "core/cpu_time.h"
#include "core/errors.h"
#include "sim/virtual_network.h"
#include "train/staleness.h"
#include "train/update_exchange.h"

namespace gradshare::sim {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// The cores the ranks share, as the kernel shares them: when more ranks want to run than there
// are cores, each runs slower by runnable / cores (processor sharing). A rank asleep until its
// next message does not count. No cores given: every rank has its own.
class Cores {
 public:
  explicit Cores(int cores) : cores_(cores) {}
  void set_runnable(int runnable) { runnable_ = runnable; }
  // Runs `seconds` of CPU from `at`; returns when it ends.
  double run(double at, double seconds) const {
    if (cores_ <= 0 || runnable_ <= cores_) return at + seconds;
    return at + seconds * static_cast<double>(runnable_) / cores_;
  }

 private:
  int cores_;
  int runnable_ = 0;
};

struct Replica {
  std::vector<float> parameters;
  std::unique_ptr<train::UpdateExchange> exchange;
  // Workers only.
  std::unique_ptr<codec::Encoder> encoder;
  std::unique_ptr<train::StalenessTracker> staleness;
  std::int64_t step = 0;
  std::int64_t sent_step = 0;
  std::uint64_t seq = 0;
  double timed_from = 0;   // clock when the untimed steps ended
  double finished_at = 0;  // clock at the last step
  bool waiting = false;    // asleep until a message arrives
  double wait_started = 0;
  RankResult result;
};

// Least squares of cpu = apply * applied + copy * sent over the ranks.
void fit_costs(const std::vector<RankResult>& ranks, StepCosts& costs) {
  double aa = 0, ab = 0, bb = 0, ay = 0, by = 0;
  for (const auto& r : ranks) {
    const double a = static_cast<double>(r.applied), b = static_cast<double>(r.transport.messages_sent);
    aa += a * a, ab += a * b, bb += b * b, ay += a * r.exchange_cpu_seconds, by += b * r.exchange_cpu_seconds;
  }
  const double det = aa * bb - ab * ab;
  if (det > 1e-9 * aa * bb) {
    costs.apply_seconds = std::max((ay * bb - by * ab) / det, 0.0);
    costs.copy_seconds = std::max((by * aa - ay * ab) / det, 0.0);
  } else {  // every rank in the same proportion: charge it all to the applies
    costs.apply_seconds = aa > 0 ? ay / aa : 0.0;
    costs.copy_seconds = 0.0;
  }
}

}  // namespace

EventResult simulate_events(const config::ExperimentConfig& config, const ModelSample& sample,
                            const EventSetup& setup) {
  const int ranks = setup.tree.size();
  const int workers = ranks - 1;
  GS_CHECK(workers >= 1 && !sample.updates.empty(), "simulate_events needs a worker and updates");
  const std::size_t n = sample.parameter_count;
  VirtualNetwork network(setup.tree, setup.placement, setup.link,
                         static_cast<std::size_t>(config.transport.ring_bytes));
  Cores cores(setup.cores);
  const auto keep_bytes = static_cast<std::size_t>(config.fault_tolerance.keep_bytes);
  const float scale = config.encoding.combine == "mean" ? 1.0f / static_cast<float>(workers) : 1.0f;
  const std::int64_t untimed = setup.steps / 5;

  std::vector<Replica> replicas(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    auto& replica = replicas[static_cast<std::size_t>(r)];
    replica.parameters.assign(n, 0.0f);
    replica.exchange = std::make_unique<train::UpdateExchange>(network.plane(r), r, ranks, n, keep_bytes);
    if (r == 0) continue;
    replica.encoder = std::make_unique<codec::Encoder>(config.encoding, n);
    std::vector<std::uint8_t> unsent;
    for (std::int64_t s = 0; s < setup.encoder_warm_up; ++s) {
      const auto& u = sample.updates[static_cast<std::size_t>(r * 7 + s) % sample.updates.size()];
      std::vector<float> scaled(u.begin(), u.end());
      for (auto& value : scaled) value *= scale;
      replica.encoder->encode(scaled, {static_cast<std::uint32_t>(r), 0, 0, 0, 0}, unsent);
    }
    replica.staleness =
        std::make_unique<train::StalenessTracker>(ranks, r, config.encoding.max_staleness);
    auto* tracker = replica.staleness.get();
    const auto* step = &replica.step;
    replica.exchange->on_applied([tracker, step](const codec::MessageHeader& header) {
      tracker->applied(static_cast<int>(header.origin), header.iteration,
                       (header.flags & train::kFlagIdle) != 0, *step);
    });
  }

  std::vector<float> update(n);
  std::vector<std::uint8_t> message;
  double encode_cpu = 0;
  std::uint64_t encodes = 0;
  std::uint64_t backpressure = 0;
  double waited = 0;

  // One worker message: the step's update (or zeros, to send what the residual holds).
  const auto send = [&](int r, Replica& w, bool zeros) {
    if (zeros) std::fill(update.begin(), update.end(), 0.0f);
    else {
      const auto& u = sample.updates[static_cast<std::size_t>(r * 7 + w.step) % sample.updates.size()];
      for (std::size_t i = 0; i < n; ++i) update[i] = u[i] * scale;
    }
    const double start = core::thread_cpu_seconds();
    if (!zeros && !w.exchange->can_publish(w.encoder->max_message_bytes()) &&
        !w.exchange->can_publish(w.encoder->message_bytes_bound(update))) {
      w.encoder->accumulate(update);
      ++backpressure;
      return core::thread_cpu_seconds() - start;
    }
    const codec::MessageMeta meta{static_cast<std::uint32_t>(r), ++w.seq,
                                  static_cast<std::uint64_t>(w.step), 0, 0};
    w.encoder->encode(update, meta, message);
    const double encoded = core::thread_cpu_seconds();
    encode_cpu += encoded - start;
    ++encodes;
    w.exchange->publish(message, w.parameters);
    w.sent_step = w.step;
    w.result.encode_cpu_seconds += encoded - start;
    const double published = core::thread_cpu_seconds() - encoded;
    w.result.exchange_cpu_seconds += published;
    return core::thread_cpu_seconds() - start;
  };

  const auto done = [&] {
    for (int r = 1; r < ranks; ++r)
      if (replicas[static_cast<std::size_t>(r)].step < setup.steps) return false;
    return network.idle();
  };

  while (!done()) {
    // The rank to run: the earliest clock, a sleeping one at its next arrival.
    int next = -1;
    int runnable = 0;
    double at = kNever;
    for (int r = 0; r < ranks; ++r) {
      const auto& replica = replicas[static_cast<std::size_t>(r)];
      const double ready = replica.waiting ? network.next_arrival(r) : network.clock(r);
      if (ready < at) at = ready, next = r;
      if (!replica.waiting) ++runnable;
    }
    cores.set_runnable(std::max(runnable, 1));
    if (next < 0)
      throw core::RuntimeError("simulation stalled: every rank waits and nothing is in flight");
    auto& replica = replicas[static_cast<std::size_t>(next)];
    double& clock = network.clock(next);
    if (replica.waiting) {
      if (next > 0 && replica.step < setup.steps) waited += std::max(at - replica.wait_started, 0.0);
      clock = std::max(clock, at);
      replica.waiting = false;
    }
    const double start = core::thread_cpu_seconds();
    const std::size_t received = replica.exchange->poll(replica.parameters);
    const double polled = core::thread_cpu_seconds() - start;
    replica.result.exchange_cpu_seconds += polled;
    double cpu = polled;

    if (next > 0 && replica.step < setup.steps) {
      auto& w = replica;
      if (w.staleness->blocking_peer(w.step)) {
        if (w.sent_step < w.step && w.exchange->can_publish(w.encoder->max_message_bytes()))
          cpu += send(next, w, true);
        w.waiting = received == 0;
        clock = cores.run(clock, cpu);
        w.wait_started = clock;
        clock = cores.run(clock, cpu);
        continue;
      }
      ++w.step;
      clock = cores.run(clock, cpu + sample.compute_seconds + setup.step_overhead_seconds);
      clock = cores.run(clock, send(next, w, false));
      if (w.step == untimed) w.timed_from = clock;
      if (w.step == setup.steps) w.finished_at = clock;
      continue;
    }
    replica.waiting = received == 0;
    clock = cores.run(clock, cpu);
    replica.wait_started = clock;
  }

  EventResult result;
  double timed = 0;
  for (int r = 1; r < ranks; ++r) {
    const auto& w = replicas[static_cast<std::size_t>(r)];
    timed += (w.finished_at - w.timed_from) / static_cast<double>(setup.steps - untimed);
  }
  result.step_seconds = timed / workers;
  result.wait_seconds = waited / workers;
  result.backpressure = backpressure;
  const auto& reference = replicas[0].parameters;
  float largest = 0;
  for (float p : reference) largest = std::max(largest, std::abs(p));
  std::uint64_t published = 0, bytes = 0;
  for (int r = 0; r < ranks; ++r) {
    auto& replica = replicas[static_cast<std::size_t>(r)];
    const auto& stats = replica.exchange->stats();
    replica.result.applied = stats.applied;
    replica.result.relayed = stats.relayed;
    replica.result.published = stats.published;
    replica.result.bytes_published = stats.bytes_published;
    replica.result.transport = network.plane(r).stats();
    published += stats.published;
    bytes += stats.bytes_published;
    result.applied_twice += replica.exchange->applied_twice();
    for (std::size_t i = 0; i < n; ++i)
      result.max_replica_difference =
          std::max(result.max_replica_difference,
                   static_cast<double>(std::abs(replica.parameters[i] - reference[i])) /
                       std::max(static_cast<double>(largest), 1e-30));
    result.ranks.push_back(replica.result);
    for (int peer : setup.tree.links(r))
      result.edges.push_back({r, peer, network.link_flow(r, peer)});
  }
  result.costs.compute_seconds = sample.compute_seconds;
  result.costs.step_overhead_seconds = setup.step_overhead_seconds;
  result.costs.encode_seconds = encodes ? encode_cpu / static_cast<double>(encodes) : 0.0;
  result.costs.message_bytes = published ? static_cast<double>(bytes) / static_cast<double>(published) : 0.0;
  fit_costs(result.ranks, result.costs);
  return result;
}

}  // namespace gradshare::sim

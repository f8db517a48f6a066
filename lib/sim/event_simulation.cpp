#include "sim/event_simulation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <span>
#include <string>

#include "codec/encoder.h"
#include "codec/values.h"
#include "core/cpu_time.h"
#include "core/errors.h"
#include "sim/exchange_costs.h"
#include "sim/shared_cores.h"
#include "sim/state_collection.h"
#include "sim/virtual_network.h"
#include "train/sharing/aggregating_relay.h"
#include "train/sharing/staleness.h"
#include "train/sharing/update_exchange.h"

namespace gradshare::sim {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

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

// One simulation: the ranks' replicas over one virtual network, driven in clock order.
class EventSimulation {
 public:
  EventSimulation(const config::ExperimentConfig& config, const ModelSample& sample,
                  const EventSetup& setup)
      : sample_(sample),
        setup_(setup),
        ranks_(setup.tree.size()),
        n_(sample.parameter_count),
        network_(setup.tree, setup.placement, setup.link,
                 static_cast<std::size_t>(config.transport.ring_bytes)),
        cores_(setup.cores, setup.master_cpu_share),
        scale_(config.encoding.combine == "mean" ? 1.0f / static_cast<float>(ranks_ - 1) : 1.0f),
        untimed_(setup.steps / 5),
        replicas_(static_cast<std::size_t>(ranks_)),
        update_(n_) {
    const auto keep_bytes = static_cast<std::size_t>(config.fault_tolerance.keep_bytes);
    if (setup.aggregate) {
      const auto cap = train::aggregate_cap(config.encoding, n_,
                                            static_cast<int>(config.topology.aggregate_band),
                                            setup.training_epochs);
      aggregate_cap_bytes_ =
          static_cast<double>(codec::kHeaderBytes + codec::values_payload_bound(cap, n_));
    }
    for (int r = 0; r < ranks_; ++r) {
      auto& replica = replicas_[static_cast<std::size_t>(r)];
      replica.parameters.assign(n_, 0.0f);
      replica.exchange =
          std::make_unique<train::UpdateExchange>(network_.plane(r), r, ranks_, n_, keep_bytes);
      if (setup.aggregate) {
        replica.exchange->aggregate(config.encoding, setup.aggregate_wait_seconds,
                                    static_cast<int>(config.topology.aggregate_band), r > 0,
                                    setup.tree);
        // At the workers' band (make_worker).
        replica.exchange->set_training_progress(setup.training_epochs);
      }
      if (r > 0) make_worker(config, r, replica);
    }
  }

  EventResult run() {
    while (!done()) step_earliest();
    before_drain_ = counts();
    if (setup_.aggregate) drain_aggregates();
    return result();
  }

 private:
  void make_worker(const config::ExperimentConfig& config, int r, Replica& replica) {
    replica.encoder = std::make_unique<codec::Encoder>(config.encoding, n_);
    // Past any sparsity warm-up unless the setup says otherwise (EventSetup::training_epochs).
    replica.encoder->set_training_progress(setup_.training_epochs);
    std::vector<std::uint8_t> unsent;
    for (std::int64_t s = 0; s < setup_.encoder_warm_up; ++s)
      replica.encoder->encode(scaled_update(r, s), {static_cast<std::uint32_t>(r), 0, 0, 0, 0},
                              unsent);
    const std::int64_t bound =
        setup_.aggregate
            ? train::aggregated_staleness_bound(config.encoding.max_staleness, setup_.tree.max_depth())
            : config.encoding.max_staleness;
    replica.staleness =
        std::make_unique<train::StalenessTracker>(ranks_, r, bound, setup_.aggregate);
    auto* tracker = replica.staleness.get();
    const auto* step = &replica.step;
    replica.exchange->on_applied([tracker, step](const codec::ParsedMessage& message) {
      const auto& header = message.header;
      tracker->applied(static_cast<int>(header.origin), header.iteration,
                       (header.flags & train::kFlagIdle) != 0, *step);
    });
  }

  // Worker r's update at its step s: one of the sampled ones, scaled as encoding.combine says.
  std::span<const float> scaled_update(int r, std::int64_t s) {
    const auto& u = sample_.updates[static_cast<std::size_t>(r * 7 + s) % sample_.updates.size()];
    for (std::size_t i = 0; i < n_; ++i) update_[i] = u[i] * scale_;
    return update_;
  }

  bool done() const {
    if (collection_.ongoing()) return false;
    for (int r = 1; r < ranks_; ++r)
      if (replicas_[static_cast<std::size_t>(r)].step < setup_.steps) return false;
    return network_.idle();
  }

  // Whether worker `w` takes another step: until `steps`, and on while a collection lasts.
  bool trains(const Replica& w) const { return w.step < setup_.steps || collection_.ongoing(); }

  // Runs the rank whose clock is earliest (a sleeping one at its next arrival): it polls, then a
  // worker takes a step unless the staleness bound holds it; one with nothing to do sleeps.
  void step_earliest() {
    int next = -1;
    int runnable = 0;
    double at = kNever;
    for (int r = 0; r < ranks_; ++r) {
      const auto& replica = replicas_[static_cast<std::size_t>(r)];
      const double ready = replica.waiting ? wake_up(r) : network_.clock(r);
      if (ready < at) at = ready, next = r;
      // The master's reserved share stands for it (EventSetup::master_cpu_share).
      if (!replica.waiting && (r > 0 || setup_.master_cpu_share <= 0)) ++runnable;
    }
    if (next < 0)
      throw core::RuntimeError("simulation stalled: every rank waits and nothing is in flight");
    cores_.set_runnable(std::max(runnable, 1));
    auto& replica = replicas_[static_cast<std::size_t>(next)];
    double& clock = network_.clock(next);
    if (replica.waiting) {
      if (next > 0 && replica.step < setup_.steps)
        waited_ += std::max(at - replica.wait_started, 0.0);
      clock = std::max(clock, at);
      replica.waiting = false;
    }
    if (next > 0) collection_.send_piece(next, clock);
    std::size_t received = 0;
    double cpu = exchange(replica, [&] { received = replica.exchange->poll(replica.parameters, clock); });

    const bool training = next > 0 && trains(replica);
    if (training && !replica.staleness->blocking_peer(replica.step)) {
      ++replica.step;
      clock = cores_.run(clock, cpu + sample_.compute_seconds + setup_.step_overhead_seconds);
      clock = cores_.run(clock, send(next, replica, false));
      if (cores_.counting()) ++counted_steps_;
      if (replica.step == untimed_) {
        replica.timed_from = clock;
        if (++past_untimed_ == ranks_ - 1) note_timed_start(clock);
      }
      collection_.note_step(next, clock);
      if (replica.step == setup_.steps) {
        replica.finished_at = clock;
        count_window_over_ = true;  // the window ends with the first worker's last timed step
        cores_.count(false);
      }
      if (setup_.aggregate && !trains(replica)) replica.exchange->aggregator().set_training(false);
      clock = cores_.run(clock, send_aggregates(replica, clock, false));
      return;
    }
    // Done training (its steps, and any collection over): its relay stops waiting for it.
    if (next > 0 && !training && setup_.aggregate)
      replica.exchange->aggregator().set_training(false);
    // Held by the bound: what the residual still holds goes out, so peers see this clock move.
    if (training && replica.sent_step < replica.step &&
        replica.exchange->can_publish(replica.encoder->max_message_bytes()))
      cpu += send(next, replica, true);
    if (setup_.aggregate) cpu += send_aggregates(replica, clock, training);
    replica.waiting = received == 0;
    clock = cores_.run(clock, cpu);
    replica.wait_started = clock;
  }

  // Every worker is past the untimed steps: the cost fit counts from here, and a checkpoint
  // collection starts.
  void note_timed_start(double clock) {
    timed_from_ = counts();
    cores_.count(!count_window_over_);
    if (setup_.state_bytes > 0) collection_.start(clock);
  }

  std::vector<ExchangeCounts> counts() {
    std::vector<ExchangeCounts> all;
    for (int r = 0; r < ranks_; ++r) {
      const auto& replica = replicas_[static_cast<std::size_t>(r)];
      const auto& stats = replica.exchange->stats();
      all.push_back({static_cast<double>(stats.applied), static_cast<double>(stats.published),
                     static_cast<double>(network_.plane(r).stats().messages_sent),
                     replica.result.exchange_cpu_seconds, replica.result.aggregate_cpu_seconds,
                     static_cast<double>(stats.aggregated),
                     static_cast<double>(stats.aggregated_bytes)});
    }
    return all;
  }

  // Runs `work` (a call into the exchange) and charges its CPU to the rank.
  template <typename Work>
  double exchange(Replica& replica, Work&& work) {
    const double start = core::thread_cpu_seconds();
    work();
    const double cpu = core::thread_cpu_seconds() - start;
    replica.result.exchange_cpu_seconds += cpu;
    return cpu;
  }

  // Aggregating: the links' messages that are due at `clock` (flush: all that are owed).
  double send_aggregates(Replica& replica, double clock, bool flush) {
    if (!setup_.aggregate) return 0.0;
    const double cpu = exchange(replica, [&] { replica.exchange->send_aggregates(clock, flush); });
    replica.result.aggregate_cpu_seconds += cpu;
    return cpu;
  }

  // When a waiting rank runs next: its next message, or an aggregate's wait running out.
  double wake_up(int r) {
    const double arrival = std::min(network_.next_arrival(r), collection_.piece_due(r));
    if (!setup_.aggregate) return arrival;
    const double deadline = replicas_[static_cast<std::size_t>(r)].exchange->aggregator().next_deadline();
    // A deadline at or before the clock has been tried: its link was full; an arrival frees it.
    return deadline > network_.clock(r) ? std::min(arrival, deadline) : arrival;
  }

  // After the last step, the training's drain: one flush round (aggregating_relay.h) empties
  // every relay residual, and the replicas end equal to rounding.
  void drain_aggregates() {
    for (auto& replica : replicas_) {
      replica.exchange->aggregator().set_training(false);
      replica.exchange->begin_flush();
    }
    for (bool complete = false; !complete;) {
      complete = true;
      for (int r = 0; r < ranks_; ++r)
        complete = drain_rank(r) && complete;
    }
  }

  // Rank r takes what arrived and sends what is due; whether its flush round is complete.
  bool drain_rank(int r) {
    auto& replica = replicas_[static_cast<std::size_t>(r)];
    double& clock = network_.clock(r);
    clock = std::max(clock, std::min(network_.next_arrival(r), clock + 1.0));
    replica.exchange->poll(replica.parameters, clock);
    replica.exchange->send_aggregates(clock, true);
    return replica.exchange->flush_complete(1);
  }

  // Worker r's message: its step's update (or zeros); back-pressure keeps the update in the
  // residual as the real worker does. Returns the CPU seconds taken.
  double send(int r, Replica& w, bool zeros) {
    if (zeros)
      std::fill(update_.begin(), update_.end(), 0.0f);
    else
      scaled_update(r, w.step);
    const double start = core::thread_cpu_seconds();
    if (!zeros && !w.exchange->can_publish(w.encoder->max_message_bytes()) &&
        !w.exchange->can_publish(w.encoder->message_bytes_bound(update_))) {
      w.encoder->accumulate(update_);
      ++backpressure_;
      return core::thread_cpu_seconds() - start;
    }
    const codec::MessageMeta meta{static_cast<std::uint32_t>(r), ++w.seq,
                                  static_cast<std::uint64_t>(w.step), 0, 0};
    w.encoder->encode(update_, meta, message_);
    const double encoded = core::thread_cpu_seconds();
    encode_cpu_ += encoded - start;
    ++encodes_;
    w.result.encode_cpu_seconds += encoded - start;
    w.exchange->publish(message_, w.parameters, network_.clock(r));
    w.sent_step = w.step;
    const double end = core::thread_cpu_seconds();
    w.result.exchange_cpu_seconds += end - encoded;
    return end - start;
  }

  EventResult result() {
    EventResult result;
    const int workers = ranks_ - 1;
    double timed = 0;
    for (int r = 1; r < ranks_; ++r) {
      const auto& w = replicas_[static_cast<std::size_t>(r)];
      timed += (w.finished_at - w.timed_from) / static_cast<double>(setup_.steps - untimed_);
    }
    // No faster than the cores run, during a collection as at other times.
    double cpu_floor = 0;
    if (setup_.cores > 0 && counted_steps_ > 0) {
      result.cpu_seconds_per_step = cores_.demanded() / static_cast<double>(counted_steps_);
      cpu_floor = result.cpu_seconds_per_step * workers / cores_.available();
    }
    result.step_seconds = std::max(timed / workers, cpu_floor);
    result.wait_seconds = waited_ / workers;
    result.backpressure = backpressure_;
    const auto& reference = replicas_[0].parameters;
    float largest = 0;
    for (float p : reference) largest = std::max(largest, std::abs(p));
    std::uint64_t published = 0, bytes = 0;
    // The aggregates' figures before the drain, whose flush round is no step's.
    double aggregates = 0, aggregate_bytes = 0, links = 0;
    if (setup_.aggregate)
      for (std::size_t r = 0; r < replicas_.size(); ++r) {
        aggregates += before_drain_[r].aggregated;
        aggregate_bytes += before_drain_[r].aggregated_bytes;
        links += static_cast<double>(replicas_[r].exchange->link_count());
      }
    const double scale = std::max(static_cast<double>(largest), 1e-30);
    for (int r = 0; r < ranks_; ++r) {
      auto& replica = replicas_[static_cast<std::size_t>(r)];
      const auto& stats = replica.exchange->stats();
      replica.result.applied = stats.applied;
      replica.result.relayed = stats.relayed;
      replica.result.published = stats.published;
      replica.result.bytes_published = stats.bytes_published;
      replica.result.transport = network_.plane(r).stats();
      published += stats.published;
      bytes += stats.bytes_published;
      result.applied_twice += replica.exchange->applied_twice();
      for (std::size_t i = 0; i < n_; ++i) {
        const double difference = std::abs(replica.parameters[i] - reference[i]);
        result.max_replica_difference = std::max(result.max_replica_difference, difference / scale);
      }
      result.ranks.push_back(replica.result);
      for (int peer : setup_.tree.links(r))
        result.edges.push_back({r, peer, network_.link_flow(r, peer)});
    }
    result.costs.compute_seconds = sample_.compute_seconds;
    result.costs.step_overhead_seconds = setup_.step_overhead_seconds;
    result.costs.encode_seconds = encodes_ ? encode_cpu_ / static_cast<double>(encodes_) : 0.0;
    result.costs.message_bytes =
        published ? static_cast<double>(bytes) / static_cast<double>(published) : 0.0;
    if (setup_.aggregate && aggregates > 0) {
      // What crosses the links is the aggregates, not the workers' own messages: their size per
      // worker they carry, and the densest a message can be (a link's cap).
      result.mean_aggregate_bytes = aggregate_bytes / aggregates;
      result.costs.max_message_bytes = aggregate_cap_bytes_;
      result.costs.message_bytes = per_worker_aggregate_bytes(
          setup_.tree, result.mean_aggregate_bytes, result.costs.max_message_bytes);
      result.aggregates_per_link_step = aggregates / links / static_cast<double>(setup_.steps);
      result.costs.aggregates_per_link_step = result.aggregates_per_link_step;
    }
    if (collection_.started()) {
      result.collection_seconds = collection_.seconds();
      result.collection_step_seconds = std::max(collection_.step_seconds(), cpu_floor);
    }
    if (setup_.aggregate)
      measure_aggregate_costs(timed_from_, before_drain_, result.costs);
    else
      fit_costs(timed_from_, before_drain_, result.costs);
    return result;
  }

  const ModelSample& sample_;
  const EventSetup& setup_;
  const int ranks_;
  const std::size_t n_;
  VirtualNetwork network_;
  Cores cores_;
  const float scale_;
  const std::int64_t untimed_;
  std::vector<Replica> replicas_;
  std::vector<float> update_;
  std::vector<std::uint8_t> message_;
  double encode_cpu_ = 0;
  double aggregate_cap_bytes_ = 0;  // a link's cap (topology.aggregate_band), as values
  std::uint64_t encodes_ = 0;
  std::uint64_t backpressure_ = 0;
  double waited_ = 0;
  int past_untimed_ = 0;  // workers past the untimed steps
  std::int64_t counted_steps_ = 0;  // worker steps while the cores counted their CPU
  bool count_window_over_ = false;   // a worker finished its timed steps
  StateCollection collection_{setup_, network_};
  std::vector<ExchangeCounts> timed_from_ =
      std::vector<ExchangeCounts>(static_cast<std::size_t>(ranks_));
  std::vector<ExchangeCounts> before_drain_;
};

}  // namespace

EventResult simulate_events(const config::ExperimentConfig& config, const ModelSample& sample,
                            const EventSetup& setup) {
  GS_CHECK(setup.tree.size() >= 2 && !sample.updates.empty(),
           "simulate_events needs a worker and updates");
  return EventSimulation(config, sample, setup).run();
}

double charged_cpu_per_step(const EventResult& result) {
  double per_step = 0;
  int workers = 0;
  for (std::size_t r = 1; r < result.ranks.size(); ++r) {
    const auto& rank = result.ranks[r];
    if (rank.published == 0) continue;
    per_step += (rank.encode_cpu_seconds + rank.exchange_cpu_seconds) /
                static_cast<double>(rank.published);
    ++workers;
  }
  return result.costs.compute_seconds + (workers > 0 ? per_step / workers : 0.0);
}

}  // namespace gradshare::sim

#include "sim/checkpoint_time.h"

#include <algorithm>
#include <cstdio>

#include "train/sharing/protocol.h"

namespace gradshare::sim {

CheckpointTime time_with_checkpoints(const config::ExperimentConfig& config,
                                     const ModelSample& sample, EventSetup setup,
                                     const RunRecords& run, double steady_seconds) {
  CheckpointTime time;
  time.predicted = steady_seconds;
  double steps = 0, workers = 0;
  for (const auto& [rank, r] : run.ranks)
    if (rank > 0) steps += r.steps, workers += 1;
  if (run.checkpoint_collections <= 0 || run.checkpoint_state_bytes <= 0 || steps <= 0)
    return time;
  time.collections = run.checkpoint_collections;
  time.state_bytes = run.checkpoint_state_bytes / (time.collections * workers);
  setup.state_bytes = static_cast<std::size_t>(time.state_bytes);
  setup.state_piece_bytes = train::state_piece_bytes(setup.state_bytes, true);
  const EventResult events = simulate_events(config, sample, setup);
  if (events.collection_seconds <= 0 || events.collection_step_seconds <= 0) {
    time.collections = 0;  // no collection simulated (a state under a byte): nothing to say
    return time;
  }
  time.collection_seconds = events.collection_seconds;
  time.step_seconds = events.collection_step_seconds;
  const double per_worker = steps / workers;
  const double collecting = std::min(time.collections * time.collection_seconds,
                                     per_worker * time.step_seconds);
  const double steady_steps = std::max(per_worker - collecting / time.step_seconds, 0.0);
  time.predicted = (collecting + steady_steps * steady_seconds) / per_worker;
  return time;
}

void print_time_with_checkpoints(const LinkModel& link, double measured,
                                 const CheckpointTime& time) {
  if (time.collections <= 0) return;
  std::printf(
      "time per step (%s) with the run's checkpoints: measured %.3f ms; event simulation %.3f ms "
      "(%s): collections %.0f, each %.1f kB per worker, %.2f s at %.3f ms per step\n",
      rate_name(link.bits_per_second).c_str(), 1e3 * measured, 1e3 * time.predicted,
      percent(time.predicted, measured).c_str(), time.collections, time.state_bytes / 1e3,
      time.collection_seconds, 1e3 * time.step_seconds);
}

}  // namespace gradshare::sim

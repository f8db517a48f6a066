// sim/checkpoint_time.h: what a run's checkpoints add to its time per step. Each collection
// sends the master every worker's state over the links the updates use (in pieces, training
// going on: sharing/checkpoint_collection.h); on a slow link that holds updates back and the
// staleness bound holds the workers. The event simulation is run once more with one collection
// of the run's mean state per worker (EventSetup::state_bytes): it gives how long a collection
// lasts (D) and the time per step meanwhile (T_c). Of a run's S steps per worker, with C
// collections and the steady time per step T_s, min(C D, S T_c) of its time passes collecting
// and the rest of the steps at T_s:
//     predicted = (min(C D, S T_c) + max(S - C D / T_c, 0) T_s) / S.
// The run's collections include any abandoned for a repair, whose state arrived only in part:
// after a failure the mean state per collection comes out smaller than a worker's state.
#pragma once

#include "config/experiment_config.h"
#include "sim/event_simulation.h"
#include "sim/model_sample.h"
#include "sim/run_records.h"

namespace gradshare::sim {

struct CheckpointTime {
  double collections = 0;      // C
  double state_bytes = 0;      // per worker and collection
  double collection_seconds = 0;  // D
  double step_seconds = 0;     // T_c
  double predicted = 0;        // the time per step with them (the steady one without any)
};

// `setup` and `steady_seconds`: the event simulation that predicted the run's steady time per
// step. A run without checkpoint collections predicts steady_seconds.
CheckpointTime time_with_checkpoints(const config::ExperimentConfig& config,
                                     const ModelSample& sample, EventSetup setup,
                                     const RunRecords& run, double steady_seconds);

// "time per step (RATE) with the run's checkpoints: measured ...; event simulation ..." (after
// print_time_per_step's line), or nothing when the run collected none.
void print_time_with_checkpoints(const LinkModel& link, double measured,
                                 const CheckpointTime& time);

}  // namespace gradshare::sim

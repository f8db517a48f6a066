// sim/run_records.h: what `gradshare simulate --validate` reads of a finished gradient-sharing
// run (each rank's relays record and the master's CPU share), and how it prints a comparison.
#pragma once

#include <map>
#include <string>

#include "sim/link_model.h"
#include "sim/projection.h"
#include "sim/traffic.h"

namespace gradshare::sim {

struct RankRecord {
  int links = 0;
  double published = 0, bytes_published = 0;
  Flow sent, received;
  Flow flushed;                         // aggregating: the flush rounds' finals it sent
  double steps = 0, train_seconds = 0;  // a worker's steps and the wall time they took
  double cpu_seconds = 0;               // and the CPU its process used meanwhile
};

struct RunRecords {
  std::map<int, RankRecord> ranks;
  double master_cpu_share = 0;  // the master's CPU over its wall time (sharing summary)
  // Its checkpoint collections and the workers' state bytes they gathered in all (summary).
  double checkpoint_collections = 0;
  double checkpoint_state_bytes = 0;
};

// The relays records (one per rank) and the sharing summary of a run directory's metrics;
// core::UserError when it has none.
RunRecords read_records(const std::string& directory);

// "+12.3 %": predicted against measured.
std::string percent(double predicted, double measured);

// The line "time per step (RATE): measured ...; event simulation ...; flow model ..." (seconds in,
// milliseconds and percentages out).
void print_time_per_step(const LinkModel& link, double measured, double event_seconds,
                         const Projection& flow);

}  // namespace gradshare::sim

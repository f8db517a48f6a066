// sharing/report.h: the figures a gradient-sharing worker sends the master every
// logging.every_steps steps (as deltas since its previous report), and their sum over workers.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "comm/byte_io.h"
#include "comm/control_channel.h"
#include "train/tags.h"
#include "comm/data_plane.h"

#include "train/sharing/staleness.h"
#include "train/step_counts.h"

namespace gradshare::train {

struct SharingReport : StepCounts {
  std::int64_t messages = 0;  // own messages sent
  std::int64_t bytes = 0;     // bytes of own messages
  std::int64_t entries = 0;   // quanta in own messages
  std::int64_t sparse_messages = 0;
  std::int64_t bitmap_messages = 0;
  std::int64_t compressed_messages = 0;
  std::int64_t shake_ups = 0;
  std::int64_t backpressure = 0;  // steps whose update stayed in the residual
  std::int64_t relayed = 0;
  std::int64_t duplicates = 0;
  std::int64_t rejected = 0;
  double clipped_mass = 0;
  double sparsity_sum = 0;  // sum over messages of entries / n
  double seconds = 0;        // the worker's wall time these figures cover
  float tau_min = 0;         // over the steps of this report
  float tau_max = 0;
  std::int64_t capped_messages = 0;  // messages the congestion cap held to the sparsity band
  // The residual when the report was made (logging.encoding_debug; 0 otherwise); over workers,
  // the largest.
  float residual_l2 = 0;
  float residual_max_abs = 0;
  // Staleness of the peer updates applied and time held by the bound (staleness.h).
  StalenessStats staleness;

  void add(const SharingReport& other);
  static constexpr comm::Tag kTag = tags::kSharingReport;
};

// DrainedReport: a worker's replica once every update of the run has arrived there, for the
// model-equivalence check and the relay counts (in a tree every message reaches every replica
// once, so relayed = (messages of the others) x (links - 1)).
struct DrainedReport {
  std::int64_t applied_twice = 0;  // UpdateExchange::applied_twice
  std::uint64_t published = 0;     // own messages sent over the run
  std::uint64_t relayed = 0;       // message copies forwarded to other links
  std::int32_t links = 0;          // its links in the tree
  std::uint64_t bytes_published = 0;  // payload bytes of its own messages
  comm::TransportStats transport;     // its data plane's counters (since the last repair)
  double cpu_seconds = 0;             // process CPU (user + kernel) since it began to train
  std::uint64_t flush_messages = 0;   // aggregating: finals and markers sent (in transport)
  std::uint64_t flush_bytes = 0;
  std::vector<float> parameters;

  static constexpr comm::Tag kTag = tags::kSharingDrained;
  static auto fields(auto& self) {
    return std::tie(self.applied_twice, self.published, self.relayed, self.links,
                    self.bytes_published, self.transport.messages_sent, self.transport.bytes_sent,
                    self.transport.messages_received, self.transport.bytes_received,
                    self.cpu_seconds, self.flush_messages, self.flush_bytes, self.parameters);
  }
};

}  // namespace gradshare::train

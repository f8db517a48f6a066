// sharing/drain.h: the end of a gradient-sharing run as the master sees it (the workers' side
// is sharing/worker_drain.cpp):
//
//   worker w                                   master
//   SharingDone {last seq it published}   -->  (every live worker's in: the targets)
//                                         <--  SharingDrainTarget {last seq per origin}
//   applies every origin up to its target
//   DrainedReport {its model, counters}   -->  drained once every live worker's report is in
//                                              and the master has applied up to the targets
//
// A worker lost meanwhile is forgotten (its target is what the master applied from it); a
// repair starts the drain again.
//
// Aggregating (topology.aggregate) the update IDs are the links', not the workers': the target is
// a flush round instead (sharing/aggregating_relay.h), which the master begins when it sends the
// targets and each worker once it has no partition left; a worker has drained once that round is
// complete on its side, and every replica then holds every update (to rounding).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "comm/control_channel.h"
#include "comm/data_plane.h"
#include "train/sharing/protocol.h"
#include "train/sharing/report.h"
#include "train/sharing/update_exchange.h"

namespace gradshare::train {

class SharingDrain {
 public:
  // A rank's relay counters, from its DrainedReport.
  struct Relays {
    std::uint64_t published = 0, relayed = 0;
    std::int32_t links = 0;
    std::uint64_t bytes_published = 0;
    comm::TransportStats transport;
    double cpu_seconds = 0;  // a worker's process CPU while it trained
    std::uint64_t flush_messages = 0, flush_bytes = 0;  // aggregating: finals, in transport
  };

  // `ranks`: the job's ranks, the master included.
  explicit SharingDrain(int ranks) : ranks_(ranks), targets_(static_cast<std::size_t>(ranks), 0) {}

  void done(int worker, const SharingDone& done);
  void drained(int worker, DrainedReport report);
  // Every one of `live` has reported SharingDone and the targets are not yet sent.
  bool ready_to_send(const std::vector<int>& live) const;
  // The targets to every one of `live`: a live worker's last seq from its SharingDone, a dead
  // one's what `exchange` applied from it; aggregating, the flush round `exchange` begins.
  void send_targets(const std::vector<int>& live, UpdateExchange& exchange,
                    comm::ControlChannel& control);
  bool targets_sent() const { return sent_; }
  // Every one of `live` drained and every update up to the targets applied by `exchange`.
  bool complete(const std::vector<int>& live, const UpdateExchange& exchange) const;

  // A worker lost: its reports no longer count.
  void forget(int worker);
  // After a repair: every worker reports SharingDone anew.
  void restart();

  std::size_t done_count() const { return done_.size(); }
  std::size_t drained_count() const { return models_.size(); }
  // Each drained worker's model, for the equivalence check.
  const std::map<int, std::vector<float>>& models() const { return models_; }
  // Updates the drained workers applied twice, summed.
  std::int64_t applied_twice() const;
  // Each drained rank's relay counters (the master adds its own).
  std::map<int, Relays>& relays() { return relays_; }

 private:
  int ranks_;
  std::vector<std::uint64_t> targets_;  // last seq per origin
  std::set<int> done_;                  // workers that reported SharingDone
  std::map<int, std::vector<float>> models_;
  std::map<int, std::int64_t> applied_twice_;
  std::map<int, Relays> relays_;
  bool sent_ = false;
  std::uint64_t flush_round_ = 0;  // aggregating: the round that drains
};

}  // namespace gradshare::train

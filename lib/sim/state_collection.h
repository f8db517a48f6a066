// state_collection.h: a checkpoint collection in the event simulation (EventSetup::state_bytes).
// Every worker sends the master its state in pieces of state_piece_bytes over the same links as
// the updates, the next piece once the master's acknowledgement is back (whole on the master's
// node, as sharing/worker.cpp sends it), and trains on meanwhile. The collection lasts until
// every piece has left and every worker's clock has passed the last piece's arrival.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "sim/event_simulation.h"
#include "sim/virtual_network.h"

namespace gradshare::sim {

class StateCollection {
 public:
  StateCollection(const EventSetup& setup, VirtualNetwork& network);

  // From `clock` on, each worker sends its state from its next turn on.
  void start(double clock);
  bool started() const { return start_ != kNever; }
  bool ongoing() const;
  // Worker `worker`'s next piece at `clock`, if the one before is acknowledged.
  void send_piece(int worker, double clock);
  // When worker `worker` may send its next piece (never once its state is sent).
  double piece_due(int worker) const { return due_[static_cast<std::size_t>(worker)]; }
  // A step of worker `worker` ended at `clock` (counted while the collection had started).
  void note_step(int worker, double clock);

  // From the start to the last piece's arrival.
  double seconds() const { return end_ - start_; }
  // The collection's time per step of one worker: the workers' steps that ended while the
  // state crossed, over the workers.
  double step_seconds() const;

 private:
  static constexpr double kNever = std::numeric_limits<double>::infinity();

  const EventSetup& setup_;
  VirtualNetwork& network_;
  std::vector<std::size_t> left_;               // per rank: state bytes still to send
  std::vector<double> due_;                     // per rank: when its next piece may leave
  std::vector<std::vector<double>> step_ends_;  // per rank: its steps' ends since the start
  double start_ = kNever;
  double end_ = kNever;  // the arrival of the last piece sent so far
};

}  // namespace gradshare::sim

// in_process_failures.h: process failure and repair in a job whose ranks are threads of one
// process, with the semantics ULFM gives an MPI job, so that recovery can be tested in one
// process:
//   - a rank's thread that dies (fail) is a failed process: from then on every control
//     receive of every live rank throws a TransportError that says so, as ULFM's failure check
//     on every poll does; a send throws to the failed rank, or once a repair has begun (the
//     communicator revoked), and otherwise goes;
//   - repair is collective over the live ranks: each calls it, the last to arrive completes it
//     for all, and all return what it did: the logical ranks lost since the previous repair and
//     those a spare took (replace) or that are gone (shrink);
//   - spares (the last `spares` threads) wait, without a logical rank, until a repair gives
//     them one or the master releases them.
// Ranks are logical, as in a sharing session: a spare that takes rank L is rank L afterwards.
// Every wait is bounded by the timeout (a TransportError that is not a process failure), so a
// test fails instead of hanging.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

namespace gradshare::comm {

struct InProcessRepair {
  std::vector<int> lost;      // logical ranks whose threads died since the previous repair
  std::vector<int> replaced;  // the lost ranks a spare took, ascending
  std::vector<int> workers;   // logical ranks of the live workers after it, ascending
  int rounds = 1;
};

class InProcessFailures {
 public:
  // Threads 0 .. ranks - 1; the last `spares` of them are spares (logical ranks 0 .. ranks -
  // spares - 1 belong to the others).
  InProcessFailures(int ranks, int spares, double timeout_seconds);

  // The thread `thread` ended by a fault.
  void fail(int thread);
  // Failures the latest repair dealt with. A channel made when it was g fails once a failure
  // happened after that: a rank whose thread started late fails at once, as a process does on
  // a revoked communicator, and takes part in the repair.
  int repaired_failures() const;
  // Throws TransportError (a process failure) when more than `repaired` ranks failed.
  void check(int repaired) const;
  // For a channel made when `repaired` failures were repaired: whether a repair has begun
  // since (a rank joined one, or one completed: MPI would have revoked that channel) or logical
  // rank `logical` failed.
  bool repair_begun_or_failed(int logical, int repaired) const;

  // Logical rank `logical` takes part in a repair; returns once every live rank has. `replace`:
  // waiting spares take the lost ranks in ascending order. `complete` runs once, on the thread
  // of the last to arrive, before any returns.
  using Complete = std::function<void(const InProcessRepair&)>;
  InProcessRepair repair(int logical, bool replace, const Complete& complete);

  // Spare thread `thread` waits: its new logical rank and the repair that gave it, or nothing
  // once released.
  struct Assignment {
    int logical;
    InProcessRepair repair;
  };
  std::optional<Assignment> wait_as_spare(int thread);
  void release_spares();

 private:
  // Whether every live rank (and every spare still waiting) is in the current repair.
  bool everyone_arrived() const;
  InProcessRepair complete_repair(bool replace, const Complete& complete);

  double timeout_seconds_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<int> logical_;   // per thread: its logical rank, -1 for a spare, -2 once dead
  std::vector<int> lost_;      // logical ranks died since the previous repair
  std::set<int> arrived_;      // logical ranks in the current repair
  std::vector<int> waiting_spares_;
  int failures_ = 0;           // so far
  int repaired_failures_ = 0;  // of those, the ones the latest repair dealt with
  int repairs_ = 0;            // completed repairs
  InProcessRepair last_;       // what the latest repair did
  std::vector<std::optional<Assignment>> assigned_;  // per thread, for a spare
  bool released_ = false;
};

}  // namespace gradshare::comm

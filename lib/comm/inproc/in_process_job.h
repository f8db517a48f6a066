// in_process_job.h: a job whose ranks are threads of one process, for tests that run a
// strategy's master and workers together: rank r's Job hands out rank r's in-process control
// channel and (ranks 1 ..) workers' group member. Each rank's thread uses only its own Job.
// A hub made repairable lets a rank's thread die and the others repair the job as under ULFM
// (comm/inproc/in_process_failures.h); its control channels' receives then fail after a
// failure until repaired.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/inproc/in_process.h"
#include "comm/inproc/in_process_control.h"
#include "comm/inproc/in_process_failures.h"
#include "comm/inproc/in_process_group.h"
#include "comm/job.h"
#include "topology/tree.h"

namespace gradshare::comm {

class InProcessJobHub;

// What an injected fault throws to end its rank's thread (InProcessJob::end_by_fault): no
// strategy catches it; the test's thread does, and fails its rank in the hub.
struct ThreadRankEnded {
  std::string kind;
};

// A job whose threads may die and be repaired, the last `spares` of them waiting as spares.
struct InProcessFaults {
  bool repairable = false;
  int spares = 0;
};

// Rank r's view of the hub.
class InProcessJob : public Job {
 public:
  InProcessJob(InProcessJobHub& hub, int rank) : hub_(hub), rank_(rank) {}
  // The thread's index (a spare's logical rank comes from a repair).
  int rank() const override { return rank_; }
  int size() const override;
  bool fault_tolerant() const override;
  std::unique_ptr<ControlChannel> control_channel(double timeout_seconds) override;
  void barrier() override;
  // Throws ThreadRankEnded: the thread ends, not the process.
  [[noreturn]] void end_by_fault(const std::string& kind) override;
  // The control channel of logical rank `logical` (after a repair: a spare's new rank).
  std::unique_ptr<ControlChannel> control_channel_of(int logical);
  // Logical rank `logical`'s member of the group of the live workers `live` (ascending, the same
  // list on every member; spares are not members): a group of its own per repair (the first
  // member to ask makes it), whose collectives fail once a rank fails, as the channels do.
  std::unique_ptr<WorkerGroup> worker_group_of(const std::vector<int>& live, int logical);
  // A second channel of its own, for heartbeats from another thread (never counted unreceived).
  std::unique_ptr<ControlChannel> heartbeat_channel_of(int logical);
  // Logical rank `logical`'s data plane to its neighbours in `tree` (the same tree on every
  // rank: the first caller of each tree version builds the rings of ring_bytes each, linking
  // every pair the tree links).
  DataPlane& tree_plane(const topology::Tree& tree, int logical, std::size_t ring_bytes);
  // After a failure, collective over the live ranks (see InProcessFailures::repair); messages
  // not yet received are dropped, as with the communicator a repair replaces.
  InProcessRepair repair(int logical, bool replace, const InProcessFailures::Complete& complete);
  // A spare's wait for a repair that needs it.
  std::optional<InProcessFailures::Assignment> wait_as_spare();
  void release_spares();
  // Failures repaired so far (all repairs together): the same on every live rank between
  // repairs (what keys an object shared until the next repair).
  int repaired_failures() const;
  // An object every rank's thread shares, made by the first to ask for `key` with make() (a
  // strategy's in-process stand-in for what MPI carries between processes).
  template <typename T, typename Make>
  T& shared(const std::string& key, Make make);

 private:
  InProcessJobHub& hub_;
  int rank_;
};

class InProcessJobHub {
 public:
  // `timeout_seconds` bounds every wait (the channels' receives, the group's collectives).
  InProcessJobHub(int ranks, double timeout_seconds, InProcessFaults faults = {});
  ~InProcessJobHub();
  int ranks() const { return control_.ranks(); }
  InProcessJob& job(int rank);
  // Control messages sent to `rank` and never received (a finished test expects none).
  std::size_t unreceived(int rank) { return control_.waiting(rank); }
  // Thread `thread` died (a repairable hub only).
  void fail(int thread);
  void release_spares() { failures_.release_spares(); }

 private:
  friend class InProcessJob;

  double timeout_seconds_;
  InProcessControlHub control_;
  InProcessControlHub heartbeats_;
  bool repairable_;
  InProcessFailures failures_;
  InProcessGroupHub everyone_;  // the job's barrier
  std::mutex shared_mutex_;
  std::map<std::string, std::shared_ptr<void>> shared_;
  std::vector<std::unique_ptr<InProcessJob>> jobs_;
};

template <typename T, typename Make>
T& InProcessJob::shared(const std::string& key, Make make) {
  std::lock_guard lock(hub_.shared_mutex_);
  auto& slot = hub_.shared_[key];
  if (!slot) slot = std::shared_ptr<T>(make());
  return *static_cast<T*>(slot.get());
}

}  // namespace gradshare::comm

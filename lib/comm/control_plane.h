// control_plane.h: two-sided tagged messages between master and workers (partition requests
// and grants, metrics, heartbeats, shutdown, recovery). Sends never block (payloads are copied
// and completed in the background); every blocking receive has a deadline and a missed one
// names the peer and what was awaited. Ranks are *logical* ranks (a process's place in the job):
// after a failure repair without replacement the communicator's ranks shift, and the plane
// translates (see comm/repair.h). Under ULFM every poll also reports failed peers.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "comm/communicator.h"

namespace gradshare::comm {

enum class Tag : int {
  kPartitionRequest = 1,
  kPartitionGrant,
  kMetrics,
  kHeartbeat,
  kShutdown,
  kDrained,
  kParameters,
  kStateRequest,
  kStateReply,
  kRecovery,
  kDone,          // a worker has no partition left: its last update seq
  kDrainTarget,   // the master's last seq per origin that every replica must reach
  kResyncFetch,   // recovery: the master asks for updates it missed, by ID
  kResyncUpdates, // recovery: encoded updates a replica missed
  kResyncDone,    // recovery: the master's go-ahead after the resync
  kDiverged,      // a worker's loss exploded (divergence guard): the step and the reason
  kStateTaken,    // the master has its checkpoint snapshot: paused workers train on
  kFinish,        // early stopping: the synchronous workers end training at their next round
  kResyncStateFetch,  // recovery: the master asks a replica for its whole state
  kResyncState,       // recovery: a replica's whole state (parameters and applied IDs)
  kPeakMemory,        // at the end: the master asks (empty), a rank answers (i64 peak bytes)
};
inline constexpr int kFirstTag = static_cast<int>(Tag::kPartitionRequest);
inline constexpr int kLastTag = static_cast<int>(Tag::kPeakMemory);

// "partition request", "heartbeat", ...
const char* tag_name(Tag tag);

inline constexpr int kAnySource = MPI_ANY_SOURCE;

struct ControlMessage {
  int source = -1;
  Tag tag = Tag::kHeartbeat;
  std::vector<std::uint8_t> payload;
};

class ControlPlane {
 public:
  // Collective over `comm` (duplicated, so control traffic never matches anything else).
  // logical[r] is the logical rank of comm rank r (empty: the same numbers).
  ControlPlane(MPI_Comm comm, double timeout_seconds, std::vector<int> logical = {});
  // Sends MPI has not finished are left to complete on their own (their buffers are kept).
  ~ControlPlane();
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  int rank() const { return rank_; }  // logical
  int size() const { return size_; }  // processes in the communicator
  MPI_Comm comm() const { return comm_.get(); }
  double timeout_seconds() const { return timeout_seconds_; }

  // Copies the payload and posts it (MPI_Isend); returns at once.
  void send(int dest, Tag tag, std::span<const std::uint8_t> payload);
  // The next message matching `tag` (any tag when empty) from `source`, if one has arrived.
  std::optional<ControlMessage> try_receive(std::optional<Tag> tag = std::nullopt,
                                            int source = kAnySource);
  // Polls with back-off until a matching message arrives; after timeout_seconds() throws
  // RuntimeError "timed out after 120.0 s waiting for rank 3: partition grant".
  // (Any tag when `tag` is empty.)
  ControlMessage receive(int source, std::optional<Tag> tag, const char* awaited);
  ControlMessage receive(int source, std::optional<Tag> tag, const char* awaited,
                         double timeout_seconds);
  // Waits (deadline as above) until MPI has taken every send posted so far.
  void flush();
  // Sends posted and not yet completed.
  std::size_t pending_sends();

 private:
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    int dest = 0;
    Tag tag = Tag::kHeartbeat;
    std::vector<std::uint8_t> bytes;
  };
  void complete_sends();
  int comm_rank(int logical) const;
  int logical_rank(int comm_rank) const;

  Communicator comm_;
  std::vector<int> logical_;  // comm rank -> logical rank (empty: identity)
  bool detect_failures_ = false;
  int rank_ = 0;
  int size_ = 0;
  double timeout_seconds_;
  std::deque<Pending> pending_;
};

}  // namespace gradshare::comm

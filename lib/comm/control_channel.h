// control_channel.h: two-sided tagged messages between master and workers (partition requests
// and grants, metrics, heartbeats, shutdown, recovery), whatever carries them: MPI between
// processes (mpi_control_channel.h) or queues between threads of one process
// (in_process_control.h, for tests that run a strategy's ranks as threads).
//   - send never blocks: the payload is copied and completes in the background;
//   - messages from one sender with one tag arrive in the order sent (MPI's non-overtaking rule);
//   - every blocking receive has a deadline, and a missed one names the peer and what was
//     awaited;
//   - ranks are *logical* ranks (a process's place in the job), which stay the same across a
//     failure repair (see comm/repair.h).
// What each tag carries is train/messages.h's business: this layer moves bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gradshare::comm {

enum class Tag : int {
  kPartitionRequest = 1,
  kPartitionGrant,
  kHeartbeat,
  kShutdown,
  kStateRequest,
  kRecovery,
  kResyncFetch,       // recovery: the master asks for updates it missed, by ID
  kResyncUpdates,     // recovery: encoded updates a replica missed
  kResyncDone,        // recovery: the master's go-ahead after the resync
  kDiverged,          // a worker's loss exploded (divergence guard): the step and the reason
  kFinish,            // early stopping: the synchronous workers end training at their next round
  kResyncStateFetch,  // recovery: the master asks a replica for its whole state
  kResyncState,       // recovery: a replica's whole state (parameters and applied IDs)
  kPeakMemory,        // at the end: a rank's peak memory
  kPeakMemoryRequest,
  kStart,       // master -> worker: where training starts
  kEpochModel,  // a synchronous worker's model at an epoch's end
  kAllreduceProgress,
  kAllreduceSnapshot,
  kAllreduceFinal,
  kAveragingReport,
  kAveragingSnapshot,
  kAveragingDone,
  kSharingReport,
  kSharingState,
  kSharingDone,
  kSharingDrainTarget,
  kSharingDrained,
  kReplacementStart,
  kDownpourReport,
  kDownpourState,
  kDownpourDone,
  kDownpourFinalPull,
  kDownpourFinalModel,
  kGroupResume,  // recovery: the master tells a synchronous worker where the run stands
  kDownpourResync,  // recovery: a parameter server tells a worker the last push it applied
  kDownpourResume,  // recovery: the master tells a Downpour worker what it has from it
  kDownpourServerEnd,  // at the end: a parameter server's peak memory and the seqs it applied
  kStateChunk,         // a sharing worker's checkpoint state, one piece at a time
  kStateChunkAck,      // the master has a piece: the next may go
};
inline constexpr int kFirstTag = static_cast<int>(Tag::kPartitionRequest);
inline constexpr int kLastTag = static_cast<int>(Tag::kStateChunkAck);

// "partition request", "heartbeat", ...
const char* tag_name(Tag tag);

// "timed out after 120.0 s waiting for <awaited>"
std::string timeout_message(double seconds, std::string_view awaited);
// "timed out after 120.0 s waiting for rank 3: partition grant"; rank < 0 reads "any rank".
std::string timeout_message(double seconds, int rank, std::string_view awaited);

// Matches a message from any rank.
inline constexpr int kAnySource = -1;

struct ControlMessage {
  int source = -1;
  Tag tag = Tag::kHeartbeat;
  std::vector<std::uint8_t> payload;
};

class ControlChannel {
 public:
  virtual ~ControlChannel() = default;

  virtual int rank() const = 0;  // logical
  virtual int size() const = 0;  // ranks in the channel
  virtual double timeout_seconds() const = 0;

  // Copies the payload and posts it; returns at once.
  virtual void send(int dest, Tag tag, std::span<const std::uint8_t> payload) = 0;
  // The next message matching `tag` (any tag when empty) from `source`, if one has arrived.
  virtual std::optional<ControlMessage> try_receive(std::optional<Tag> tag = std::nullopt,
                                                    int source = kAnySource) = 0;
  // Waits (deadline timeout_seconds()) until every send posted so far has been taken.
  virtual void flush() = 0;
  // Sends posted and not yet completed.
  virtual std::size_t pending_sends() = 0;
  // Throws the process failure try_receive would throw (a rank failed that no repair has dealt
  // with yet), taking no message: for waits on something else (a shard pull) that must not
  // outlast a failure. Nothing where the channel detects no failures.
  virtual void check_failures() {}
  // The next message matching `tag` from `source` if it has arrived, without try_receive's
  // check for failures (and nothing where an error keeps it from looking): for the master's
  // Shutdown, which ends a rank's run whatever failed after the master sent it.
  virtual std::optional<ControlMessage> try_receive_despite_failures(Tag tag, int source) = 0;
  // Whether a repair has begun (the channel was revoked: every repair revokes it first) or
  // `rank` failed, without throwing: what a rank that has handed in its results watches for
  // besides the master's Shutdown (train/job_session.h). False where the channel detects no
  // failures.
  virtual bool repair_begun_or_failed(int /*rank*/) { return false; }

  // Polls with back-off until a matching message arrives; after the timeout throws
  // RuntimeError "timed out after 120.0 s waiting for rank 3: partition grant".
  ControlMessage receive(int source, std::optional<Tag> tag, const char* awaited);
  ControlMessage receive(int source, std::optional<Tag> tag, const char* awaited,
                         double timeout_seconds);
};

}  // namespace gradshare::comm

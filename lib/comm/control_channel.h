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
// What each tag carries is train/messages.h's business (tags: train/tags.h): this layer moves
// bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gradshare::comm {

// A control message's tag: which payload it carries. This layer moves tagged bytes and never
// interprets a tag: the layer that defines the payloads numbers and names them
// (train/tags.h). A channel carries the tags from kFirstTag to kLastTag.
enum class Tag : int {};
inline constexpr int kFirstTag = 1;
inline constexpr int kLastTag = 255;

// How this layer's errors name a tag ("delivery of a <name> message"): "tag-5" until the
// layer that numbers the tags names them (train/tags.cpp does, as the program starts).
using TagNames = std::string (*)(Tag tag);
void name_tags(TagNames names);
std::string tag_label(Tag tag);

// "timed out after 120.0 s waiting for <awaited>"
std::string timeout_message(double seconds, std::string_view awaited);
// "timed out after 120.0 s waiting for rank 3: partition grant"; rank < 0 reads "any rank".
std::string timeout_message(double seconds, int rank, std::string_view awaited);

// Matches a message from any rank.
inline constexpr int kAnySource = -1;

struct ControlMessage {
  int source = -1;
  Tag tag{};
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

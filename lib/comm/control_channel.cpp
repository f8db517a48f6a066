// control_channel.cpp: tag names, the timeout message and the blocking receive every channel
// shares.
#include "comm/control_channel.h"

#include <cstdio>
#include <string>
#include <utility>

#include "core/errors.h"
#include "core/timer.h"

namespace gradshare::comm {

const char* tag_name(Tag tag) {
  switch (tag) {
    case Tag::kPartitionRequest:
      return "partition request";
    case Tag::kPartitionGrant:
      return "partition grant";
    case Tag::kHeartbeat:
      return "heartbeat";
    case Tag::kShutdown:
      return "shutdown";
    case Tag::kStateRequest:
      return "state request";
    case Tag::kRecovery:
      return "recovery";
    case Tag::kResyncFetch:
      return "resync fetch";
    case Tag::kResyncUpdates:
      return "resync updates";
    case Tag::kResyncDone:
      return "resync done";
    case Tag::kDiverged:
      return "diverged";
    case Tag::kFinish:
      return "finish";
    case Tag::kResyncStateFetch:
      return "resync state fetch";
    case Tag::kResyncState:
      return "resync state";
    case Tag::kPeakMemory:
      return "peak memory";
    case Tag::kPeakMemoryRequest:
      return "peak memory request";
    case Tag::kStart:
      return "start";
    case Tag::kEpochModel:
      return "epoch model";
    case Tag::kAllreduceProgress:
      return "allreduce progress";
    case Tag::kAllreduceSnapshot:
      return "allreduce snapshot";
    case Tag::kAllreduceFinal:
      return "allreduce final model";
    case Tag::kAveragingReport:
      return "averaging report";
    case Tag::kAveragingSnapshot:
      return "averaging snapshot";
    case Tag::kAveragingDone:
      return "averaging done";
    case Tag::kSharingReport:
      return "worker report";
    case Tag::kSharingState:
      return "worker state";
    case Tag::kStateChunk:
      return "worker state piece";
    case Tag::kStateChunkAck:
      return "worker state piece received";
    case Tag::kSharingDone:
      return "done";
    case Tag::kSharingDrainTarget:
      return "drain target";
    case Tag::kSharingDrained:
      return "drained";
    case Tag::kReplacementStart:
      return "replacement start";
    case Tag::kDownpourReport:
      return "Downpour report";
    case Tag::kDownpourState:
      return "Downpour state";
    case Tag::kDownpourDone:
      return "Downpour done";
    case Tag::kDownpourFinalPull:
      return "final pull";
    case Tag::kDownpourFinalModel:
      return "final model";
    case Tag::kGroupResume:
      return "group resume";
    case Tag::kDownpourResync:
      return "Downpour resync";
    case Tag::kDownpourResume:
      return "Downpour resume";
    case Tag::kDownpourServerEnd:
      return "Downpour server end";
  }
  return "unknown tag";
}

std::string timeout_message(double seconds, std::string_view awaited) {
  char text[64];
  std::snprintf(text, sizeof(text), "timed out after %.1f s waiting for ", seconds);
  return text + std::string(awaited);
}

std::string timeout_message(double seconds, int rank, std::string_view awaited) {
  const std::string who = rank < 0 ? "any rank" : "rank " + std::to_string(rank);
  return timeout_message(seconds, who + ": " + std::string(awaited));
}

ControlMessage ControlChannel::receive(int source, std::optional<Tag> tag, const char* awaited) {
  return receive(source, tag, awaited, timeout_seconds());
}

ControlMessage ControlChannel::receive(int source, std::optional<Tag> tag, const char* awaited,
                                       double timeout_seconds) {
  core::Deadline deadline(timeout_seconds);
  core::Backoff backoff;
  while (true) {
    if (auto message = try_receive(tag, source)) return std::move(*message);
    if (deadline.expired())
      throw core::RuntimeError(timeout_message(timeout_seconds, source, awaited));
    backoff.wait();
  }
}

}  // namespace gradshare::comm

// tags.cpp: the names of the tags (see tags.h).
#include "train/tags.h"

#include <array>

namespace gradshare::train {

namespace {

// Indexed by the tag's number less 1.
constexpr std::array<const char*, kTagCount> kNames = {"partition request",
                                                       "partition grant",
                                                       "heartbeat",
                                                       "shutdown",
                                                       "state request",
                                                       "recovery",
                                                       "resync fetch",
                                                       "resync updates",
                                                       "resync done",
                                                       "diverged",
                                                       "finish",
                                                       "resync state fetch",
                                                       "resync state",
                                                       "peak memory",
                                                       "peak memory request",
                                                       "start",
                                                       "epoch model",
                                                       "allreduce progress",
                                                       "allreduce snapshot",
                                                       "allreduce final model",
                                                       "averaging report",
                                                       "averaging snapshot",
                                                       "averaging done",
                                                       "worker report",
                                                       "worker state",
                                                       "done",
                                                       "drain target",
                                                       "drained",
                                                       "replacement start",
                                                       "Downpour report",
                                                       "Downpour state",
                                                       "Downpour done",
                                                       "final pull",
                                                       "final model",
                                                       "group resume",
                                                       "Downpour resync",
                                                       "Downpour resume",
                                                       "Downpour server end",
                                                       "worker state piece",
                                                       "worker state piece received",
                                                       "relay restart",
                                                       "shard rebuild",
                                                       "push log",
                                                       "snapshot taken",
                                                       "snapshot wanted",
                                                       "rebuild failed",
                                                       "takeover status",
                                                       "relay upward fetch",
                                                       "relay upward",
                                                       "checkpoint request"};

// The channels' errors name the tags too (comm::tag_label), from the start of the program.
const bool named = (comm::name_tags(&tag_name), true);

}  // namespace

std::string tag_name(comm::Tag tag) {
  const int number = static_cast<int>(tag);
  if (number < 1 || number > kTagCount) return "tag " + std::to_string(number);
  return kNames[static_cast<std::size_t>(number - 1)];
}

}  // namespace gradshare::train

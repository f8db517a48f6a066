// control_channel.cpp: the timeout message and the blocking receive every channel shares.
#include "comm/control_channel.h"

#include <cstdio>
#include <string>
#include <utility>

#include "core/errors.h"
#include "core/timer.h"

namespace gradshare::comm {

namespace {
TagNames tag_names = nullptr;  // constant-initialised: set before any dynamic initialiser runs
}  // namespace

void name_tags(TagNames names) { tag_names = names; }

std::string tag_label(Tag tag) {
  return tag_names ? tag_names(tag) : "tag-" + std::to_string(static_cast<int>(tag));
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

// in_process_control.cpp: InProcessControlHub and its channels.
#include "comm/inproc/in_process_control.h"

#include <string>

#include "core/errors.h"

namespace gradshare::comm {

int InProcessControlChannel::size() const { return hub_.ranks(); }

void InProcessControlChannel::send(int dest, Tag tag, std::span<const std::uint8_t> payload) {
  GS_CHECK(dest >= 0 && dest < hub_.ranks(), "control message to rank " + std::to_string(dest));
  auto& box = hub_.mailbox(dest);
  std::lock_guard lock(box.mutex);
  box.messages.push_back({rank_, tag, {payload.begin(), payload.end()}});
}

std::optional<ControlMessage> InProcessControlChannel::try_receive(std::optional<Tag> tag,
                                                                   int source) {
  auto& box = hub_.mailbox(rank_);
  std::lock_guard lock(box.mutex);
  for (auto it = box.messages.begin(); it != box.messages.end(); ++it) {
    if ((tag && it->tag != *tag) || (source != kAnySource && it->source != source)) continue;
    ControlMessage message = std::move(*it);
    box.messages.erase(it);
    return message;
  }
  return std::nullopt;
}

InProcessControlHub::InProcessControlHub(int ranks, double timeout_seconds) {
  GS_CHECK(ranks > 0, "an in-process control hub of " + std::to_string(ranks) + " ranks");
  for (int r = 0; r < ranks; ++r) {
    mailboxes_.push_back(std::make_unique<Mailbox>());
    channels_.push_back(std::make_unique<InProcessControlChannel>(*this, r, timeout_seconds));
  }
}

ControlChannel& InProcessControlHub::channel(int rank) {
  mailbox(rank);  // checks the rank
  return *channels_[static_cast<std::size_t>(rank)];
}

std::size_t InProcessControlHub::waiting(int rank) {
  auto& box = mailbox(rank);
  std::lock_guard lock(box.mutex);
  return box.messages.size();
}

void InProcessControlHub::clear() {
  for (auto& box : mailboxes_) {
    std::lock_guard lock(box->mutex);
    box->messages.clear();
  }
}

InProcessControlHub::Mailbox& InProcessControlHub::mailbox(int rank) {
  GS_CHECK(rank >= 0 && rank < ranks(), "rank " + std::to_string(rank) + " of an in-process hub");
  return *mailboxes_[static_cast<std::size_t>(rank)];
}

}  // namespace gradshare::comm

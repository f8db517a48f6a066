// relay.cpp: Relay.
#include "comm/relay.h"

#include <algorithm>
#include <string>

#include "core/errors.h"

namespace gradshare::comm {

Relay::Relay(DataPlane& plane, std::size_t max_queued_bytes)
    : plane_(plane), max_queued_bytes_(max_queued_bytes), queues_(plane.links().size()) {}

void Relay::enqueue(Queue& queue, std::span<const std::uint8_t> message) {
  queue.messages.emplace_back(message.begin(), message.end());
  queue.bytes += message.size();
  stats_.peak_queued_bytes = std::max(stats_.peak_queued_bytes, queue.bytes);
  ++stats_.deferred;
}

void Relay::send_at(std::size_t index, std::span<const std::uint8_t> message) {
  Queue& queue = queues_[index];
  if (queue.messages.empty() && plane_.try_send(plane_.links()[index], message)) {
    ++stats_.delivered;
    return;
  }
  enqueue(queue, message);
}

void Relay::forward(int from, std::span<const std::uint8_t> message) {
  const auto& links = plane_.links();
  GS_CHECK(from == kOriginHere || std::find(links.begin(), links.end(), from) != links.end(),
           "relaying a message from rank " + std::to_string(from) + ", not a link");
  for (std::size_t i = 0; i < links.size(); ++i)
    if (links[i] != from) send_at(i, message);
}

void Relay::send(int link, std::span<const std::uint8_t> message) {
  send_at(index_of(link), message);
}

std::size_t Relay::flush() {
  const auto& links = plane_.links();
  std::size_t left = 0;
  for (std::size_t i = 0; i < links.size(); ++i) {
    Queue& queue = queues_[i];
    while (!queue.messages.empty() && plane_.try_send(links[i], queue.messages.front())) {
      queue.bytes -= queue.messages.front().size();
      queue.messages.pop_front();
      ++stats_.delivered;
    }
    left += queue.messages.size();
  }
  return left;
}

bool Relay::saturated() const {
  return std::any_of(queues_.begin(), queues_.end(),
                     [&](const Queue& queue) { return queue.bytes > max_queued_bytes_; });
}

std::size_t Relay::queued_messages() const {
  std::size_t total = 0;
  for (const Queue& queue : queues_) total += queue.messages.size();
  return total;
}

std::size_t Relay::index_of(int link) const {
  const auto& links = plane_.links();
  auto it = std::find(links.begin(), links.end(), link);
  GS_CHECK(it != links.end(), "rank " + std::to_string(link) + " is not a link");
  return static_cast<std::size_t>(it - links.begin());
}

std::size_t Relay::queued_bytes(int link) const { return queues_[index_of(link)].bytes; }

}  // namespace gradshare::comm

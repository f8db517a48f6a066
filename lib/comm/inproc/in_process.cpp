// in_process.cpp: InProcessDataPlane and InProcessFabric.
#include "comm/inproc/in_process.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "comm/poll_guard.h"
#include "comm/ring_frame.h"
#include "core/errors.h"

namespace gradshare::comm {

InProcessDataPlane::InProcessDataPlane(int rank, std::vector<int> links,
                                       std::vector<InProcessRing*> outbound,
                                       std::vector<InProcessRing*> inbound, std::size_t capacity)
    : rank_(rank),
      links_(std::move(links)),
      outbound_(std::move(outbound)),
      inbound_(std::move(inbound)),
      sent_tail_(links_.size(), 0),
      capacity_(capacity) {}

std::size_t InProcessDataPlane::link_index(int link) const {
  auto it = std::find(links_.begin(), links_.end(), link);
  GS_CHECK(it != links_.end(),
           "rank " + std::to_string(link) + " is not a link of rank " + std::to_string(rank_));
  return static_cast<std::size_t>(it - links_.begin());
}

std::size_t InProcessDataPlane::max_message_bytes() const { return ring_max_payload(capacity_); }

bool InProcessDataPlane::can_send(int link, std::size_t message_bytes) {
  std::size_t index = link_index(link);
  std::uint64_t head = outbound_[index]->head.load(std::memory_order_acquire);
  return sent_tail_[index] + frame_bytes(message_bytes) - head <= capacity_;
}

bool InProcessDataPlane::try_send(int link, std::span<const std::uint8_t> message) {
  require_message_fits(*this, message.size(), "a data-plane message");
  if (!can_send(link, message.size())) {
    ++stats_.back_pressure_events;
    return false;
  }
  std::size_t index = link_index(link);
  InProcessRing& ring = *outbound_[index];
  std::uint64_t tail = sent_tail_[index];
  std::size_t size = frame_bytes(message.size());
  build_frame(message, tail, frame_);
  copy_into_ring(ring.bytes.data(), capacity_, tail, frame_);
  sent_tail_[index] = tail + size;
  ring.tail.store(tail + size, std::memory_order_release);  // publishes the frame bytes
  ++stats_.messages_sent;
  stats_.bytes_sent += message.size();
  return true;
}

std::size_t InProcessDataPlane::poll(const MessageHandler& on_message) {
  PollGuard guard(polling_);
  std::size_t delivered = 0;
  for (std::size_t i = 0; i < inbound_.size(); ++i) {
    InProcessRing& ring = *inbound_[i];
    std::uint64_t tail = ring.tail.load(std::memory_order_acquire);
    std::uint64_t head = ring.head.load(std::memory_order_relaxed);
    if (tail == head) continue;
    int from = links_[i];
    auto deliver = [&](std::span<const std::uint8_t> message) {
      ++stats_.messages_received;
      stats_.bytes_received += message.size();
      on_message(from, message);
    };
    try {
      delivered += consume_frames(ring.bytes.data(), capacity_, head, tail, scratch_, deliver);
    } catch (const FrameError& e) {
      throw core::RuntimeError("rank " + std::to_string(rank_) + ": inbound ring from rank " +
                               std::to_string(from) + ": " + e.what());
    } catch (...) {
      ring.head.store(head, std::memory_order_release);  // frames handed out stay consumed
      throw;
    }
    ring.head.store(head, std::memory_order_release);  // frees the space for the sender
  }
  return delivered;
}

InProcessFabric::InProcessFabric(int ranks, const topology::Tree& tree, std::size_t ring_bytes) {
  GS_CHECK(ranks == tree.size(), "a tree of " + std::to_string(tree.size()) + " ranks for " +
                                     std::to_string(ranks) + " ranks");
  std::size_t capacity = ring_capacity(ring_bytes);
  GS_CHECK(capacity > kFrameHeaderBytes, "ring of " + std::to_string(ring_bytes) + " bytes");
  std::map<std::pair<int, int>, InProcessRing*> ring_of;  // (from, to) -> ring
  for (int from = 0; from < ranks; ++from)
    for (int to : tree.links(from)) {
      rings_.push_back(std::make_unique<InProcessRing>(capacity));
      ring_of[{from, to}] = rings_.back().get();
    }
  for (int rank = 0; rank < ranks; ++rank) {
    std::vector<int> links = tree.links(rank);
    std::vector<InProcessRing*> outbound;
    std::vector<InProcessRing*> inbound;
    for (int link : links) {
      auto back = ring_of.find({link, rank});
      GS_CHECK(back != ring_of.end(), "link " + std::to_string(rank) + " -> " +
                                          std::to_string(link) + " is not symmetric");
      outbound.push_back(ring_of.at({rank, link}));
      inbound.push_back(back->second);
    }
    planes_.push_back(std::make_unique<InProcessDataPlane>(
        rank, std::move(links), std::move(outbound), std::move(inbound), capacity));
  }
}

DataPlane& InProcessFabric::plane(int rank) {
  GS_CHECK(rank >= 0 && rank < ranks(), "rank " + std::to_string(rank));
  return *planes_[static_cast<std::size_t>(rank)];
}

}  // namespace gradshare::comm

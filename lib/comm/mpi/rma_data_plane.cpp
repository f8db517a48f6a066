// rma_data_plane.cpp: RmaDataPlane.
#include "comm/mpi/rma_data_plane.h"

#include <array>
#include <atomic>
#include <string>
#include <utility>

#include "comm/mpi/deadline_wait.h"
#include "comm/link_setup.h"
#include "comm/mpi/mpi_error.h"
#include "comm/poll_guard.h"
#include "comm/ring_frame.h"
#include "core/errors.h"

namespace gradshare::comm {
namespace {

constexpr std::size_t kSlotBytes = 64;  // one cache line per link: tail and head never share one
constexpr std::size_t kTailOffset = 0;
constexpr std::size_t kHeadOffset = 8;
constexpr int kSetupTag = 1;

std::size_t window_bytes(std::size_t links, std::size_t capacity) {
  return links * (kSlotBytes + capacity);
}

std::size_t checked_capacity(std::size_t ring_bytes) {
  std::size_t capacity = ring_capacity(ring_bytes);
  GS_CHECK(capacity > kFrameHeaderBytes, "ring of " + std::to_string(ring_bytes) + " bytes");
  return capacity;
}

}  // namespace

RmaDataPlane::RmaDataPlane(MPI_Comm comm, std::vector<int> links, std::size_t ring_bytes,
                           double timeout_seconds)
    : comm_(Communicator::duplicate(comm)),
      links_(std::move(links)),
      index_of_(index_links(links_, comm_.rank(), comm_.size())),
      capacity_(checked_capacity(ring_bytes)),
      window_(comm_.get(), window_bytes(links_.size(), capacity_)),
      state_(links_.size()) {
  for (std::size_t i = 0; i < links_.size(); ++i) state_[i].rank = links_[i];
  exchange_addresses(timeout_seconds);
}

void RmaDataPlane::exchange_addresses(double timeout_seconds) {
  // To each link: where in our window its ring, its tail slot and the slot for its head of our
  // ring are, and our capacity. Sent only after the window is zeroed, so no Put can arrive early.
  std::size_t m = links_.size();
  std::vector<std::array<std::uint64_t, 4>> outgoing(m);
  std::vector<std::array<std::uint64_t, 4>> incoming(m);
  std::vector<MPI_Request> requests(2 * m, MPI_REQUEST_NULL);
  std::vector<int> peers(2 * m);
  for (std::size_t i = 0; i < m; ++i) {
    outgoing[i] = {m * kSlotBytes + i * capacity_, i * kSlotBytes + kTailOffset,
                   i * kSlotBytes + kHeadOffset, capacity_};
    check_mpi(MPI_Irecv(incoming[i].data(), 4, MPI_UINT64_T, links_[i], kSetupTag, comm_.get(),
                        &requests[2 * i]),
              "MPI_Irecv");
    check_mpi(MPI_Isend(outgoing[i].data(), 4, MPI_UINT64_T, links_[i], kSetupTag, comm_.get(),
                        &requests[2 * i + 1]),
              "MPI_Isend");
    peers[2 * i] = peers[2 * i + 1] = links_[i];
  }
  wait_all(requests, peers, timeout_seconds, "data-plane setup (RMA ring addresses)");
  for (std::size_t i = 0; i < m; ++i) {
    if (incoming[i][3] != capacity_)
      throw core::RuntimeError("ranks " + std::to_string(comm_.rank()) + " and " +
                               std::to_string(links_[i]) + " disagree on transport.ring_bytes (" +
                               std::to_string(capacity_) + " vs " + std::to_string(incoming[i][3]) +
                               " bytes)");
    state_[i].remote_ring = incoming[i][0];
    state_[i].remote_tail = incoming[i][1];
    state_[i].remote_head = incoming[i][2];
  }
}

std::size_t RmaDataPlane::link_index(int link) const {
  GS_CHECK(link >= 0 && link < static_cast<int>(index_of_.size()) && index_of_[link] >= 0,
           "rank " + std::to_string(link) + " is not a link");
  return static_cast<std::size_t>(index_of_[link]);
}

std::size_t RmaDataPlane::max_message_bytes() const { return ring_max_payload(capacity_); }

std::uint64_t RmaDataPlane::load_slot(std::size_t offset) const {
  // Peers write these words with MPI_Put; an atomic 8-byte load never splits our read, and the
  // acquire keeps the ring reads that follow after it.
  auto* word = reinterpret_cast<std::uint64_t*>(window_.base() + offset);
  return std::atomic_ref<std::uint64_t>(*word).load(std::memory_order_acquire);
}

bool RmaDataPlane::can_send(int link_rank, std::size_t message_bytes) {
  std::size_t i = link_index(link_rank);
  Link& link = state_[i];
  std::size_t size = frame_bytes(message_bytes);
  if (link.tail + size - link.acked_head > capacity_) {
    window_.sync();
    std::uint64_t head = load_slot(i * kSlotBytes + kHeadOffset);
    if (head < link.acked_head || head > link.tail)
      throw core::RuntimeError("rank " + std::to_string(comm_.rank()) + ": rank " +
                               std::to_string(link.rank) + " reported consuming up to " +
                               std::to_string(head) + " of a ring written up to " +
                               std::to_string(link.tail) + " (previously " +
                               std::to_string(link.acked_head) + "): corrupt window");
    link.acked_head = head;
  }
  return link.tail + size - link.acked_head <= capacity_;
}

bool RmaDataPlane::try_send(int link_rank, std::span<const std::uint8_t> message) {
  require_message_fits(*this, message.size(), "a data-plane message");
  if (!can_send(link_rank, message.size())) {
    ++stats_.back_pressure_events;
    return false;
  }
  Link& link = state_[link_index(link_rank)];
  std::size_t size = frame_bytes(message.size());
  build_frame(message, link.tail, frame_);
  for (const RingPiece& piece : ring_pieces(capacity_, link.tail, frame_.size()))
    if (piece.length > 0)
      window_.put(frame_.data() + piece.source_offset, piece.length, link.rank,
                  link.remote_ring + piece.ring_offset);
  window_.flush(link.rank);  // the frame is complete at the target before the tail says so
  link.tail += size;
  link.tail_value = link.tail;
  window_.put(&link.tail_value, sizeof(link.tail_value), link.rank, link.remote_tail);
  window_.flush(link.rank);
  ++stats_.messages_sent;
  stats_.bytes_sent += message.size();
  return true;
}

void RmaDataPlane::publish_head(Link& link) {
  if (link.head == link.published_head) return;
  link.head_value = link.head;
  window_.put(&link.head_value, sizeof(link.head_value), link.rank, link.remote_head);
  window_.flush(link.rank);
  link.published_head = link.head;
}

std::size_t RmaDataPlane::poll(const MessageHandler& on_message) {
  PollGuard guard(polling_);
  if (links_.empty()) return 0;
  window_.sync();  // peers' completed Puts become visible to the loads below
  std::size_t delivered = 0;
  for (std::size_t i = 0; i < links_.size(); ++i) {
    Link& link = state_[i];
    std::uint64_t tail = load_slot(i * kSlotBytes + kTailOffset);
    if (tail == link.head) continue;
    const std::uint8_t* ring = window_.base() + links_.size() * kSlotBytes + i * capacity_;
    auto deliver = [&](std::span<const std::uint8_t> message) {
      ++stats_.messages_received;
      stats_.bytes_received += message.size();
      on_message(link.rank, message);
    };
    try {
      delivered += consume_frames(ring, capacity_, link.head, tail, scratch_, deliver);
    } catch (const FrameError& e) {
      throw core::RuntimeError("rank " + std::to_string(comm_.rank()) + ": RMA ring from rank " +
                               std::to_string(link.rank) + ": " + e.what());
    } catch (...) {
      publish_head(link);  // frames handed out stay consumed
      throw;
    }
    publish_head(link);
  }
  return delivered;
}

}  // namespace gradshare::comm

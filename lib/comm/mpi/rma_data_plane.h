// rma_data_plane.h: the data plane on MPI one-sided communication (RMA rings).
//
// Each rank allocates one window (collective) holding, per link i, a 64-byte slot and an
// inbound ring of `capacity` bytes (layout: m slots, then m rings):
//   slot i + 0: tail of ring i         (written by link i, the ring's only writer)
//   slot i + 8: head of OUR ring at link i (written by link i: how far it has consumed it)
// Sending to link L: read the head L published into our slot (local memory, after
// MPI_Win_sync) to get the free space; MPI_Put the frame into our ring at L (two Puts when it
// wraps), MPI_Win_flush so the bytes are complete at L, then MPI_Put the new tail and flush.
// The flush between the two Puts is the ordering guarantee: a receiver that sees the tail sees
// the frame. Receiving: MPI_Win_sync, read each tail, parse the frames up to it (ring_frame.h
// validates everything), then MPI_Put our new head into the sender's slot and flush.
// One writer per memory word, no MPI_Accumulate; a passive-target lock_all epoch is open for the
// window's life. Setup swaps the displacements with each link over two-sided messages.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "comm/mpi/communicator.h"
#include "comm/data_plane.h"
#include "comm/mpi/window.h"

namespace gradshare::comm {

class RmaDataPlane : public DataPlane {
 public:
  // Collective over `comm` (duplicated for the plane). `links` are ranks of `comm` and must be
  // symmetric (a lists b exactly when b lists a); setup waits at most timeout_seconds for each
  // link and then names it. ring_bytes is per inbound ring.
  RmaDataPlane(MPI_Comm comm, std::vector<int> links, std::size_t ring_bytes,
               double timeout_seconds);
  // Collective (frees the window); abandoned instead during exception unwinding.
  ~RmaDataPlane() override = default;

  const std::vector<int>& links() const override { return links_; }
  bool can_send(int link, std::size_t message_bytes) override;
  bool try_send(int link, std::span<const std::uint8_t> message) override;
  std::size_t poll(const MessageHandler& on_message) override;
  std::size_t max_message_bytes() const override;
  TransportStats stats() const override { return stats_; }

  // Drops the window without the collective free (see DataPlane::abandon).
  void abandon() override { window_.abandon(); }

 private:
  struct Link {
    int rank = 0;
    // Our ring at the peer.
    std::uint64_t remote_ring = 0;  // displacements in the peer's window
    std::uint64_t remote_tail = 0;
    std::uint64_t tail = 0;        // stream offset of the next frame we write
    std::uint64_t acked_head = 0;  // the peer's last published head
    std::uint64_t tail_value = 0;  // origin buffer of the tail Put
    // The peer's ring here.
    std::uint64_t remote_head = 0;  // where in the peer's window our head goes
    std::uint64_t head = 0;
    std::uint64_t published_head = 0;
    std::uint64_t head_value = 0;  // origin buffer of the head Put
  };

  std::size_t link_index(int link) const;
  void exchange_addresses(double timeout_seconds);
  std::uint64_t load_slot(std::size_t offset) const;
  void publish_head(Link& link);

  Communicator comm_;
  std::vector<int> links_;
  std::vector<int> index_of_;  // comm rank -> link index, -1 when not a link
  std::size_t capacity_;
  Window window_;
  std::vector<Link> state_;
  std::vector<std::uint8_t> frame_;
  std::vector<std::uint8_t> scratch_;
  TransportStats stats_;
  bool polling_ = false;
};

}  // namespace gradshare::comm

// two_sided_data_plane.h: the data plane on MPI_Isend / matched probes, for comparison with the
// RMA rings and for fault-tolerant runs (two-sided traffic survives ULFM repair, RMA does not).
// Back-pressure mirrors a ring: at most one ring's worth of framed bytes (and kMaxInFlight
// messages) may be in flight to a link; a send completes when MPI has taken it (eagerly for
// small messages, when the receiver matches it for large ones). A matched message is received
// without blocking (MPI_Imrecv) and delivered once complete, never ahead of the one before it
// from the same link: a sender that dies midway through a large message leaves a receive that
// never completes, not a rank blocked in MPI_Mrecv that no failure detector can wake.
#pragma once

#include <mpi.h>

#include <deque>
#include <vector>

#include "comm/mpi/communicator.h"
#include "comm/data_plane.h"

namespace gradshare::comm {

class TwoSidedDataPlane : public DataPlane {
 public:
  static constexpr std::size_t kMaxInFlight = 256;

  // Collective over `comm` (duplicated for the plane). `links` are ranks of `comm`.
  TwoSidedDataPlane(MPI_Comm comm, std::vector<int> links, std::size_t ring_bytes);
  // Sends MPI has not finished are left to complete on their own (their buffers are kept).
  // Not collective.
  ~TwoSidedDataPlane() override;
  TwoSidedDataPlane(const TwoSidedDataPlane&) = delete;
  TwoSidedDataPlane& operator=(const TwoSidedDataPlane&) = delete;

  const std::vector<int>& links() const override { return links_; }
  bool can_send(int link, std::size_t message_bytes) override;
  bool try_send(int link, std::span<const std::uint8_t> message) override;
  std::size_t poll(const MessageHandler& on_message) override;
  std::size_t max_message_bytes() const override;
  TransportStats stats() const override { return stats_; }

 private:
  struct InFlight {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<std::uint8_t> bytes;
  };
  struct Link {
    int rank = 0;
    std::deque<InFlight> in_flight;
    std::size_t in_flight_bytes = 0;  // framed, as a ring would count them
    InFlight arriving;  // the message being received from the link (request null: none)
  };

  void complete_sends(Link& link);
  // Whether the link's message being received (if any) has arrived; its bytes then wait in
  // link.arriving.bytes.
  bool arrived(Link& link);
  // Delivers the link's arrived message; returns its framed size.
  std::size_t deliver(Link& link, const MessageHandler& on_message);

  Communicator comm_;
  std::vector<int> links_;
  std::vector<int> index_of_;
  std::size_t capacity_;
  std::vector<Link> state_;
  TransportStats stats_;
  bool polling_ = false;
};

}  // namespace gradshare::comm

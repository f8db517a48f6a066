// two_sided_data_plane.h: the data plane on MPI_Isend / matched probes, for comparison with the
// RMA rings and for fault-tolerant runs (two-sided traffic survives ULFM repair, RMA does not).
// Back-pressure mirrors a ring: at most one ring's worth of framed bytes (and kMaxInFlight
// messages) may be in flight to a link; a send completes when MPI has taken it (eagerly for
// small messages, when the receiver matches it for large ones).
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
  };

  void complete_sends(Link& link);

  Communicator comm_;
  std::vector<int> links_;
  std::vector<int> index_of_;
  std::size_t capacity_;
  std::vector<Link> state_;
  std::vector<std::uint8_t> buffer_;
  TransportStats stats_;
  bool polling_ = false;
};

}  // namespace gradshare::comm

// mpi_control_channel.h: the control channel over MPI (two-sided, on a duplicate of the job's
// communicator so control traffic never matches anything else). Sends are MPI_Isend of a copy,
// completed in the background; receives are MPI_Improbe + MPI_Imrecv, returned once complete:
// a large message whose sender died midway (exited, and ULFM never reports it) stays
// incomplete, and a blocking MPI_Mrecv stopped the master's loop, liveness watch included,
// for good. A message from a source is never returned before an earlier one still arriving
// from it (MPI's order per source holds). After a failure repair
// without replacement the communicator's ranks shift: the channel translates logical ranks
// (see comm/repair.h). Under ULFM every poll also reports failed peers.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "comm/mpi/communicator.h"
#include "comm/control_channel.h"

namespace gradshare::comm {

class MpiControlChannel : public ControlChannel {
 public:
  // Collective over `comm` (duplicated, so control traffic never matches anything else).
  // logical[r] is the logical rank of comm rank r (empty: the same numbers).
  MpiControlChannel(MPI_Comm comm, double timeout_seconds, std::vector<int> logical = {});
  // Sends MPI has not finished are left to complete on their own (their buffers are kept).
  ~MpiControlChannel() override;
  MpiControlChannel(const MpiControlChannel&) = delete;
  MpiControlChannel& operator=(const MpiControlChannel&) = delete;

  int rank() const override { return rank_; }  // logical
  int size() const override { return size_; }  // processes in the communicator
  double timeout_seconds() const override { return timeout_seconds_; }
  MPI_Comm comm() const { return comm_.get(); }

  void send(int dest, Tag tag, std::span<const std::uint8_t> payload) override;
  std::optional<ControlMessage> try_receive(std::optional<Tag> tag = std::nullopt,
                                            int source = kAnySource) override;
  void flush() override;
  std::size_t pending_sends() override;
  void check_failures() override;
  std::optional<ControlMessage> try_receive_despite_failures(Tag tag, int source) override;
  bool repair_begun_or_failed(int rank) override;

 private:
  // try_receive without the failure check.
  std::optional<ControlMessage> take_arrived(std::optional<Tag> tag, int source);
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    int dest = 0;
    Tag tag{};
    std::vector<std::uint8_t> bytes;
  };
  // A message matched by a probe: its receive may still be in progress.
  struct Arriving {
    MPI_Request request = MPI_REQUEST_NULL;
    ControlMessage message;  // source and payload; the tag is checked once it has arrived
    int tag = 0;
    bool done = false;
  };
  void complete_sends();
  int comm_rank(int logical) const;
  int logical_rank(int comm_rank) const;

  Communicator comm_;
  std::vector<int> logical_;  // comm rank -> logical rank (empty: identity)
  bool detect_failures_ = false;
  int rank_ = 0;
  int size_ = 0;
  double timeout_seconds_;
  std::deque<Pending> pending_;
  std::deque<Arriving> arriving_;  // matched, oldest first
};

}  // namespace gradshare::comm

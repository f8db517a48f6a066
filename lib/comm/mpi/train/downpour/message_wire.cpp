// downpour/message_wire.cpp: SendQueue.
#include "comm/mpi/train/downpour/message_wire.h"

#include <limits>
#include <string>
#include <utility>

#include "comm/mpi/communicator.h"
#include "comm/mpi/mpi_error.h"
#include "comm/mpi/abandoned_requests.h"
#include "core/errors.h"

namespace gradshare::train {

SendQueue::~SendQueue() {
  if (!comm::mpi_active()) return;
  for (Pending& send : pending_) comm::abandon_send(send.request, std::move(send.bytes));
}

void SendQueue::send(int dest, int tag, std::vector<std::uint8_t> bytes) {
  GS_CHECK(bytes.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
           "a Downpour message of " + std::to_string(bytes.size()) + " bytes");
  Pending& send = pending_.emplace_back();
  send.bytes = std::move(bytes);
  comm::check_mpi(MPI_Isend(send.bytes.data(), static_cast<int>(send.bytes.size()), MPI_BYTE, dest,
                            tag, comm_, &send.request),
                  "MPI_Isend");
}

void SendQueue::complete() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    int done = 0;
    comm::check_mpi(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    it = done ? pending_.erase(it) : std::next(it);
  }
}

}  // namespace gradshare::train

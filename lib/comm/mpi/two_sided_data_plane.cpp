// two_sided_data_plane.cpp: TwoSidedDataPlane.
#include "comm/mpi/two_sided_data_plane.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "comm/link_setup.h"
#include "comm/mpi/mpi_error.h"
#include "comm/mpi/abandoned_requests.h"
#include "comm/poll_guard.h"
#include "comm/ring_frame.h"
#include "core/errors.h"

namespace gradshare::comm {
namespace {

constexpr int kDataTag = 1;

}  // namespace

TwoSidedDataPlane::TwoSidedDataPlane(MPI_Comm comm, std::vector<int> links, std::size_t ring_bytes)
    : comm_(Communicator::duplicate(comm)),
      links_(std::move(links)),
      index_of_(index_links(links_, comm_.rank(), comm_.size())),
      capacity_(ring_capacity(ring_bytes)),
      state_(links_.size()) {
  GS_CHECK(capacity_ > kFrameHeaderBytes, "ring of " + std::to_string(ring_bytes) + " bytes");
  GS_CHECK(capacity_ <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
           "two-sided messages are limited to 2 GiB");
  for (std::size_t i = 0; i < links_.size(); ++i) state_[i].rank = links_[i];
}

TwoSidedDataPlane::~TwoSidedDataPlane() {
  if (!mpi_active()) return;
  for (Link& link : state_) {
    for (InFlight& send : link.in_flight) abandon_send(send.request, std::move(send.bytes));
    abandon_receive(link.arriving.request, std::move(link.arriving.bytes));
  }
}

std::size_t TwoSidedDataPlane::max_message_bytes() const { return ring_max_payload(capacity_); }

void TwoSidedDataPlane::complete_sends(Link& link) {
  for (auto it = link.in_flight.begin(); it != link.in_flight.end();) {
    int done = 0;
    check_mpi(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) {
      link.in_flight_bytes -= frame_bytes(it->bytes.size());
      it = link.in_flight.erase(it);
    } else {
      ++it;
    }
  }
}

bool TwoSidedDataPlane::can_send(int link_rank, std::size_t message_bytes) {
  GS_CHECK(
      link_rank >= 0 && link_rank < static_cast<int>(index_of_.size()) && index_of_[link_rank] >= 0,
      "rank " + std::to_string(link_rank) + " is not a link");
  Link& link = state_[static_cast<std::size_t>(index_of_[link_rank])];
  std::size_t size = frame_bytes(message_bytes);
  if (link.in_flight_bytes + size > capacity_ || link.in_flight.size() >= kMaxInFlight)
    complete_sends(link);
  return link.in_flight_bytes + size <= capacity_ && link.in_flight.size() < kMaxInFlight;
}

bool TwoSidedDataPlane::try_send(int link_rank, std::span<const std::uint8_t> message) {
  require_message_fits(*this, message.size(), "a data-plane message");
  if (!can_send(link_rank, message.size())) {
    ++stats_.back_pressure_events;
    return false;
  }
  Link& link = state_[static_cast<std::size_t>(index_of_[link_rank])];
  std::size_t size = frame_bytes(message.size());
  InFlight& send = link.in_flight.emplace_back();
  send.bytes.assign(message.begin(), message.end());
  check_mpi(MPI_Isend(send.bytes.data(), static_cast<int>(send.bytes.size()), MPI_BYTE, link.rank,
                      kDataTag, comm_.get(), &send.request),
            "MPI_Isend");
  link.in_flight_bytes += size;
  ++stats_.messages_sent;
  stats_.bytes_sent += message.size();
  return true;
}

bool TwoSidedDataPlane::arrived(Link& link) {
  if (link.arriving.request == MPI_REQUEST_NULL) {
    int found = 0;
    MPI_Message handle = MPI_MESSAGE_NULL;
    MPI_Status status;
    check_mpi(MPI_Improbe(link.rank, kDataTag, comm_.get(), &found, &handle, &status),
              "MPI_Improbe");
    if (!found) return false;
    int count = 0;
    check_mpi(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
    link.arriving.bytes.resize(static_cast<std::size_t>(std::max(count, 0)));
    check_mpi(MPI_Imrecv(link.arriving.bytes.data(), count, MPI_BYTE, &handle,
                         &link.arriving.request),
              "MPI_Imrecv");
  }
  int done = 0;
  check_mpi(MPI_Test(&link.arriving.request, &done, MPI_STATUS_IGNORE), "MPI_Test");
  return done != 0;
}

std::size_t TwoSidedDataPlane::deliver(Link& link, const MessageHandler& on_message) {
  const std::vector<std::uint8_t>& bytes = link.arriving.bytes;
  if (bytes.size() > max_message_bytes())
    throw core::RuntimeError("rank " + std::to_string(comm_.rank()) + ": message of " +
                             std::to_string(bytes.size()) + " bytes from rank " +
                             std::to_string(link.rank) + " exceeds the " +
                             std::to_string(max_message_bytes()) + "-byte limit");
  ++stats_.messages_received;
  stats_.bytes_received += bytes.size();
  on_message(link.rank, bytes);
  return frame_bytes(bytes.size());
}

std::size_t TwoSidedDataPlane::poll(const MessageHandler& on_message) {
  PollGuard guard(polling_);
  std::size_t delivered = 0;
  for (Link& link : state_) {
    complete_sends(link);
    // At most a ring's worth per link and poll, as a ring would hold, so one busy sender cannot
    // keep this loop from returning. A message still arriving holds back the link's later ones.
    std::size_t budget = capacity_;
    while (budget > 0 && arrived(link)) {
      budget -= std::min(budget, deliver(link, on_message));
      ++delivered;
    }
  }
  return delivered;
}

}  // namespace gradshare::comm

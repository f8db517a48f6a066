// mpi_control_channel.cpp: MpiControlChannel.
#include "comm/mpi/mpi_control_channel.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "comm/mpi/deadline_wait.h"
#include "comm/mpi/mpi_error.h"
#include "comm/mpi/abandoned_requests.h"
#include "comm/transport_error.h"
#include "comm/mpi/ulfm.h"
#include "core/errors.h"
#include "core/timer.h"

namespace gradshare::comm {
MpiControlChannel::MpiControlChannel(MPI_Comm comm, double timeout_seconds, std::vector<int> logical)
    : comm_(Communicator::duplicate(comm)),
      logical_(std::move(logical)),
      detect_failures_(fault_tolerance_active()),
      rank_(logical_rank(comm_.rank())),
      size_(comm_.size()),
      timeout_seconds_(timeout_seconds) {}

int MpiControlChannel::comm_rank(int logical) const {
  if (logical_.empty() || logical == MPI_ANY_SOURCE) return logical;
  const auto found = std::find(logical_.begin(), logical_.end(), logical);
  GS_CHECK(found != logical_.end(), "control message for rank " + std::to_string(logical) +
                                        ", which is no longer part of the job");
  return static_cast<int>(found - logical_.begin());
}

int MpiControlChannel::logical_rank(int comm_rank) const {
  return logical_.empty() ? comm_rank : logical_.at(static_cast<std::size_t>(comm_rank));
}

MpiControlChannel::~MpiControlChannel() {
  if (!mpi_active()) return;
  for (Pending& send : pending_) abandon_send(send.request, std::move(send.bytes));
  for (Arriving& receive : arriving_)
    abandon_receive(receive.request, std::move(receive.message.payload));
}

void MpiControlChannel::send(int logical_dest, Tag tag, std::span<const std::uint8_t> payload) {
  const int dest = comm_rank(logical_dest);
  GS_CHECK(dest >= 0 && dest < size_, "control message to rank " + std::to_string(dest));
  GS_CHECK(payload.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
           "control message of " + std::to_string(payload.size()) + " bytes");
  complete_sends();
  Pending& send = pending_.emplace_back();
  send.dest = logical_dest;
  send.tag = tag;
  send.bytes.assign(payload.begin(), payload.end());
  check_mpi(MPI_Isend(send.bytes.data(), static_cast<int>(send.bytes.size()), MPI_BYTE, dest,
                      static_cast<int>(tag), comm_.get(), &send.request),
            "MPI_Isend");
}

void MpiControlChannel::complete_sends() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    int done = 0;
    const int status = MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    if (status != MPI_SUCCESS) {
      // A send to a failed process: dropped, so that sends to live ranks still go (the
      // master's Shutdown to every other rank after one died).
      abandon_send(it->request, std::move(it->bytes));
      pending_.erase(it);
      check_mpi(status, "MPI_Test");
    }
    it = done ? pending_.erase(it) : std::next(it);
  }
}

std::size_t MpiControlChannel::pending_sends() {
  complete_sends();
  return pending_.size();
}

void MpiControlChannel::check_failures() {
  if (detect_failures_) check_for_failures(comm_.get());
}

std::optional<ControlMessage> MpiControlChannel::try_receive(std::optional<Tag> tag, int source) {
  check_failures();
  complete_sends();
  return take_arrived(tag, source);
}

std::optional<ControlMessage> MpiControlChannel::try_receive_despite_failures(Tag tag,
                                                                              int source) {
  try {
    return take_arrived(tag, source);
  } catch (const TransportError&) {
    return std::nullopt;  // a revoked communicator, say: nothing can be read from it
  }
}

bool MpiControlChannel::repair_begun_or_failed(int rank) {
  if (!detect_failures_) return false;
  if (revoked(comm_.get())) return true;
  const auto failed = failed_ranks(comm_.get());
  return std::find(failed.begin(), failed.end(), comm_rank(rank)) != failed.end();
}

std::optional<ControlMessage> MpiControlChannel::take_arrived(std::optional<Tag> tag, int source) {
  const auto wanted = [&](const Arriving& a) {
    return (source == kAnySource || a.message.source == source) &&
           (!tag || a.tag == static_cast<int>(*tag));
  };
  const auto take = [&](std::deque<Arriving>::iterator it) {
    if (it->tag < kFirstTag || it->tag > kLastTag)
      throw core::RuntimeError("control message with unknown tag " + std::to_string(it->tag) +
                               " from rank " + std::to_string(it->message.source));
    ControlMessage message = std::move(it->message);
    message.tag = static_cast<Tag>(it->tag);
    arriving_.erase(it);
    return message;
  };
  std::vector<int> unfinished;  // sources with a message still arriving: none of theirs passes it
  const auto behind = [&](int from) {
    return std::find(unfinished.begin(), unfinished.end(), from) != unfinished.end();
  };
  for (auto it = arriving_.begin(); it != arriving_.end(); ++it) {
    if (!it->done) {
      int flag = 0;
      check_mpi(MPI_Test(&it->request, &flag, MPI_STATUS_IGNORE), "MPI_Test");
      it->done = flag != 0;
    }
    if (!it->done) {
      unfinished.push_back(it->message.source);
    } else if (!behind(it->message.source) && wanted(*it)) {
      return take(it);
    }
  }
  int found = 0;
  MPI_Message handle = MPI_MESSAGE_NULL;
  MPI_Status status;
  check_mpi(MPI_Improbe(comm_rank(source == kAnySource ? MPI_ANY_SOURCE : source),
                        tag ? static_cast<int>(*tag) : MPI_ANY_TAG, comm_.get(), &found, &handle,
                        &status),
            "MPI_Improbe");
  if (!found) return std::nullopt;
  int count = 0;
  check_mpi(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
  Arriving& arriving = arriving_.emplace_back();
  arriving.message.source = logical_rank(status.MPI_SOURCE);
  arriving.tag = status.MPI_TAG;
  arriving.message.payload.resize(static_cast<std::size_t>(std::max(count, 0)));
  check_mpi(MPI_Imrecv(arriving.message.payload.data(), count, MPI_BYTE, &handle,
                       &arriving.request),
            "MPI_Imrecv");
  int flag = 0;
  check_mpi(MPI_Test(&arriving.request, &flag, MPI_STATUS_IGNORE), "MPI_Test");
  arriving.done = flag != 0;
  if (arriving.done && !behind(arriving.message.source)) return take(std::prev(arriving_.end()));
  return std::nullopt;
}

void MpiControlChannel::flush() {
  core::Deadline deadline(timeout_seconds_);
  core::Backoff backoff;
  while (!pending_.empty()) {
    complete_sends();
    if (pending_.empty()) return;
    if (deadline.expired()) {
      const Pending& stuck = pending_.front();
      throw core::RuntimeError(timeout_message(timeout_seconds_, stuck.dest,
                                               "delivery of a " + tag_label(stuck.tag) + " message"));
    }
    backoff.wait();
  }
}

}  // namespace gradshare::comm

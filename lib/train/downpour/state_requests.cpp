// downpour/state_requests.cpp: StateRequests (see state_requests.h).
#include "train/downpour/state_requests.h"

#include <string>

#include "core/errors.h"
#include "train/downpour/protocol.h"
#include "train/messages.h"

namespace gradshare::train {

void StateRequests::request(bool servers_only) {
  GS_CHECK(!outstanding_, "a state request is already outstanding");
  asked_ = network_.live_ranks();
  if (servers_only)
    std::erase_if(asked_, [this](int rank) { return !network_.layout().is_server(rank); });
  servers_only_ = servers_only;
  for (int rank : asked_) send(network_.control(), rank, StateRequest{});
  outstanding_ = true;
}

bool StateRequests::take(const comm::ControlMessage& reply) {
  if (!outstanding_ || replies_.count(reply.source))
    throw core::RuntimeError("unrequested state reply from rank " + std::to_string(reply.source));
  replies_[reply.source] = decode<DownpourState>(reply);
  return replies_.size() == asked_.size();
}

std::map<int, DownpourState> StateRequests::collect() {
  if (!outstanding_) request();
  for (int rank : asked_)
    if (!replies_.count(rank))
      replies_[rank] = receive<DownpourState>(network_.control(), rank, "state for a checkpoint");
  outstanding_ = false;
  std::map<int, DownpourState> replies;
  replies.swap(replies_);
  return replies;
}

}  // namespace gradshare::train

// downpour/state_requests.h: the states a Downpour checkpoint needs from other ranks.
#pragma once

#include <map>
#include <vector>

#include "comm/control_channel.h"
#include "train/downpour/network.h"
#include "train/downpour/protocol.h"
#include "train/worker_state.h"

namespace gradshare::train {

// A checkpoint needs what other ranks hold (downpour/checkpoint.h): the master asks every live
// rank and collects the replies; several requests are never outstanding at once.
class StateRequests {
 public:
  explicit StateRequests(DownpourNetwork& network) : network_(network) {}
  bool outstanding() const { return outstanding_; }
  // `servers_only`: the other servers' snapshots alone (shard_rebuild.h), no checkpoint.
  void request(bool servers_only = false);
  bool servers_only() const { return servers_only_; }
  // Takes one reply; true when every rank asked has replied.
  bool take(const comm::ControlMessage& reply);
  // Every rank's reply (requesting first when nothing is outstanding), waiting for the rest.
  std::map<int, DownpourState> collect();
  // A repair dropped the requests and replies in flight.
  void cancel() {
    outstanding_ = false;
    replies_.clear();
  }

 private:
  DownpourNetwork& network_;
  std::vector<int> asked_;
  std::map<int, DownpourState> replies_;
  bool outstanding_ = false;
  bool servers_only_ = false;
};

}  // namespace gradshare::train

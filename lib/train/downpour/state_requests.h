// downpour/state_requests.h: the states a Downpour checkpoint needs from other ranks.
#pragma once

#include <map>
#include <vector>

#include "comm/control_channel.h"
#include "train/downpour/network.h"
#include "train/worker_state.h"

namespace gradshare::train {

// A checkpoint needs what other ranks hold (downpour/checkpoint.h): the master asks every live
// rank and collects the replies; several requests are never outstanding at once.
class StateRequests {
 public:
  explicit StateRequests(DownpourNetwork& network) : network_(network) {}
  bool outstanding() const { return outstanding_; }
  void request();
  // Takes one reply; true when every rank asked has replied.
  bool take(const comm::ControlMessage& reply);
  // Every rank's reply (requesting first when nothing is outstanding), waiting for the rest.
  std::map<int, WorkerState> collect();
  // A repair dropped the requests and replies in flight.
  void cancel() {
    outstanding_ = false;
    replies_.clear();
  }

 private:
  DownpourNetwork& network_;
  std::vector<int> asked_;
  std::map<int, WorkerState> replies_;
  bool outstanding_ = false;
};

}  // namespace gradshare::train

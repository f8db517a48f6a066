// in_process_control.h: a control channel whose ranks are threads of one process, for tests
// that run a strategy's master and workers as threads. Each rank has a mailbox (a queue under a
// mutex); send appends a copy to the destination's, try_receive takes the oldest message that
// matches, so messages from one sender with one tag arrive in the order sent, as over MPI.
// Sends complete at once (flush has nothing to wait for).
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "comm/control_channel.h"

namespace gradshare::comm {

class InProcessControlHub;

class InProcessControlChannel : public ControlChannel {
 public:
  InProcessControlChannel(InProcessControlHub& hub, int rank, double timeout_seconds)
      : hub_(hub), rank_(rank), timeout_seconds_(timeout_seconds) {}

  int rank() const override { return rank_; }
  int size() const override;
  double timeout_seconds() const override { return timeout_seconds_; }
  void send(int dest, Tag tag, std::span<const std::uint8_t> payload) override;
  std::optional<ControlMessage> try_receive(std::optional<Tag> tag = std::nullopt,
                                            int source = kAnySource) override;
  // This channel knows of no failures (a job's view of it does, comm/inproc/in_process_job.h).
  std::optional<ControlMessage> try_receive_despite_failures(Tag tag, int source) override {
    return try_receive(tag, source);
  }
  void flush() override {}
  std::size_t pending_sends() override { return 0; }

 private:
  InProcessControlHub& hub_;
  int rank_;
  double timeout_seconds_;
};

class InProcessControlHub {
 public:
  InProcessControlHub(int ranks, double timeout_seconds);
  int ranks() const { return static_cast<int>(mailboxes_.size()); }
  // The channel of `rank`; any thread may send to it, one thread receives from it.
  ControlChannel& channel(int rank);
  // Messages waiting in `rank`'s mailbox (what a test expects drained at the end).
  std::size_t waiting(int rank);
  // Drops every message not yet received (a repaired job starts on a new communicator).
  void clear();

 private:
  friend class InProcessControlChannel;
  struct Mailbox {
    std::mutex mutex;
    std::deque<ControlMessage> messages;
  };
  Mailbox& mailbox(int rank);

  std::vector<std::unique_ptr<Mailbox>> mailboxes_;
  std::vector<std::unique_ptr<InProcessControlChannel>> channels_;
};

}  // namespace gradshare::comm

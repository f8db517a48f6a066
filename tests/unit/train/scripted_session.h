// scripted_session.h: one role of a strategy, alone, against a script that plays every other
// rank: a control channel whose incoming messages the script queues (up front, or in answer to
// what the role sends), a workers' group of one member, and a group session over both. No
// thread, no other rank: what the role sends is recorded in order, and a role that waits for a
// message the script never sends ends with the channel's timeout error instead of hanging.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "comm/control_channel.h"
#include "comm/worker_group.h"
#include "train/group_session.h"
#include "train/messages.h"

namespace gradshare::train::testing {

struct SentMessage {
  int dest = -1;
  comm::ControlMessage message;  // source: the role's rank
};

class ScriptedChannel : public comm::ControlChannel {
 public:
  // Called for each message the role sends, after it is recorded: may queue answers.
  using Script = std::function<void(const SentMessage&, ScriptedChannel&)>;

  ScriptedChannel(int rank, int size, double timeout_seconds = 5.0)
      : rank_(rank), size_(size), timeout_seconds_(timeout_seconds) {}
  void set_script(Script script) { script_ = std::move(script); }

  // Queues `message` as arriving from `source`.
  template <ControlPayload M>
  void arrive(int source, const M& message) {
    incoming_.push_back({source, M::kTag, encode(message)});
  }

  // What the role sent, in order; those of one payload type decoded.
  const std::vector<SentMessage>& sent() const { return sent_; }
  template <ControlPayload M>
  std::vector<M> sent_of() const {
    std::vector<M> found;
    for (const auto& s : sent_)
      if (s.message.tag == M::kTag) found.push_back(decode<M>(s.message));
    return found;
  }
  // Messages queued for the role that it never received.
  std::size_t unreceived() const { return incoming_.size(); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  double timeout_seconds() const override { return timeout_seconds_; }
  void send(int dest, comm::Tag tag, std::span<const std::uint8_t> payload) override;
  std::optional<comm::ControlMessage> try_receive(std::optional<comm::Tag> tag,
                                                  int source) override;
  void flush() override {}
  std::size_t pending_sends() override { return 0; }
  std::optional<comm::ControlMessage> try_receive_despite_failures(comm::Tag tag,
                                                                   int source) override {
    return try_receive(tag, source);
  }

 private:
  int rank_;
  int size_;
  double timeout_seconds_;
  Script script_;
  std::deque<comm::ControlMessage> incoming_;
  std::vector<SentMessage> sent_;
};

// A workers' group of one member: every collective returns the member's own values.
class SoloGroup : public comm::WorkerGroup {
 public:
  int index() const override { return 0; }
  int size() const override { return 1; }
  void allreduce_sum(std::span<float>) override {}
  void allreduce_max(std::span<std::int32_t>) override {}
  void allreduce_max(std::span<std::uint64_t>) override {}
  void broadcast(std::span<std::uint8_t>, int) override {}
  void barrier() override {}
};

// The session of a role run alone: the scripted channel, a group of one, live workers as given;
// not fault tolerant (a repair is a defect in the test).
class ScriptedGroupSession : public GroupSession {
 public:
  ScriptedGroupSession(ScriptedChannel& channel, std::vector<int> live_workers)
      : channel_(channel), live_(std::move(live_workers)) {}
  comm::ControlChannel& control() override { return channel_; }
  comm::WorkerGroup& workers() override { return group_; }
  std::vector<int> live_workers() const override { return live_; }
  bool fault_tolerant() const override { return false; }
  RepairOutcome repair(const std::vector<std::uint8_t>&) override;
  std::unique_ptr<DownpourTransport> downpour_transport(RunContext&,
                                                        const DownpourLayout&) override;

 private:
  ScriptedChannel& channel_;
  SoloGroup group_;
  std::vector<int> live_;
};

}  // namespace gradshare::train::testing

// scripted_session.h: one role of a strategy, alone, against a script that plays every other
// rank: a control channel whose incoming messages the script queues (up front, or in answer to
// what the role sends), a workers' group of one member, and a group session over both. No
// thread, no other rank: what the role sends is recorded in order, and a role that waits for a
// message the script never sends ends with the channel's timeout error instead of hanging.
// Gradient sharing's roles also get a data plane of in-process rings along the configured tree
// (ScriptedSharingSession), whose other ends the script drives with replicas of its own
// (PeerReplica) from the channel's tick: each time the role looks for a message.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "codec/encoder.h"
#include "comm/control_channel.h"
#include "comm/inproc/in_process.h"
#include "comm/inproc/train/in_process_downpour_transport.h"
#include "comm/job.h"
#include "comm/worker_group.h"
#include "config/experiment_config.h"
#include "train/group_session.h"
#include "train/messages.h"
#include "train/sharing/session.h"
#include "train/sharing/update_exchange.h"

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
  // Called each time the role looks for a message (before it is looked for): may queue some.
  void set_tick(std::function<void(ScriptedChannel&)> tick) { tick_ = std::move(tick); }

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
  std::function<void(ScriptedChannel&)> tick_;
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

// The job of a role run alone: its rank and size; nothing collective (the script plays the
// other ranks), no repair.
class ScriptedJob : public comm::Job {
 public:
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool fault_tolerant() const override { return false; }
  std::unique_ptr<comm::ControlChannel> control_channel(double) override;
  void barrier() override {}
  void place(int rank, int size) {
    rank_ = rank;
    size_ = size;
  }

 private:
  int rank_ = 0;
  int size_ = 1;
};

// The session of a role run alone: the scripted channel, a group of one, live workers as given
// (for Downpour: every rank but the master, the servers first); not fault tolerant (a repair
// is a defect in the test). Downpour's transport is in-process: the role's side waits for no
// server (the script's are in place), and the script reaches the same shard boxes through
// peer_transport() (its servers serve, its workers link and push).
class ScriptedGroupSession : public GroupSession {
 public:
  ScriptedGroupSession(ScriptedChannel& channel, std::vector<int> live_workers)
      : channel_(channel), live_(std::move(live_workers)) {}
  comm::ControlChannel& control() override { return channel_; }
  comm::WorkerGroup& workers() override { return group_; }
  std::vector<int> live_workers() const override { return live_; }
  bool fault_tolerant() const override { return fault_tolerant_; }
  // A role that keeps what only fault tolerance needs (still no repair: a defect in the test).
  void set_fault_tolerant() { fault_tolerant_ = true; }
  RepairOutcome repair(const std::vector<std::uint8_t>&) override;
  // The role starts as if `repair` (a takeover's: became_master) had just made it what it is.
  void after_repair(RepairOutcome repair) { last_repair_ = std::move(repair); }
  std::unique_ptr<DownpourTransport> downpour_transport(runtime::RunContext&,
                                                        const DownpourLayout& layout) override;
  // The script's side of the transport the role got (made by downpour_transport).
  DownpourTransport& peer_transport();

 private:
  ScriptedChannel& channel_;
  SoloGroup group_;
  std::vector<int> live_;
  bool fault_tolerant_ = false;
  std::unique_ptr<InProcessDownpourHub> hub_;
  std::unique_ptr<DownpourTransport> peer_transport_;
};

// The session of a gradient-sharing role run alone: the scripted channel, and a data plane of
// in-process rings along config's tree over the channel's ranks; the script drives the other
// ranks' planes (peer_plane). Not fault tolerant unless set so; heartbeats go over the channel.
class ScriptedSharingSession : public SharingSession {
 public:
  ScriptedSharingSession(ScriptedChannel& channel, const config::ExperimentConfig& config);
  comm::DataPlane& peer_plane(int rank) { return fabric_.plane(rank); }

  comm::ControlChannel& control() override { return channel_; }
  comm::ControlChannel* heartbeats() override { return nullptr; }
  comm::DataPlane& plane() override { return fabric_.plane(channel_.rank()); }
  const topology::Tree& tree() const override { return tree_; }
  std::vector<int> live_workers() const override;
  bool fault_tolerant() const override { return fault_tolerant_; }
  const std::map<int, ft::ProcessIdentity>& processes() const override { return processes_; }
  bool master_on_another_node() const override { return false; }
  RepairOutcome repair(const std::vector<std::uint8_t>&) override;
  // The role starts as if `repair` (a takeover's: became_master) had just made it what it is.
  void after_repair(RepairOutcome repair) { last_repair_ = std::move(repair); }
  // A role that keeps what only fault tolerance needs (still no repair: a defect in the test).
  void set_fault_tolerant() { fault_tolerant_ = true; }
  // The workers a shrinking repair left (default: every rank but 0). The planes stay those of
  // every rank: nobody reads what reaches a rank left out.
  void set_live_workers(std::vector<int> live) { live_ = std::move(live); }

 private:
  ScriptedChannel& channel_;
  topology::Tree tree_;
  comm::InProcessFabric fabric_;
  std::map<int, ft::ProcessIdentity> processes_;
  bool fault_tolerant_ = false;
  std::optional<std::vector<int>> live_;
};

// A replica the script keeps for another rank of a sharing job: its parameters, its exchange
// on that rank's plane (applies and relays what arrives), and updates it publishes as a worker.
class PeerReplica {
 public:
  PeerReplica(comm::DataPlane& plane, int rank, int ranks, std::vector<float> parameters,
              const config::EncodingConfig& encoding);
  // Encodes `update` (epoch 0, clock = seq, the header's `flags`) and publishes it: applied
  // here, sent on every link.
  void publish(std::span<const float> update, std::uint32_t flags = 0);
  // Applies and relays what arrived; pushes queued messages on (aggregating: sends each link
  // what it is owed, flush rounds' finals included).
  void poll() {
    exchange_.poll(parameters_);
    if (exchange_.aggregating()) exchange_.send_aggregates(0.0, false);
  }
  // From now on as an aggregating rank (topology.aggregate) of `tree` that does not train: its
  // links' sums go as soon as they are owed.
  void aggregate(const config::EncodingConfig& encoding, const topology::Tree& tree) {
    exchange_.aggregate(encoding, 0.0, 8, false, tree);
  }
  // Aggregating: this rank's part of the cut is taken (UpdateExchange::release_cut).
  void release_cut() { exchange_.release_cut(parameters_, 0.0); }
  // Whether every origin's updates up to target[origin] are applied and nothing waits to go.
  bool drained(const std::vector<std::uint64_t>& target) const;
  std::uint64_t seq() const { return seq_; }
  const std::vector<float>& parameters() const { return parameters_; }
  // Applies a message a resync hands over (UpdateExchange::deliver).
  bool deliver(std::span<const std::uint8_t> message) {
    return exchange_.deliver(message, parameters_);
  }
  const UpdateExchange& exchange() const { return exchange_; }
  UpdateExchange& exchange() { return exchange_; }

 private:
  int rank_;
  std::vector<float> parameters_;
  UpdateExchange exchange_;
  codec::Encoder encoder_;
  std::vector<std::uint8_t> message_;
  std::uint64_t seq_ = 0;
};

}  // namespace gradshare::train::testing

// scripted_session.cpp: ScriptedChannel and ScriptedGroupSession (see scripted_session.h).
#include "scripted_session.h"

#include <algorithm>

#include "core/errors.h"
#include "topology/mode.h"

namespace gradshare::train::testing {

void ScriptedChannel::send(int dest, comm::Tag tag, std::span<const std::uint8_t> payload) {
  sent_.push_back({dest, {rank_, tag, {payload.begin(), payload.end()}}});
  if (script_) script_(sent_.back(), *this);
}

std::optional<comm::ControlMessage> ScriptedChannel::try_receive(std::optional<comm::Tag> tag,
                                                                 int source) {
  if (tick_) tick_(*this);
  const auto found = std::find_if(incoming_.begin(), incoming_.end(), [&](const auto& m) {
    return (!tag || m.tag == *tag) && (source == comm::kAnySource || m.source == source);
  });
  if (found == incoming_.end()) return std::nullopt;
  auto message = std::move(*found);
  incoming_.erase(found);
  return message;
}

RepairOutcome ScriptedGroupSession::repair(const std::vector<std::uint8_t>&) {
  throw core::RuntimeError("a role run alone was asked to repair the job");
}

std::unique_ptr<comm::ControlChannel> ScriptedJob::control_channel(double) {
  throw core::RuntimeError("a role run alone was asked for a channel of the job's");
}

namespace {
// The role's side of the in-process transport: the servers the script plays are in place from
// the start, so nobody is waited for.
class RoleDownpourTransport final : public DownpourTransport {
 public:
  RoleDownpourTransport(InProcessDownpourHub& hub, const DownpourLayout& layout)
      : inner_(hub, layout) {}
  std::unique_ptr<ShardServer> serve(int shard, const config::ExperimentConfig& config,
                                     std::span<const float> initial) override {
    return inner_.serve(shard, config, initial);
  }
  std::unique_ptr<ShardLink> link(int shard, int worker,
                                  const config::ExperimentConfig& config) override {
    return inner_.link(shard, worker, config);
  }
  std::uint64_t read_shard(int shard, std::span<float> out, double timeout_seconds,
                           const std::function<void()>& meanwhile) override {
    return inner_.read_shard(shard, out, timeout_seconds, meanwhile);
  }
  void wait_for_servers() override {}

 private:
  InProcessDownpourTransport inner_;
};
}  // namespace

std::unique_ptr<DownpourTransport> ScriptedGroupSession::downpour_transport(
    runtime::RunContext&, const DownpourLayout& layout) {
  hub_ = std::make_unique<InProcessDownpourHub>(layout);
  peer_transport_ = std::make_unique<RoleDownpourTransport>(*hub_, layout);
  return std::make_unique<RoleDownpourTransport>(*hub_, layout);
}

DownpourTransport& ScriptedGroupSession::peer_transport() {
  GS_CHECK(peer_transport_, "no Downpour transport made yet");
  return *peer_transport_;
}

ScriptedSharingSession::ScriptedSharingSession(ScriptedChannel& channel,
                                               const config::ExperimentConfig& config)
    : channel_(channel),
      tree_(topology::build_tree(config.topology, channel.size())),
      fabric_(channel.size(), tree_, static_cast<std::size_t>(config.transport.ring_bytes)) {}

std::vector<int> ScriptedSharingSession::live_workers() const {
  if (live_) return *live_;
  std::vector<int> live;
  for (int rank = 1; rank < channel_.size(); ++rank) live.push_back(rank);
  return live;
}

RepairOutcome ScriptedSharingSession::repair(const std::vector<std::uint8_t>&) {
  throw core::RuntimeError("a sharing role run alone was asked to repair the job");
}

namespace {
// The script's updates are its own: every entry of magnitude 0.01 or more goes out at once,
// whatever the role's encoding would have sent of them.
config::EncodingConfig fixed_threshold(config::EncodingConfig encoding) {
  encoding.threshold_algorithm = "fixed";
  encoding.initial_threshold = 0.01;
  return encoding;
}
}  // namespace

PeerReplica::PeerReplica(comm::DataPlane& plane, int rank, int ranks,
                         std::vector<float> parameters, const config::EncodingConfig& encoding)
    : rank_(rank),
      parameters_(std::move(parameters)),
      exchange_(plane, rank, ranks, parameters_.size(), std::nullopt),
      encoder_(fixed_threshold(encoding), parameters_.size()) {}

void PeerReplica::publish(std::span<const float> update, std::uint32_t flags) {
  ++seq_;
  encoder_.encode(update, {static_cast<std::uint32_t>(rank_), seq_, seq_, 0, flags}, message_);
  exchange_.publish(message_, parameters_);
}

bool PeerReplica::drained(const std::vector<std::uint64_t>& target) const {
  for (std::size_t origin = 1; origin < target.size(); ++origin)
    if (exchange_.version_vector()[origin] < target[origin]) return false;
  return !exchange_.has_backlog();
}

}  // namespace gradshare::train::testing

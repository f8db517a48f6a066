// in_process_job.cpp: InProcessJobHub and the jobs it hands to each rank's thread.
#include "comm/inproc/in_process_job.h"

#include <algorithm>
#include <string>

#include "core/errors.h"

namespace gradshare::comm {

namespace {

// The hub owns the channel and the group members: a rank gets views of them.
// A view fails every call once a rank failed that no repair before it was made dealt with (a
// revoked communicator).
class ChannelView : public ControlChannel {
 public:
  ChannelView(ControlChannel& channel, const InProcessFailures& failures)
      : channel_(channel), failures_(failures), repaired_(failures.repaired_failures()) {}
  int rank() const override { return channel_.rank(); }
  int size() const override { return channel_.size(); }
  double timeout_seconds() const override { return channel_.timeout_seconds(); }
  // As over MPI under ULFM: a send fails once a repair began (the channel is revoked) or to a
  // failed rank; to a live rank it goes even after another rank failed.
  void send(int dest, Tag tag, std::span<const std::uint8_t> payload) override {
    if (failures_.repair_begun_or_failed(dest, repaired_)) failures_.check(repaired_);
    channel_.send(dest, tag, payload);
  }
  std::optional<ControlMessage> try_receive(std::optional<Tag> tag, int source) override {
    failures_.check(repaired_);
    return channel_.try_receive(tag, source);
  }
  std::optional<ControlMessage> try_receive_despite_failures(Tag tag, int source) override {
    return channel_.try_receive_despite_failures(tag, source);
  }
  void flush() override { channel_.flush(); }
  std::size_t pending_sends() override { return channel_.pending_sends(); }
  void check_failures() override { failures_.check(repaired_); }
  bool repair_begun_or_failed(int rank) override {
    return failures_.repair_begun_or_failed(rank, repaired_);
  }

 private:
  ControlChannel& channel_;
  const InProcessFailures& failures_;
  int repaired_;
};

class GroupView : public WorkerGroup {
 public:
  explicit GroupView(WorkerGroup& group) : group_(group) {}
  int index() const override { return group_.index(); }
  int size() const override { return group_.size(); }
  void allreduce_sum(std::span<float> values) override { group_.allreduce_sum(values); }
  void allreduce_max(std::span<std::int32_t> values) override { group_.allreduce_max(values); }
  void allreduce_max(std::span<std::uint64_t> values) override { group_.allreduce_max(values); }
  void broadcast(std::span<std::uint8_t> bytes, int root) override {
    group_.broadcast(bytes, root);
  }
  void barrier() override { group_.barrier(); }

 private:
  WorkerGroup& group_;
};

}  // namespace

int InProcessJob::size() const { return hub_.ranks(); }

int InProcessJob::repaired_failures() const { return hub_.failures_.repaired_failures(); }

bool InProcessJob::fault_tolerant() const { return hub_.repairable_; }

std::unique_ptr<ControlChannel> InProcessJob::control_channel(double) {
  return control_channel_of(rank_);
}

std::unique_ptr<ControlChannel> InProcessJob::control_channel_of(int logical) {
  return std::make_unique<ChannelView>(hub_.control_.channel(logical), hub_.failures_);
}

std::unique_ptr<ControlChannel> InProcessJob::heartbeat_channel_of(int logical) {
  return std::make_unique<ChannelView>(hub_.heartbeats_.channel(logical), hub_.failures_);
}

void InProcessJob::barrier() { hub_.everyone_.member(rank_).barrier(); }

void InProcessJob::end_by_fault(const std::string& kind) { throw ThreadRankEnded{kind}; }

std::unique_ptr<WorkerGroup> InProcessJob::worker_group_of(const std::vector<int>& live,
                                                                 int logical) {
  const auto found = std::find(live.begin(), live.end(), logical);
  GS_CHECK(found != live.end(), "rank " + std::to_string(logical) + " is not a live worker");
  const int repaired = repaired_failures();
  auto& group = shared<InProcessGroupHub>("workers after " + std::to_string(repaired) + " failures", [&] {
    const InProcessFailures& failures = hub_.failures_;
    return std::make_unique<InProcessGroupHub>(static_cast<int>(live.size()),
                                               hub_.timeout_seconds_,
                                               [&failures, repaired] { failures.check(repaired); });
  });
  GS_CHECK(group.size() == static_cast<int>(live.size()),
           "members of an in-process job's workers' group disagree on who lives");
  return std::make_unique<GroupView>(group.member(static_cast<int>(found - live.begin())));
}

namespace {
// The rings of the tree the first rank asked for, and that tree.
struct TreeFabric {
  std::vector<int> parents;
  InProcessFabric fabric;
};
}  // namespace

DataPlane& InProcessJob::tree_plane(const topology::Tree& tree, int logical,
                                    std::size_t ring_bytes) {
  // A repaired tree is a new version: new rings, as a repair builds new planes.
  auto& made = shared<TreeFabric>("tree plane " + std::to_string(tree.version), [&] {
    return std::make_unique<TreeFabric>(
        TreeFabric{tree.parent, InProcessFabric(tree.size(), tree, ring_bytes)});
  });
  GS_CHECK(tree.parent == made.parents, "ranks of an in-process job on different trees");
  return made.fabric.plane(logical);
}

InProcessRepair InProcessJob::repair(int logical, bool replace,
                                     const InProcessFailures::Complete& complete) {
  GS_CHECK(hub_.repairable_, "a repair of an in-process job that is not repairable");
  return hub_.failures_.repair(logical, replace, [&](const InProcessRepair& repair) {
    hub_.control_.clear();
    hub_.heartbeats_.clear();
    complete(repair);
  });
}

std::optional<InProcessFailures::Assignment> InProcessJob::wait_as_spare() {
  return hub_.failures_.wait_as_spare(rank_);
}

void InProcessJob::release_spares() { hub_.failures_.release_spares(); }

void InProcessJobHub::fail(int thread) {
  GS_CHECK(repairable_, "rank " + std::to_string(thread) + " failed in an in-process job that "
                        "is not repairable");
  failures_.fail(thread);
}

InProcessJobHub::InProcessJobHub(int ranks, double timeout_seconds, InProcessFaults faults)
    : timeout_seconds_(timeout_seconds),
      control_(ranks, timeout_seconds),
      heartbeats_(ranks, timeout_seconds),
      repairable_(faults.repairable),
      failures_(ranks, faults.spares, timeout_seconds),
      everyone_(ranks, timeout_seconds) {
  GS_CHECK(ranks >= 1, "an in-process job of " + std::to_string(ranks) + " ranks");
  for (int r = 0; r < ranks; ++r) jobs_.push_back(std::make_unique<InProcessJob>(*this, r));
}

InProcessJobHub::~InProcessJobHub() = default;

InProcessJob& InProcessJobHub::job(int rank) {
  GS_CHECK(rank >= 0 && rank < ranks(), "rank " + std::to_string(rank) + " of an in-process job");
  return *jobs_[static_cast<std::size_t>(rank)];
}

}  // namespace gradshare::comm

// in_process_downpour_transport.cpp: the in-process Downpour transport.
#include "comm/inproc/train/in_process_downpour_transport.h"

#include <algorithm>
#include <string>

#include "core/errors.h"
#include "train/downpour/link.h"
#include "train/downpour/server.h"

namespace gradshare::train {

namespace {

class InProcessShardServer final : public ShardServer {
 public:
  InProcessShardServer(InProcessShardBox& box, const DownpourLayout& layout, int shard,
                       const config::ExperimentConfig& config, std::span<const float> initial)
      : ShardServer(layout, shard, config), box_(box), shard_(initial.begin(), initial.end()) {
    GS_CHECK(shard_.size() == layout.shard(shard).size(),
             "initial shard of " + std::to_string(shard_.size()));
    std::lock_guard lock(box_.mutex);
    box_.published = shard_;
  }

  std::size_t poll() override {
    return round_robin([this](int worker) { return apply_if_pushed(worker); });
  }
  std::span<const float> parameters() const override { return shard_; }
  void publish_carried_state() override {
    std::lock_guard lock(box_.mutex);
    box_.version = updater_.version();
  }

 private:
  bool apply_if_pushed(int worker) {
    std::optional<InProcessShardBox::Push> push;
    {
      std::lock_guard lock(box_.mutex);
      push.swap(box_.pushes[static_cast<std::size_t>(worker)]);
    }
    if (!push) return false;
    const std::uint64_t ack = updater_.prepare(worker, push->header, push->payload, shard_);
    updater_.apply(shard_);
    std::lock_guard lock(box_.mutex);
    box_.published = shard_;
    box_.version = updater_.version();
    box_.acks[static_cast<std::size_t>(worker)] = ack;
    return true;
  }

  InProcessShardBox& box_;
  std::vector<float> shard_;
};

class InProcessShardLink final : public ShardLink {
 public:
  InProcessShardLink(InProcessShardBox& box, const DownpourLayout& layout, int shard, int worker,
                     const config::ExperimentConfig& config)
      : ShardLink(layout, shard, worker, config), box_(box), worker_(worker) {}

  void advance(DownpourReport& report) override {
    std::optional<std::uint64_t> word;
    {
      std::lock_guard lock(box_.mutex);
      word.swap(box_.acks[static_cast<std::size_t>(worker_)]);
    }
    if (word) acknowledge(*word, report);
  }

  void start_pull(DownpourReport& report) override {
    report.pull_bytes += static_cast<std::int64_t>(range().size() * sizeof(float));
  }

  std::span<const float> finish_pull(DownpourReport& report, double,
                                     const std::function<void()>&) override {
    std::lock_guard lock(box_.mutex);
    pulled_ = box_.published;
    set_base_version(box_.version);
    ++report.pulls;
    return pulled_;
  }

 protected:
  void send_push(const PushHeader& header, std::span<const std::uint8_t> payload) override {
    std::lock_guard lock(box_.mutex);
    box_.pushes[static_cast<std::size_t>(worker_)] =
        InProcessShardBox::Push{header, {payload.begin(), payload.end()}};
  }

 private:
  InProcessShardBox& box_;
  int worker_;
  std::vector<float> pulled_;
};

}  // namespace

InProcessDownpourHub::InProcessDownpourHub(const DownpourLayout& layout)
    : expected_(layout.servers() + layout.workers()) {
  for (int s = 0; s < layout.servers(); ++s) {
    auto box = std::make_unique<InProcessShardBox>();
    box->pushes.resize(static_cast<std::size_t>(layout.workers()));
    box->acks.resize(static_cast<std::size_t>(layout.workers()));
    boxes_.push_back(std::move(box));
  }
}

void InProcessDownpourHub::arrive_and_wait() {
  std::unique_lock lock(mutex_);
  if (++arrived_ == expected_) all_arrived_.notify_all();
  all_arrived_.wait(lock, [this] { return arrived_ >= expected_; });
}

std::unique_ptr<ShardServer> InProcessDownpourTransport::serve(
    int shard, const config::ExperimentConfig& config, std::span<const float> initial) {
  return std::make_unique<InProcessShardServer>(hub_.box(shard), layout_, shard, config, initial);
}

std::unique_ptr<ShardLink> InProcessDownpourTransport::link(int shard, int worker,
                                                            const config::ExperimentConfig& config) {
  return std::make_unique<InProcessShardLink>(hub_.box(shard), layout_, shard, worker, config);
}

std::uint64_t InProcessDownpourTransport::read_shard(int shard, std::span<float> out, double,
                                                     const std::function<void()>&) {
  auto& box = hub_.box(shard);
  std::lock_guard lock(box.mutex);
  GS_CHECK(out.size() == box.published.size(), "read of " + std::to_string(out.size()) + " values");
  std::copy(box.published.begin(), box.published.end(), out.begin());
  return box.version;
}

std::unique_ptr<DownpourTransport> make_in_process_downpour_transport(
    comm::InProcessJob& job, const DownpourLayout& layout) {
  auto& hub = job.shared<InProcessDownpourHub>(
      "downpour after " + std::to_string(job.repaired_failures()) + " failures",
      [&] { return std::make_unique<InProcessDownpourHub>(layout); });
  return std::make_unique<InProcessDownpourTransport>(hub, layout);
}

}  // namespace gradshare::train

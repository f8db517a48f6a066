// in_process_downpour_transport.h: Downpour between threads of one process (the in-process
// job of the strategy tests). Each shard has a box both sides lock: the shard as of its
// newest version (what pulls and reads copy), one push slot per worker and one ack word per
// worker. A server's poll takes the pushes waiting, applies them to its own copy with the
// same ShardUpdater as every transport, publishes the new version and leaves the ack word; a
// link's advance takes its ack word, and a pull copies the published shard.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "comm/inproc/in_process_job.h"
#include "train/downpour/transport.h"

namespace gradshare::train {

struct InProcessShardBox {
  struct Push {
    PushHeader header;
    std::vector<std::uint8_t> payload;
  };
  std::mutex mutex;
  std::vector<float> published;  // the shard as of `version`
  std::uint64_t version = 0;
  std::vector<std::optional<Push>> pushes;      // per worker: the push not yet taken
  std::vector<std::optional<std::uint64_t>> acks;  // per worker: the ack word not yet taken
};

// Every shard's box; one per job and repair (what was in flight is dropped with it), shared by
// its threads.
class InProcessDownpourHub {
 public:
  explicit InProcessDownpourHub(const DownpourLayout& layout);
  InProcessShardBox& box(int shard) { return *boxes_[static_cast<std::size_t>(shard)]; }
  // Returns once every rank of the layout has called it (the start's wait for the servers).
  void arrive_and_wait();

 private:
  std::vector<std::unique_ptr<InProcessShardBox>> boxes_;
  std::mutex mutex_;
  std::condition_variable all_arrived_;
  int expected_;
  int arrived_ = 0;
};

class InProcessDownpourTransport final : public DownpourTransport {
 public:
  InProcessDownpourTransport(InProcessDownpourHub& hub, const DownpourLayout& layout)
      : hub_(hub), layout_(layout) {}

  std::unique_ptr<ShardServer> serve(int shard, const config::ExperimentConfig& config,
                                     std::span<const float> initial) override;
  std::unique_ptr<ShardLink> link(int shard, int worker,
                                  const config::ExperimentConfig& config) override;
  std::uint64_t read_shard(int shard, std::span<float> out, double timeout_seconds,
                           const std::function<void()>& meanwhile) override;
  void wait_for_servers() override { hub_.arrive_and_wait(); }

 private:
  InProcessDownpourHub& hub_;
  const DownpourLayout& layout_;
};

// The transport of rank `job` of an in-process job (the hub is made by the first rank to ask;
// after a repair, a new one).
std::unique_ptr<DownpourTransport> make_in_process_downpour_transport(comm::InProcessJob& job,
                                                                      const DownpourLayout& layout);

}  // namespace gradshare::train

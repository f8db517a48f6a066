// downpour_server.cpp: ShardServer and the loop of the server ranks 1..K-1.
#include "train/downpour_server.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "codec/decoder.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/timer.h"
#include "train/checkpointer.h"
#include "train/worker_state.h"

namespace gradshare::train {

namespace {

std::unique_ptr<nn::Optimizer> server_optimizer(const config::ExperimentConfig& config,
                                                std::size_t floats) {
  config::OptimizerConfig settings = config.optimizer;  // epsilon comes from optimizer.epsilon
  settings.type = config.downpour.server_optimizer;
  return nn::Optimizer::create(settings, floats);
}

}  // namespace

ShardServer::ShardServer(comm::Window& window, const DownpourLayout& layout, int shard,
                         const config::ExperimentConfig& config, std::span<const float> initial)
    : window_(window),
      layout_(layout),
      shard_(shard),
      shard_layout_(layout.shard_layout(shard)),
      optimizer_(server_optimizer(config, shard_layout_.floats())),
      learning_rate_(config.downpour.server_learning_rate /
                     (config.downpour.combine == "mean" ? layout.workers() : 1)),
      applied_(static_cast<std::size_t>(layout.workers()), 0),
      ack_values_(static_cast<std::size_t>(layout.workers()), 0),
      delta_(shard_layout_.floats()),
      update_(shard_layout_.floats()) {
  GS_CHECK(initial.size() == shard_layout_.floats(),
           "initial shard of " + std::to_string(initial.size()));
  GS_CHECK(window.bytes() >= shard_layout_.window_bytes(), "Downpour server window too small");
  std::copy(initial.begin(), initial.end(), shard_memory().begin());
  store_seqlock(0);
  window_.sync();
}

std::span<float> ShardServer::shard_memory() const {
  return {reinterpret_cast<float*>(window_.base() + ShardLayout::parameters_offset()),
          shard_layout_.floats()};
}

std::span<const float> ShardServer::parameters() const { return shard_memory(); }

void ShardServer::store_seqlock(std::uint64_t value) {
  seqlock_ = value;
  auto* word = reinterpret_cast<std::uint64_t*>(window_.base() + ShardLayout::seqlock_offset());
  std::atomic_ref<std::uint64_t>(*word).store(value, std::memory_order_release);
}

std::size_t ShardServer::poll() {
  const int workers = layout_.workers();
  if (workers == 0) return 0;
  window_.sync();  // workers' completed Puts become visible to the loads below
  std::size_t applied = 0;
  int last = -1;
  for (int k = 0; k < workers; ++k) {
    const int worker = (next_worker_ + k) % workers;
    if (apply_if_posted(worker)) {
      ++applied;
      last = worker;
    }
  }
  if (last >= 0) next_worker_ = (last + 1) % workers;
  return applied;
}

void ShardServer::bad_push(int worker, const std::string& detail) const {
  throw core::RuntimeError("parameter server " + std::to_string(shard_) +
                           ": push from worker rank " +
                           std::to_string(layout_.worker_rank(worker)) + ": " + detail);
}

bool ShardServer::apply_if_posted(int worker) {
  std::uint8_t* slot = window_.base() + shard_layout_.slot_offset(worker);
  const std::uint64_t seq = std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(slot))
                                .load(std::memory_order_acquire);
  auto& applied = applied_[static_cast<std::size_t>(worker)];
  if (seq == applied) return false;
  if (seq != applied + 1)
    bad_push(worker, "seq jumped from " + std::to_string(applied) + " to " + std::to_string(seq) +
                         " (corrupt window)");
  SlotHeader header;
  std::memcpy(&header, slot, sizeof header);
  const std::uint8_t* payload = slot + kLineBytes;
  const std::size_t floats = shard_layout_.floats();
  if (header.bytes > shard_layout_.payload_capacity())
    bad_push(worker, std::to_string(header.bytes) + " payload bytes exceed the slot's " +
                         std::to_string(shard_layout_.payload_capacity()));
  switch (static_cast<PushFormat>(header.format)) {
    case PushFormat::kDense:
      if (header.bytes != floats * sizeof(float))
        bad_push(worker, "dense push of " + std::to_string(header.bytes) +
                             " bytes for a shard of " + std::to_string(floats) + " parameters");
      std::memcpy(delta_.data(), payload, header.bytes);
      break;
    case PushFormat::kEncoded: {
      std::fill(delta_.begin(), delta_.end(), 0.0f);
      std::string error;
      if (!codec::accumulate_message({payload, header.bytes}, delta_, &error))
        bad_push(worker, "malformed encoded push: " + error);
      break;
    }
    default:
      bad_push(worker, "unknown push format " + std::to_string(header.format));
  }
  for (std::size_t i = 0; i < floats; ++i)
    if (!std::isfinite(delta_[i]))
      bad_push(worker, "non-finite update at shard index " + std::to_string(i));
  if (header.base > version())
    bad_push(worker, "base version " + std::to_string(header.base) + " is newer than the shard's " +
                         std::to_string(version()));
  const std::uint64_t age = version() - header.base;

  // The update is computed outside the seqlock so that readers are held off only while the
  // parameters themselves change.
  optimizer_->compute_update(delta_, parameters(), update_, learning_rate_);
  store_seqlock(seqlock_ + 1);
  std::atomic_thread_fence(std::memory_order_release);  // odd word before any parameter store
  nn::apply_update(shard_memory(), update_);
  store_seqlock(seqlock_ + 1);  // even again: version + 1
  window_.sync();
  applied = seq;

  const int rank = layout_.worker_rank(worker);
  auto& ack = ack_values_[static_cast<std::size_t>(worker)];
  ack = pack_ack(seq, age);
  window_.put(&ack, sizeof ack, rank, DownpourLayout::ack_offset(shard_));
  window_.flush(rank);
  return true;
}

int run_downpour_server(RunContext& context, comm::ControlPlane& control, ShardServer& server) {
  core::Backoff backoff;
  core::Deadline deadline(control.timeout_seconds());
  StopNotice stop_notice(control);
  for (;;) {
    bool busy = server.poll() > 0;
    while (control.try_receive(comm::Tag::kStateRequest, 0)) {
      control.send(0, comm::Tag::kStateReply,
                   serialize(capture_worker_state(server.optimizer(), 0.0f)));
      busy = true;
    }
    stop_notice.check();
    if (auto shutdown = control.try_receive(comm::Tag::kShutdown, 0)) {
      core::log_info("parameter server " + std::to_string(server.shard()) +
                     " done: " + std::to_string(server.parameters().size()) + " parameters, " +
                     std::to_string(server.version()) + " pushes applied");
      control.flush();
      return shutdown_code(*shutdown);
    }
    if (busy) {
      backoff.reset();
      deadline = core::Deadline(control.timeout_seconds());
    } else {
      if (deadline.expired())
        throw core::RuntimeError("parameter server " + std::to_string(context.rank) +
                                 ": no push and no shutdown from the master for " +
                                 std::to_string(control.timeout_seconds()) + " s");
      backoff.wait();
    }
  }
}

}  // namespace gradshare::train

// downpour/rma_server.cpp: RmaShardServer.
#include "comm/mpi/train/downpour/rma_server.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <utility>

#include "core/errors.h"

namespace gradshare::train {

RmaShardServer::RmaShardServer(comm::Window& window, const DownpourLayout& layout,
                               WorkerRanks worker_ranks, int shard,
                               const config::ExperimentConfig& config,
                               std::span<const float> initial)
    : ShardServer(layout, shard, config),
      window_(window),
      shard_layout_(layout.shard_layout(shard)),
      worker_ranks_(std::move(worker_ranks)),
      ack_values_(static_cast<std::size_t>(layout.workers()), 0) {
  GS_CHECK(initial.size() == shard_layout_.floats(),
           "initial shard of " + std::to_string(initial.size()));
  GS_CHECK(window.bytes() >= shard_layout_.window_bytes(), "Downpour server window too small");
  std::copy(initial.begin(), initial.end(), shard_memory().begin());
  store_seqlock(0);
  window_.sync();
}

void RmaShardServer::publish_carried_state() {
  store_seqlock(2 * version());
  // A slot's seq is the newest push there; a fresh window's 0 would read as a new one.
  for (int worker = 0; worker < layout_.workers(); ++worker) {
    auto* seq = reinterpret_cast<std::uint64_t*>(window_.base() + shard_layout_.slot_offset(worker));
    std::atomic_ref<std::uint64_t>(*seq).store(updater_.applied_seq(worker),
                                               std::memory_order_release);
  }
  window_.sync();
}

std::span<float> RmaShardServer::shard_memory() const {
  return {reinterpret_cast<float*>(window_.base() + ShardLayout::parameters_offset()),
          shard_layout_.floats()};
}

void RmaShardServer::store_seqlock(std::uint64_t value) {
  auto* word = reinterpret_cast<std::uint64_t*>(window_.base() + ShardLayout::seqlock_offset());
  std::atomic_ref<std::uint64_t>(*word).store(value, std::memory_order_release);
}

std::size_t RmaShardServer::poll() {
  if (layout_.workers() == 0) return 0;
  window_.sync();  // workers' completed Puts become visible to the loads below
  return round_robin([this](int worker) { return apply_if_posted(worker); });
}

bool RmaShardServer::apply_if_posted(int worker) {
  std::uint8_t* slot = window_.base() + shard_layout_.slot_offset(worker);
  const std::uint64_t seq = std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(slot))
                                .load(std::memory_order_acquire);
  if (seq == updater_.applied_seq(worker)) return false;
  PushHeader header;
  std::memcpy(&header, slot, sizeof header);
  header.seq = seq;
  // The slot holds payload_capacity() bytes; a larger header.bytes is rejected by prepare().
  const std::span<const std::uint8_t> payload(
      slot + kLineBytes, std::min<std::uint64_t>(header.bytes, shard_layout_.payload_capacity()));
  const std::uint64_t ack = updater_.prepare(worker, header, payload, parameters());

  // The update was computed outside the seqlock, so readers are held off only while the
  // parameters themselves change.
  const std::uint64_t version = updater_.version();
  store_seqlock(2 * version + 1);
  std::atomic_thread_fence(std::memory_order_release);  // odd word before any parameter store
  updater_.apply(shard_memory());
  store_seqlock(2 * version + 2);  // even again: version + 1
  window_.sync();

  const int rank = worker_ranks_.at(static_cast<std::size_t>(worker));
  auto& origin = ack_values_[static_cast<std::size_t>(worker)];
  origin = ack;
  window_.put(&origin, sizeof origin, rank, DownpourLayout::ack_offset(shard()));
  window_.flush(rank);
  return true;
}

}  // namespace gradshare::train

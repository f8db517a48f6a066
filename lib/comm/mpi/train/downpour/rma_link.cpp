// downpour/rma_link.cpp: ShardReader, read_shard and RmaShardLink.
#include "comm/mpi/train/downpour/rma_link.h"

#include <atomic>
#include <cstddef>
#include <string>

#include "core/errors.h"
#include "core/timer.h"

namespace gradshare::train {

namespace {

// Gets the server's seqlock word and waits for it: a read must know the word before it starts
// on the shard and after it is done with it.
std::uint64_t read_word(comm::Window& window, int server, std::uint64_t& origin) {
  window.get(&origin, sizeof origin, server, ShardLayout::seqlock_offset());
  window.flush(server);
  return origin;
}

[[noreturn]] void pull_timeout(int server, double timeout_seconds) {
  throw core::RuntimeError("timed out after " + std::to_string(timeout_seconds) +
                           " s reading a consistent shard from parameter server " +
                           std::to_string(server) + " (it kept writing during every read)");
}

}  // namespace

ShardReader::ShardReader(comm::Window& window, int server, std::size_t floats)
    : window_(window), server_(server), buffer_(floats) {}

std::uint64_t ShardReader::read_seqlock() { return read_word(window_, server_, word_); }

bool ShardReader::start() {
  GS_CHECK(!in_flight_, "a shard read is already in flight");
  const std::uint64_t word = read_seqlock();
  if (word % 2 != 0) return false;
  seqlock_ = word;
  window_.get(buffer_.data(), bytes(), server_, ShardLayout::parameters_offset());
  in_flight_ = true;
  return true;
}

bool ShardReader::finish() {
  GS_CHECK(in_flight_, "no shard read in flight");
  window_.flush(server_);
  in_flight_ = false;
  return read_seqlock() == seqlock_;
}

std::uint64_t read_shard(comm::Window& window, int server, std::span<float> out,
                         double timeout_seconds) {
  core::Deadline deadline(timeout_seconds);
  core::Backoff backoff;
  std::uint64_t origin = 0;
  for (;;) {
    const std::uint64_t before = read_word(window, server, origin);
    if (before % 2 == 0) {
      window.get(out.data(), out.size_bytes(), server, ShardLayout::parameters_offset());
      window.flush(server);
      if (read_word(window, server, origin) == before) return before / 2;
    }
    if (deadline.expired()) pull_timeout(server, timeout_seconds);
    backoff.wait();
  }
}

RmaShardLink::RmaShardLink(comm::Window& window, const DownpourLayout& layout, int shard,
                           int worker, const config::ExperimentConfig& config)
    : ShardLink(layout, shard, worker, config),
      window_(window),
      slot_(layout.shard_layout(shard).slot_offset(worker)),
      reader_(window, shard, range().size()) {}

std::uint64_t RmaShardLink::read_ack() {
  window_.sync();  // the server's completed ack Put becomes visible to the load below
  auto* word =
      reinterpret_cast<std::uint64_t*>(window_.base() + DownpourLayout::ack_offset(server()));
  return std::atomic_ref<std::uint64_t>(*word).load(std::memory_order_acquire);
}

void RmaShardLink::send_push(const PushHeader& header, std::span<const std::uint8_t> payload) {
  header_ = header;
  if (!payload.empty()) window_.put(payload.data(), payload.size(), server(), slot_ + kLineBytes);
  // format, bytes and base are adjacent: one Put, completed with the payload by advance().
  window_.put(&header_.format, sizeof(PushHeader) - offsetof(PushHeader, format), server(),
              slot_ + offsetof(PushHeader, format));
  staged_ = true;
}

void RmaShardLink::advance(DownpourReport& report) {
  if (staged_) {
    window_.flush(server());  // the payload and push header are complete at the server
    window_.put(&header_.seq, sizeof header_.seq, server(), slot_ + offsetof(PushHeader, seq));
    window_.flush(server());
    staged_ = false;
  }
  if (!push_outstanding()) return;
  const std::uint64_t word = read_ack();
  // Seq 0 acknowledges nothing: the word of a window made after a repair, not yet written.
  if (ack_seq(word) != 0 && ack_seq(word) != acked()) acknowledge(word, report);
}

void RmaShardLink::start_pull(DownpourReport& report) {
  if (reader_.start()) report.pull_bytes += static_cast<std::int64_t>(reader_.bytes());
}

std::span<const float> RmaShardLink::finish_pull(DownpourReport& report, double timeout_seconds,
                                                 const std::function<void()>& meanwhile) {
  bool consistent = reader_.in_flight() && reader_.finish();
  core::Deadline deadline(timeout_seconds);
  core::Backoff backoff;
  while (!consistent) {
    ++report.pull_retries;
    if (reader_.start()) {
      report.pull_bytes += static_cast<std::int64_t>(reader_.bytes());
      if (reader_.finish()) break;
    }
    if (deadline.expired()) pull_timeout(server(), timeout_seconds);
    if (meanwhile) meanwhile();
    backoff.wait();
  }
  set_base_version(reader_.version());
  ++report.pulls;
  return reader_.shard();
}

}  // namespace gradshare::train

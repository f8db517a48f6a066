// downpour_client.cpp: ShardReader, read_shard and ShardClient.
#include "train/downpour_client.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>

#include "core/errors.h"
#include "core/timer.h"

namespace gradshare::train {

namespace {

// Gets the server's seqlock word and waits for it: a read must know the word before it starts
// on the shard and after it is done with it.
std::uint64_t read_word(comm::Window& window, int server, std::uint64_t& origin) {
  get_bytes(window, &origin, sizeof origin, server, ShardLayout::seqlock_offset());
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
  get_bytes(window_, buffer_.data(), bytes(), server_, ShardLayout::parameters_offset());
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
      get_bytes(window, out.data(), out.size_bytes(), server, ShardLayout::parameters_offset());
      window.flush(server);
      if (read_word(window, server, origin) == before) return before / 2;
    }
    if (deadline.expired()) pull_timeout(server, timeout_seconds);
    backoff.wait();
  }
}

ShardClient::ShardClient(comm::Window& window, const DownpourLayout& layout, int shard, int worker,
                         const config::ExperimentConfig& config)
    : window_(window),
      server_(shard),
      rank_(layout.worker_rank(worker)),
      range_(layout.shard(shard)),
      layout_(layout.shard_layout(shard)),
      slot_(layout_.slot_offset(worker)),
      reader_(window, shard, range_.size()) {
  if (config.downpour.encode)
    encoder_ = std::make_unique<codec::Encoder>(config.encoding, range_.size());
  payload_.reserve(layout_.payload_capacity());
}

std::uint64_t ShardClient::read_ack() {
  window_.sync();  // the server's completed ack Put becomes visible to the load below
  auto* word =
      reinterpret_cast<std::uint64_t*>(window_.base() + DownpourLayout::ack_offset(server_));
  return std::atomic_ref<std::uint64_t>(*word).load(std::memory_order_acquire);
}

void ShardClient::advance(DownpourReport& report) {
  if (staged_) {
    window_.flush(server_);  // the payload and slot header are complete at the server
    header_.seq = posted_ + 1;
    window_.put(&header_.seq, sizeof header_.seq, server_, slot_ + offsetof(SlotHeader, seq));
    window_.flush(server_);
    ++posted_;
    staged_ = false;
  }
  if (acked_ == posted_) return;
  const std::uint64_t word = read_ack();
  const std::uint64_t seq = ack_seq(word);
  if (seq == acked_) return;
  if (seq != acked_ + 1 || seq > posted_)
    throw core::RuntimeError("parameter server " + std::to_string(server_) + " acknowledged push " +
                             std::to_string(seq) + " of worker rank " + std::to_string(rank_) +
                             ", which has posted " + std::to_string(posted_) + " and seen " +
                             std::to_string(acked_) + " acknowledged (corrupt window)");
  acked_ = seq;
  const auto age = static_cast<std::int64_t>(ack_age(word));
  ++report.ages;
  report.age_sum += static_cast<double>(age);
  report.age_max = std::max(report.age_max, age);
}

bool ShardClient::slot_free() { return !staged_ && acked_ == posted_; }

void ShardClient::post(PushFormat format, std::span<const std::uint8_t> payload) {
  GS_CHECK(slot_free(),
           "push to parameter server " + std::to_string(server_) + " while one is in flight");
  GS_CHECK(payload.size() <= layout_.payload_capacity(),
           "push of " + std::to_string(payload.size()) + " bytes");
  header_.format = static_cast<std::uint64_t>(format);
  header_.bytes = payload.size();
  header_.base = base_version_;
  if (!payload.empty()) window_.put(payload.data(), payload.size(), server_, slot_ + kLineBytes);
  // format, bytes and base are adjacent: one Put, completed with the payload by advance().
  window_.put(&header_.format, sizeof(SlotHeader) - offsetof(SlotHeader, format), server_,
              slot_ + offsetof(SlotHeader, format));
  staged_ = true;
}

void ShardClient::push(std::span<float> delta, std::uint64_t iteration, DownpourReport& report) {
  GS_CHECK(delta.size() == range_.size(), "push of " + std::to_string(delta.size()) + " values");
  PushFormat format = PushFormat::kDense;
  if (encoder_) {
    const codec::MessageMeta meta{static_cast<std::uint32_t>(rank_), posted_ + 1, iteration, 0, 0};
    encoder_->encode(delta, meta, payload_);
    format = PushFormat::kEncoded;
  } else {
    payload_.resize(delta.size_bytes());
    std::memcpy(payload_.data(), delta.data(), delta.size_bytes());
  }
  std::fill(delta.begin(), delta.end(), 0.0f);
  post(format, payload_);
  ++report.pushes;
  report.push_bytes += static_cast<std::int64_t>(payload_.size());
}

void ShardClient::push_all(std::span<float> delta, DownpourReport& report) {
  GS_CHECK(delta.size() == range_.size(), "push of " + std::to_string(delta.size()) + " values");
  if (encoder_) {
    auto residual = encoder_->residual();
    for (std::size_t i = 0; i < delta.size(); ++i) delta[i] += residual[i];
    std::fill(residual.begin(), residual.end(), 0.0f);
  }
  payload_.resize(delta.size_bytes());
  std::memcpy(payload_.data(), delta.data(), delta.size_bytes());
  std::fill(delta.begin(), delta.end(), 0.0f);
  post(PushFormat::kDense, payload_);
  ++report.pushes;
  report.push_bytes += static_cast<std::int64_t>(payload_.size());
}

void ShardClient::start_pull(DownpourReport& report) {
  if (reader_.start()) report.pull_bytes += static_cast<std::int64_t>(reader_.bytes());
}

std::span<const float> ShardClient::finish_pull(DownpourReport& report, double timeout_seconds) {
  bool consistent = reader_.in_flight() && reader_.finish();
  core::Deadline deadline(timeout_seconds);
  core::Backoff backoff;
  while (!consistent) {
    ++report.pull_retries;
    if (reader_.start()) {
      report.pull_bytes += static_cast<std::int64_t>(reader_.bytes());
      if (reader_.finish()) break;
    }
    if (deadline.expired()) pull_timeout(server_, timeout_seconds);
    backoff.wait();
  }
  base_version_ = reader_.version();
  ++report.pulls;
  return reader_.shard();
}

std::span<const float> ShardClient::residual() const {
  if (!encoder_) return {};
  return static_cast<const codec::Encoder&>(*encoder_).residual();
}

}  // namespace gradshare::train

// downpour/link.cpp: ShardLink, the transport-independent half of a worker's shard link.
#include "train/downpour/link.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/errors.h"
#include "core/log.h"

namespace gradshare::train {

ShardLink::ShardLink(const DownpourLayout& layout, int shard, int worker,
                     const config::ExperimentConfig& config)
    : server_(shard),
      rank_(layout.worker_rank(worker)),
      range_(layout.shard(shard)),
      payload_capacity_(layout.shard_layout(shard).payload_capacity()) {
  if (config.downpour.encode)
    encoder_ = std::make_unique<codec::Encoder>(push_encoding(config), range_.size());
  payload_.reserve(payload_capacity_);
  if (shard != 0) keep_pushes(config, layout);
}

void ShardLink::keep_pushes(const config::ExperimentConfig& config, const DownpourLayout& layout) {
  if (!log_)
    log_ = std::make_unique<PushLog>(static_cast<std::size_t>(config.fault_tolerance.keep_bytes) /
                                     static_cast<std::size_t>(layout.servers()));
}

void ShardLink::post(PushFormat format, DownpourReport& report) {
  GS_CHECK(!push_outstanding(),
           "push to parameter server " + std::to_string(server_) + " while one is in flight");
  GS_CHECK(payload_.size() <= payload_capacity_,
           "push of " + std::to_string(payload_.size()) + " bytes");
  header_ = {posted_ + 1, static_cast<std::uint64_t>(format), payload_.size(), base_version_};
  send_push(header_, payload_);
  if (log_) {
    const std::uint64_t dropped = log_->dropped_through();
    log_->record(header_, payload_);
    if (dropped == 0 && log_->dropped_through() > 0)
      core::log_warn("the pushes kept for parameter server " + std::to_string(server_) +
                     " outgrew fault_tolerance.keep_bytes / downpour.servers: until the next "
                     "checkpoint, a loss of that server cannot be repaired in the job");
  }
  ++posted_;
  ++report.pushes;
  report.push_bytes += static_cast<std::int64_t>(payload_.size());
}

void ShardLink::push(std::span<float> delta, std::uint64_t iteration, double epochs,
                     DownpourReport& report) {
  GS_CHECK(delta.size() == range_.size(), "push of " + std::to_string(delta.size()) + " values");
  PushFormat format = PushFormat::kDense;
  if (encoder_) {
    const codec::MessageMeta meta{static_cast<std::uint32_t>(rank_), posted_ + 1, iteration, 0, 0};
    encoder_->set_training_progress(epochs);
    encoder_->encode(delta, meta, payload_);
    format = PushFormat::kEncoded;
  } else {
    payload_.resize(delta.size_bytes());
    std::memcpy(payload_.data(), delta.data(), delta.size_bytes());
  }
  std::fill(delta.begin(), delta.end(), 0.0f);
  post(format, report);
}

void ShardLink::push_all(std::span<float> delta, DownpourReport& report) {
  GS_CHECK(delta.size() == range_.size(), "push of " + std::to_string(delta.size()) + " values");
  if (encoder_) {
    auto residual = encoder_->residual();
    for (std::size_t i = 0; i < delta.size(); ++i) delta[i] += residual[i];
    std::fill(residual.begin(), residual.end(), 0.0f);
  }
  payload_.resize(delta.size_bytes());
  std::memcpy(payload_.data(), delta.data(), delta.size_bytes());
  std::fill(delta.begin(), delta.end(), 0.0f);
  post(PushFormat::kDense, report);
}

void ShardLink::acknowledge(std::uint64_t word, DownpourReport& report) {
  const std::uint64_t seq = ack_seq(word);
  if (seq != acked_ + 1 || seq > posted_)
    throw core::RuntimeError("parameter server " + std::to_string(server_) + " acknowledged push " +
                             std::to_string(seq) + " of worker rank " + std::to_string(rank_) +
                             ", which has posted " + std::to_string(posted_) + " and seen " +
                             std::to_string(acked_) + " acknowledged (corrupt ack)");
  acked_ = seq;
  if (log_) log_->acknowledged(seq, ack_age(word), header_.base);
  const auto age = static_cast<std::int64_t>(ack_age(word));
  ++report.ages;
  report.age_sum += static_cast<double>(age);
  report.age_max = std::max(report.age_max, age);
}

void ShardLink::take_over(ShardLink& old) {
  GS_CHECK(old.server_ == server_ && old.rank_ == rank_, "a link taken over from another");
  encoder_ = std::move(old.encoder_);
  log_ = std::move(old.log_);
  payload_ = std::move(old.payload_);
  header_ = old.header_;
  base_version_ = old.base_version_;
  posted_ = old.posted_;
  acked_ = old.acked_;
}

void ShardLink::resync(std::uint64_t applied) {
  if (posted_ == 0) {
    posted_ = acked_ = applied;  // a replacement (or a worker that never pushed: applied is 0)
    return;
  }
  if (applied == posted_) {
    acked_ = posted_;  // applied, its ack lost with the old transport (its age is not counted)
    return;
  }
  if (applied + 1 == posted_ && acked_ < posted_) {
    send_push(header_, payload_);
    return;
  }
  throw core::RuntimeError("parameter server " + std::to_string(server_) +
                           " says it applied push " + std::to_string(applied) +
                           " of worker rank " + std::to_string(rank_) + ", which has posted " +
                           std::to_string(posted_) + " and seen " + std::to_string(acked_) +
                           " acknowledged");
}

DownpourPushLog ShardLink::push_log() const {
  GS_CHECK(log_ != nullptr, "shard " + std::to_string(server_) + " keeps no pushes");
  return {posted_, log_->dropped_through(), {log_->pushes().begin(), log_->pushes().end()}};
}

void ShardLink::snapshot_holds(std::uint64_t seq) {
  if (log_) log_->held_through(seq);
}

std::span<const float> ShardLink::residual() const {
  if (!encoder_) return {};
  return static_cast<const codec::Encoder&>(*encoder_).residual();
}

}  // namespace gradshare::train

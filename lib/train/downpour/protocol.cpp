// downpour/protocol.cpp: shard ranges, window layouts, ack words, reports, partition messages.
#include "train/downpour/protocol.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "codec/encoder.h"
#include "comm/byte_io.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/stop_signal.h"
#include "runtime/checkpointer.h"
#include "train/replica.h"

namespace gradshare::train {

ShardRange shard_range(std::size_t parameters, int servers, int shard) {
  GS_CHECK(servers > 0 && shard >= 0 && shard < servers,
           "shard " + std::to_string(shard) + " of " + std::to_string(servers));
  const auto k = static_cast<std::size_t>(servers);
  const auto s = static_cast<std::size_t>(shard);
  // The first parameters % servers shards hold one extra parameter.
  const std::size_t base = parameters / k, extra = parameters % k;
  const std::size_t begin = s * base + std::min(s, extra);
  return {begin, begin + base + (s < extra ? 1 : 0)};
}

// encoding.*'s sparsity band is what one step's update should carry (gradient sharing sends a
// message a step); a push carries downpour.n_push steps of updates, so its band is n_push times
// wider. Encoded with the per-step band, a push moved a fifth of what the workers computed: the
// rest waited in their residuals (the servers' model at 27-60 % after one and two epochs while
// the workers trained at 80 %) and arrived all at once in the last push.
config::EncodingConfig push_encoding(const config::ExperimentConfig& config) {
  auto encoding = config.encoding;
  const double steps = static_cast<double>(config.downpour.n_push);
  encoding.min_sparsity = std::min(1.0, encoding.min_sparsity * steps);
  encoding.max_sparsity = std::min(1.0, encoding.max_sparsity * steps);
  encoding.target_sparsity = std::min(1.0, encoding.target_sparsity * steps);
  encoding.max_message_sparsity = std::min(1.0, encoding.max_message_sparsity * steps);
  return encoding;
}

ShardLayout::ShardLayout(std::size_t floats, int workers, std::size_t payload_capacity)
    : floats_(floats), workers_(workers), payload_capacity_(payload_capacity) {
  GS_CHECK(workers >= 0);
}

std::size_t ShardLayout::slot_offset(int worker) const {
  GS_CHECK(worker >= 0 && worker < workers_, "push slot " + std::to_string(worker));
  return parameters_offset() + align_line(floats_ * sizeof(float)) +
         static_cast<std::size_t>(worker) * (kLineBytes + align_line(payload_capacity_));
}

std::size_t ShardLayout::window_bytes() const {
  return parameters_offset() + align_line(floats_ * sizeof(float)) +
         static_cast<std::size_t>(workers_) * (kLineBytes + align_line(payload_capacity_));
}

DownpourLayout::DownpourLayout(const config::ExperimentConfig& config, std::size_t parameters,
                               int ranks)
    : servers_(static_cast<int>(config.downpour.servers)), ranks_(ranks), parameters_(parameters) {
  if (servers_ >= ranks_)
    throw core::UserError("downpour.servers is " + std::to_string(servers_) + " but the job has " +
                          std::to_string(ranks_) + " ranks: at least one rank must be a worker");
  if (static_cast<std::size_t>(servers_) > parameters_)
    throw core::UserError("downpour.servers (" + std::to_string(servers_) +
                          ") exceeds the model's " + std::to_string(parameters_) + " parameters");
  for (int s = 0; s < servers_; ++s) {
    const ShardRange range = shard_range(parameters_, servers_, s);
    std::size_t capacity = range.size() * sizeof(float);  // a dense push (and every final push)
    if (config.downpour.encode)
      capacity = std::max(capacity,
                          codec::Encoder(push_encoding(config), range.size()).max_message_bytes());
    shards_.push_back(range);
    layouts_.emplace_back(range.size(), workers(), capacity);
  }
}

std::size_t DownpourLayout::window_bytes(int rank) const {
  if (is_server(rank)) return layouts_[static_cast<std::size_t>(rank)].window_bytes();
  return static_cast<std::size_t>(servers_) * kLineBytes;  // the ack words
}

std::string push_combine(const config::ExperimentConfig& config) {
  if (config.downpour.combine != "auto") return config.downpour.combine;
  const auto& type = config.optimizer.type;
  return type == "sgd" || type == "momentum" || type == "nesterov" ? "sum" : "sqrt";
}

PushWeight::PushWeight(const config::ExperimentConfig& config, int workers)
    : least_(1.0 / static_cast<double>(workers)), by_age_(config.downpour.stale_pushes == "scale") {
  const auto combine = push_combine(config);
  most_ = combine == "sum"    ? 1.0
          : combine == "sqrt" ? 1.0 / std::sqrt(static_cast<double>(workers))
                              : least_;
}

double PushWeight::operator()(std::uint64_t age) const {
  if (!by_age_ || age <= 1) return most_;
  // Never below 1 / workers: a stale push still moves the model as much as under combine: mean
  // (down to 1 / age, pushes from workers behind a slow link counted for next to nothing:
  // 1 Gbit/s, 15 epochs, 88.35 % against 88.91 % with the floor).
  return std::min(most_, std::max(1.0 / static_cast<double>(age), least_));
}

config::ExperimentConfig worker_optimizer_config(const config::ExperimentConfig& config,
                                                 int workers) {
  // combine: sum adds the workers' pushes up: each clips as one of them.
  auto lowered = push_combine(config) == "sum" && workers > 0
                     ? one_of_summed_workers(config, workers)
                     : config;
  if (config.downpour.momentum == "compensate" && workers > 0)
    lowered = with_compensated_momentum(lowered, workers);
  return lowered;
}

std::string downpour_setup_line(const config::ExperimentConfig& config,
                                const DownpourLayout& layout) {
  const auto& downpour = config.downpour;
  const auto combine = push_combine(config);
  char line[512];
  std::snprintf(
      line, sizeof line,
      "downpour: %d parameter server%s (shards of %zu..%zu parameters), %d workers, "
      "push every %lld steps, pull every %lld, server optimizer %s lr %g (%s%s), pushes %s",
      layout.servers(), layout.servers() == 1 ? "" : "s", layout.shard(layout.servers() - 1).size(),
      layout.shard(0).size(), layout.workers(), static_cast<long long>(downpour.n_push),
      static_cast<long long>(downpour.n_pull), downpour.server_optimizer.c_str(),
      downpour.server_learning_rate,
      combine == "mean"   ? "divided by the workers"
      : combine == "sqrt" ? "divided by the square root of the workers"
                          : "pushes summed",
      PushWeight(config, layout.workers()).by_age()
          ? ", a stale push divided by its age, down to / workers"
          : "",
      downpour.encode ? "encoded" : "dense");
  return line;
}

std::string worker_momentum_line(const config::ExperimentConfig& config, int workers) {
  if (config.downpour.momentum != "compensate" || workers <= 0) return "";
  return compensated_momentum_line(config, workers, "downpour workers", "downpour.momentum");
}

std::uint64_t pack_ack(std::uint64_t seq, std::uint64_t age) {
  GS_CHECK(seq <= 0xFFFFFFFFull, "push seq " + std::to_string(seq) + " exceeds 32 bits");
  return (std::min<std::uint64_t>(age, 0xFFFFFFFFull) << 32) | seq;
}

void DownpourReport::add(const DownpourReport& o) {
  using R = DownpourReport;
  StepCounts::add(o);
  add_members(*this, o, &R::pushes, &R::push_bytes, &R::pulls, &R::pull_bytes, &R::pull_retries,
              &R::busy_slots, &R::ages, &R::age_sum, &R::seconds);
  age_max = std::max(age_max, o.age_max);
}

void StopNotice::check() {
  if (sent_ || !core::stop_requested()) return;
  runtime::log_stop_request("asking the master to stop after a checkpoint", true, job_);
  send(control_, 0, Shutdown{core::kExitRequeue});
  sent_ = true;
}

void DownpourState::write(comm::ByteWriter& writer) const {
  state.write(writer);
  writer.put<std::uint8_t>(shard.has_value());
  if (shard) shard->write(writer);
}

DownpourState DownpourState::read(comm::ByteReader& reader) {
  DownpourState message{WorkerState::read(reader), std::nullopt};
  if (reader.get<std::uint8_t>() != 0) message.shard = ShardSnapshot::read(reader);
  return message;
}

}  // namespace gradshare::train

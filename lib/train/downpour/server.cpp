// downpour/server.cpp: ShardUpdater, ShardServer's round robin, and the loop of the server ranks
// 1..K-1.
#include "train/downpour/server.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "codec/decoder.h"
#include "comm/byte_io.h"
#include "comm/transport_error.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/timer.h"
#include "runtime/checkpointer.h"
#include "train/downpour/network.h"
#include "train/group_recovery.h"
#include "train/job_session.h"
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

ShardUpdater::ShardUpdater(const DownpourLayout& layout, int shard,
                           const config::ExperimentConfig& config)
    : layout_(layout),
      shard_(shard),
      payload_capacity_(layout.shard_layout(shard).payload_capacity()),
      optimizer_(server_optimizer(config, layout.shard(shard).size())),
      learning_rate_(config.downpour.server_learning_rate),
      weight_(config, layout.workers()),
      applied_(static_cast<std::size_t>(layout.workers()), 0),
      own_versions_(static_cast<std::size_t>(layout.workers())),
      delta_(layout.shard(shard).size()),
      update_(layout.shard(shard).size()) {}

std::uint64_t ShardUpdater::applied_seq(int worker) const {
  return applied_.at(static_cast<std::size_t>(worker));
}

void ShardUpdater::reject(int worker, const std::string& detail) const {
  throw core::RuntimeError("parameter server " + std::to_string(shard_) +
                           ": push from worker rank " +
                           std::to_string(layout_.worker_rank(worker)) + ": " + detail);
}

std::uint64_t ShardUpdater::prepare(int worker, const PushHeader& header,
                                    std::span<const std::uint8_t> payload,
                                    std::span<const float> parameters,
                                    std::optional<std::uint64_t> replayed_age) {
  prepared_worker_ = -1;
  const std::uint64_t applied = applied_seq(worker);
  if (header.seq != applied + 1)
    reject(worker,
           "seq jumped from " + std::to_string(applied) + " to " + std::to_string(header.seq));
  if (header.bytes > payload_capacity_)
    reject(worker, std::to_string(header.bytes) + " payload bytes exceed the shard's push " +
                       "capacity of " + std::to_string(payload_capacity_));
  if (payload.size() != header.bytes)
    reject(worker, "the header announces " + std::to_string(header.bytes) +
                       " payload bytes, the push carries " + std::to_string(payload.size()));
  const std::size_t floats = delta_.size();
  switch (static_cast<PushFormat>(header.format)) {
    case PushFormat::kDense:
      if (header.bytes != floats * sizeof(float))
        reject(worker, "dense push of " + std::to_string(header.bytes) + " bytes for a shard of " +
                           std::to_string(floats) + " parameters");
      std::memcpy(delta_.data(), payload.data(), payload.size());
      break;
    case PushFormat::kEncoded: {
      std::fill(delta_.begin(), delta_.end(), 0.0f);
      std::string error;
      if (!codec::accumulate_message(payload, delta_, &error))
        reject(worker, "malformed encoded push: " + error);
      break;
    }
    default:
      reject(worker, "unknown push format " + std::to_string(header.format));
  }
  for (std::size_t i = 0; i < floats; ++i)
    if (!std::isfinite(delta_[i]))
      reject(worker, "non-finite update at shard index " + std::to_string(i));
  if (header.base > version_ && !replayed_age)
    reject(worker, "base version " + std::to_string(header.base) + " is newer than the shard's " +
                       std::to_string(version_));
  // The push's age: the other workers' pushes applied since its base. The worker's own pushes
  // since then are no staleness (its replica holds them), and counting them slowed a worker
  // whose pulls lag by its own updates.
  auto& own = own_versions_[static_cast<std::size_t>(worker)];
  while (!own.empty() && own.front() <= header.base) own.pop_front();
  const std::uint64_t age = replayed_age ? *replayed_age : version_ - header.base - own.size();
  optimizer_->compute_update(delta_, parameters, update_, learning_rate_ * weight_(age));
  prepared_worker_ = worker;
  prepared_seq_ = header.seq;
  return pack_ack(header.seq, age);
}

void ShardUpdater::apply(std::span<float> parameters) {
  GS_CHECK(prepared_worker_ >= 0, "no push prepared");
  nn::apply_update(parameters, update_);
  applied_[static_cast<std::size_t>(prepared_worker_)] = prepared_seq_;
  ++version_;
  own_versions_[static_cast<std::size_t>(prepared_worker_)].push_back(version_);
  prepared_worker_ = -1;
}

void ShardUpdater::take_over(ShardUpdater& old) {
  GS_CHECK(old.shard_ == shard_ && old.applied_.size() == applied_.size(),
           "a shard taken over from another layout");
  optimizer_ = std::move(old.optimizer_);
  applied_ = old.applied_;
  own_versions_ = old.own_versions_;
  version_ = old.version_;
}

ShardSnapshot ShardUpdater::snapshot(std::span<const float> parameters) const {
  ShardSnapshot snapshot{shard_, version_, {parameters.begin(), parameters.end()},
                         capture_worker_state(*optimizer_, 0.0f), applied_, {}};
  for (const auto& own : own_versions_) snapshot.own.emplace_back(own.begin(), own.end());
  return snapshot;
}

void ShardUpdater::restore(const ShardSnapshot& snapshot) {
  GS_CHECK(snapshot.shard == shard_ && snapshot.applied.size() == applied_.size(),
           "a snapshot of another shard or layout");
  // The snapshot of a fresh start has no optimizer state: the server's started from zero too.
  if (!snapshot.optimizer.optimizer_state.empty() &&
      restore_optimizer(snapshot.optimizer, *optimizer_) < optimizer_->state().size())
    throw core::RuntimeError("the snapshot of shard " + std::to_string(shard_) +
                             " holds another server optimizer's state");
  version_ = snapshot.version;
  applied_ = snapshot.applied;
  for (std::size_t w = 0; w < own_versions_.size(); ++w)
    if (w < snapshot.own.size())
      own_versions_[w].assign(snapshot.own[w].begin(), snapshot.own[w].end());
    else
      own_versions_[w].clear();  // the start of a run: none yet
}

void ShardServer::take_over(ShardServer& old) {
  adopt(old.updater_);
  next_worker_ = old.next_worker_;
}

void ShardServer::adopt(ShardUpdater& rebuilt) {
  updater_.take_over(rebuilt);
  publish_carried_state();
}

ShardServer::ShardServer(const DownpourLayout& layout, int shard,
                         const config::ExperimentConfig& config)
    : layout_(layout), updater_(layout, shard, config) {}

std::size_t ShardServer::round_robin(const std::function<bool(int worker)>& try_apply) {
  const int workers = layout_.workers();
  std::size_t applied = 0;
  int last = -1;
  for (int k = 0; k < workers; ++k) {
    const int worker = (next_worker_ + k) % workers;
    if (try_apply(worker)) {
      ++applied;
      last = worker;
    }
  }
  if (last >= 0) next_worker_ = (last + 1) % workers;
  return applied;
}

namespace {

// Serves until the master's Shutdown; returns its exit code.
int serve(runtime::RunContext& context, JobSession& session, ShardServer& server, bool& stop_sent) {
  auto& control = session.control();
  core::Backoff backoff;
  core::Deadline deadline(control.timeout_seconds());
  StopNotice stop_notice(control, *context.job, stop_sent);
  for (;;) {
    bool busy = server.poll() > 0;
    while (try_receive<StateRequest>(control, 0)) {
      // The snapshot holds the optimizer state too: the message's own state stays empty.
      send(control, 0, DownpourState{{}, server.snapshot()});
      busy = true;
    }
    if (try_receive<PeakMemoryRequest>(control, 0)) {
      send(control, 0, DownpourServerEnd{core::peak_resident_bytes(), server.applied_seqs()});
      session.hand_in_results();  // the master asks this once every final model is in
      busy = true;
    }
    stop_notice.check();
    if (auto shutdown = try_receive<Shutdown>(control, 0)) {
      core::log_info("parameter server " + std::to_string(server.shard()) +
                     " done: " + std::to_string(server.parameters().size()) + " parameters, " +
                     std::to_string(server.version()) + " pushes applied");
      flush_at_end(control);
      return shutdown->exit_code;
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

}  // namespace

int run_downpour_server(runtime::RunContext& context, DownpourNetwork& network,
                        std::unique_ptr<ShardServer> server) {
  const bool replacement = server == nullptr;
  bool stop_sent = false;
  bool rebuilding = false;
  return run_with_recovery(
      network.session(), replacement,
      [&] { return serve(context, network.session(), *server, stop_sent); },
      [&] {
        stop_sent = false;  // a stop notice in flight was dropped; the master ignores a second
        if (server) {
          network.rebuild();
          server = network.carry(*server, context.config);
        } else {
          // The master and the workers send what the rebuild needs once, after the repair
          // that replaced the server: another failure during it leaves nothing to go on from.
          if (rebuilding)
            throw core::JobCannotGoOn(
                "another process failed while parameter server " + std::to_string(context.rank) +
                " was being rebuilt; rerun the same command to resume every shard from " +
                runtime::resume_point(context.run_directory));
          rebuilding = true;
          try {
            server = rebuild_lost_shard(context, network);  // on the network the repair made
          } catch (const comm::TransportError&) {
            throw;  // another failure: the next rejoin ends the job (above)
          } catch (const std::exception& error) {
            // Replacing this rank again would replay the same pushes: the master ends the job.
            send(network.control(), 0, DownpourRebuildFailed{error.what()});
            throw core::JobCannotGoOn(error.what());
          }
        }
        network.send_resync(*server);
      },
      RecoveryPause::kNotTraining);
}

}  // namespace gradshare::train

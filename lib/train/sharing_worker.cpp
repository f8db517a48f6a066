// sharing_worker.cpp: a gradient-sharing worker: trains on the partitions the master grants,
// encodes every update against its residual, and keeps applying and relaying its peers' updates.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <memory>
#include <vector>

#include "codec/decoder.h"
#include "codec/encoder.h"
#include "comm/byte_io.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/epoch_plan.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "nn/schedule.h"
#include "train/partition_messages.h"
#include "train/sharing_roles.h"
#include "train/update_exchange.h"
#include "train/worker_report.h"
#include "train/worker_state.h"

namespace gradshare::train {

namespace {

// Largest |sum of updates - (sent quanta + residual)| over the parameters, relative to the
// largest |sum of updates|: 0 up to rounding when nothing was lost. The residual clip is the
// one deliberate loss, so the check is meant for runs with encoding.residual: none.
double conservation_error(const std::vector<double>& update_sum, const std::vector<float>& sent_sum,
                          const codec::Encoder& encoder) {
  const auto residual = encoder.residual();
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < update_sum.size(); ++i) {
    worst = std::max(worst, std::fabs(update_sum[i] - (static_cast<double>(sent_sum[i]) + residual[i])));
    scale = std::max(scale, std::fabs(update_sum[i]));
  }
  const double relative = scale > 0 ? worst / scale : worst;
  core::log_info("conservation check: max |sum(updates) - sent - residual| = " +
                 std::to_string(worst) + " (relative " + std::to_string(relative) + ")");
  return relative;
}

void count_encoding(WorkerReport& report, codec::Encoding encoding) {
  switch (encoding) {
    case codec::Encoding::kSparse: ++report.sparse_messages; break;
    case codec::Encoding::kBitmap: ++report.bitmap_messages; break;
    case codec::Encoding::kCompressed: ++report.compressed_messages; break;
  }
}

}  // namespace

int run_sharing_worker(RunContext& context, comm::DataPlane& plane, comm::ControlPlane& control) {
  const auto& cfg = context.config;
  const auto seed = static_cast<std::uint64_t>(cfg.run.seed);
  nn::Model model = nn::Model::build(cfg.model, seed);
  const std::size_t n = model.parameter_count();
  auto optimizer = nn::Optimizer::create(cfg.optimizer, n);
  codec::Encoder encoder(cfg.encoding, n);
  UpdateExchange exchange(plane, context.rank, context.size, n);
  const auto start = deserialize_start_state(
      control.receive(0, comm::Tag::kParameters, "initial model").payload);
  if (start.resume) {
    GS_CHECK(start.parameters.size() == n, "the master sent a wrong-sized model");
    std::copy(start.parameters.begin(), start.parameters.end(), model.parameters().begin());
    restore_optimizer(start.worker, *optimizer);
    encoder.set_threshold(start.worker.tau);
    if (!start.worker.residual.empty()) {
      GS_CHECK(start.worker.residual.size() == n, "the master sent a wrong-sized residual");
      std::copy(start.worker.residual.begin(), start.worker.residual.end(), encoder.residual().begin());
    }
  }
  // The master asks a live worker for its optimizer state and tau to write checkpoints.
  auto answer_state_requests = [&] {
    while (control.try_receive(comm::Tag::kStateRequest, 0))
      control.send(0, comm::Tag::kStateReply,
                   serialize(capture_worker_state(*optimizer, encoder.threshold(), encoder.residual())));
  };

  const auto& train_set = context.data.train;
  const auto batch_size = static_cast<std::size_t>(cfg.training.batch_size);
  const auto batches_per_epoch = static_cast<std::int64_t>(
      data::EpochPlan(train_set.size(), batch_size, cfg.data.partition_batches, seed, 0, false)
          .batch_count());
  nn::LearningRateSchedule schedule(cfg.optimizer, batches_per_epoch * cfg.training.epochs,
                                    batches_per_epoch);

  // encoding.combine: mean shares update / workers (see the key's help).
  const float update_scale =
      cfg.encoding.combine == "mean" ? 1.0f / static_cast<float>(context.worker_count()) : 1.0f;
  std::vector<float> inputs(batch_size * model.sample_size());
  std::vector<std::int32_t> labels(batch_size);
  std::vector<float> update(n);
  std::vector<std::uint8_t> message;
  core::Rng dropout_rng = core::Rng::derive(seed, /*stream=*/3, static_cast<std::uint64_t>(context.rank));
  std::map<std::int64_t, std::unique_ptr<data::EpochPlan>> plans;

  // encoding.check_conservation: every update summed, and every quantum this worker sent.
  const bool check_conservation = cfg.encoding.check_conservation;
  std::vector<double> update_sum(check_conservation ? n : 0);
  std::vector<float> sent_sum(check_conservation ? n : 0);
  WorkerReport report;
  ExchangeStats reported_exchange;
  std::uint64_t seq = 0;
  std::int64_t steps = 0;
  core::Stopwatch report_clock;
  auto send_report = [&] {
    const auto& now = exchange.stats();
    report.relayed = static_cast<std::int64_t>(now.relayed - reported_exchange.relayed);
    report.duplicates = static_cast<std::int64_t>(now.duplicates - reported_exchange.duplicates);
    report.rejected = static_cast<std::int64_t>(now.rejected - reported_exchange.rejected);
    reported_exchange = now;
    report.seconds = report_clock.seconds();
    report_clock.restart();
    control.send(0, comm::Tag::kMetrics, report.serialize());
    report = WorkerReport{};
  };

  bool finished_previous = false;
  for (;;) {
    const auto next = request_partition(control, finished_previous);
    if (!next) break;
    const PartitionGrant& grant = *next;
    auto& plan = plans[grant.epoch];
    if (!plan) {
      plans.erase(plans.begin(), plans.lower_bound(grant.epoch));  // older epochs are done
      plan = std::make_unique<data::EpochPlan>(train_set.size(), batch_size,
                                               cfg.data.partition_batches, seed, grant.epoch,
                                               cfg.data.shuffle);
    }
    const auto range = plan->partition(static_cast<std::size_t>(grant.partition));
    for (std::size_t b = range.first_batch; b < range.end_batch; ++b) {
      exchange.poll(model.parameters());
      answer_state_requests();
      const auto indices = plan->batch_indices(b);
      data::gather_batch(train_set, indices, inputs.data(), labels.data());
      const auto result = model.train_batch(inputs.data(), labels.data(), indices.size(), dropout_rng);
      const double learning_rate =
          schedule.at(grant.epoch * batches_per_epoch + static_cast<std::int64_t>(b));
      optimizer->compute_update(model.gradients(), model.parameters(), update, learning_rate);
      if (update_scale != 1.0f)
        for (auto& value : update) value *= update_scale;
      ++steps;
      if (check_conservation)
        for (std::size_t i = 0; i < n; ++i) update_sum[i] += update[i];
      if (exchange.can_publish(encoder.max_message_bytes())) {
        const codec::MessageMeta meta{static_cast<std::uint32_t>(context.rank), ++seq,
                                      static_cast<std::uint64_t>(steps),
                                      static_cast<std::uint32_t>(grant.epoch), 0};
        const auto stats = encoder.encode(update, meta, message);
        exchange.publish(message, model.parameters());
        if (check_conservation) {
          std::string error;
          GS_CHECK(codec::accumulate_message(message, sent_sum, &error), error);
        }
        ++report.messages;
        report.bytes += static_cast<std::int64_t>(stats.bytes);
        report.entries += static_cast<std::int64_t>(stats.entries);
        report.sparsity_sum += stats.sparsity;
        report.clipped_mass += stats.clipped_mass;
        if (stats.shake_up) ++report.shake_ups;
        count_encoding(report, stats.encoding);
      } else {
        encoder.accumulate(update);
        ++report.backpressure;
      }
      const float tau = encoder.threshold();
      report.tau_min = report.steps == 0 ? tau : std::min(report.tau_min, tau);
      report.tau_max = report.steps == 0 ? tau : std::max(report.tau_max, tau);
      ++report.steps;
      report.samples += static_cast<std::int64_t>(indices.size());
      report.loss_sum += result.loss;
      report.correct += result.correct;
      if (report.steps >= cfg.logging.every_steps) send_report();
    }
    finished_previous = true;
  }
  send_report();

  // Drain: tell the master how many updates this worker sent, then keep applying and relaying
  // until every replica's updates have arrived here.
  comm::ByteWriter done;
  done.put<std::uint64_t>(seq);
  done.put<double>(check_conservation ? conservation_error(update_sum, sent_sum, encoder) : -1.0);
  control.send(0, comm::Tag::kDone, done.bytes());
  const auto target_message = control.receive(0, comm::Tag::kDrainTarget, "drain target");
  comm::ByteReader target_reader(target_message.payload, "drain target");
  const auto targets = target_reader.get_vector<std::uint64_t>();
  target_reader.expect_end();
  core::Backoff backoff;
  core::Deadline deadline(static_cast<double>(cfg.transport.timeout_ms) / 1000.0);
  auto drained = [&] {
    for (std::size_t origin = 1; origin < targets.size(); ++origin)
      if (exchange.version_vector()[origin] < targets[origin]) return false;
    return !exchange.has_backlog();
  };
  while (!drained()) {
    if (deadline.expired()) {
      std::string missing;
      for (std::size_t origin = 1; origin < targets.size(); ++origin)
        if (exchange.version_vector()[origin] < targets[origin])
          missing += " rank " + std::to_string(origin) + " (have " +
                     std::to_string(exchange.version_vector()[origin]) + " of " +
                     std::to_string(targets[origin]) + ")";
      throw core::RuntimeError("timed out draining updates from" + (missing.empty() ? std::string(" the relay queues") : missing));
    }
    answer_state_requests();
    if (exchange.poll(model.parameters()) > 0) backoff.reset(); else backoff.wait();
  }
  const auto parameters = model.parameters();
  control.send(0, comm::Tag::kDrained,
               comm::ByteWriter().put_vector(std::span<const float>(parameters)).bytes());
  // Keep relaying for the others until the master ends the job.
  std::optional<comm::ControlMessage> shutdown;
  while (!(shutdown = control.try_receive(comm::Tag::kShutdown, 0))) {
    answer_state_requests();
    if (exchange.poll(model.parameters()) > 0) backoff.reset(); else backoff.wait();
  }
  comm::ByteReader shutdown_reader(shutdown->payload, "shutdown");
  const int exit_code = shutdown_reader.get<std::int32_t>();
  core::log_info("worker done: " + std::to_string(steps) + " steps, " + std::to_string(seq) +
                 " updates sent, " + std::to_string(exchange.stats().duplicates) + " duplicates");
  return exit_code;
}

}  // namespace gradshare::train

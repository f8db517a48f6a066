// downpour/worker.cpp: a Downpour worker: trains its replica on the partitions the master
// grants, pushes its accumulated updates to every shard's server every n_push steps and pulls
// every n_pull steps, without ever waiting for another worker. It answers the master's state
// requests (checkpoints) between steps and while it waits at the end.
#include <memory>
#include <vector>

#include "comm/byte_io.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/epoch_plan.h"
#include "kernels/cpu/elementwise.h"
#include "nn/optimizer.h"
#include "nn/schedule.h"
#include "train/checkpointer.h"
#include "train/divergence_guard.h"
#include "train/downpour/link.h"
#include "train/downpour/roles.h"
#include "train/model_file.h"
#include "train/partition_data.h"
#include "train/replica.h"

namespace gradshare::train {

int run_downpour_worker(RunContext& context, nn::Model model, DownpourTransport& transport,
                        comm::ControlChannel& control, const DownpourLayout& layout,
                        const StartState& start) {
  const auto& cfg = context.config;
  const auto seed = static_cast<std::uint64_t>(cfg.run.seed);
  const auto& train_set = context.data.train;
  const auto batch_size = static_cast<std::size_t>(cfg.training.batch_size);
  const auto batches_per_epoch = static_cast<std::int64_t>(
      data::EpochPlan(train_set.size(), batch_size,
                      static_cast<std::size_t>(cfg.data.partition_batches), seed, 0, false)
          .batch_count());
  Replica replica(cfg, std::move(model), batches_per_epoch * cfg.training.epochs,
                  batches_per_epoch, static_cast<std::uint64_t>(context.rank));
  const std::size_t n = replica.parameter_count();
  auto& optimizer = replica.optimizer();
  if (start.resume) restore_optimizer_state(start.worker, optimizer, "the resumed checkpoint");
  const double timeout = control.timeout_seconds();
  StopNotice stop_notice(control);
  auto answer_state_requests = [&] {
    while (try_receive<StateRequest>(control, 0))
      send(control, 0, DownpourState{capture_worker_state(optimizer, 0.0f)});
  };
  // Waits for the master's `tag`, answering its state requests and passing on a stop meanwhile.
  auto await_master = [&](comm::Tag tag, const char* awaited) {
    core::Deadline deadline(timeout);
    core::Backoff backoff;
    for (;;) {
      answer_state_requests();
      stop_notice.check();
      if (auto message = control.try_receive(tag, 0)) return std::move(*message);
      if (deadline.expired())
        throw core::RuntimeError("timed out after " + std::to_string(timeout) +
                                 " s waiting for rank 0: " + awaited);
      backoff.wait();
    }
  };
  const int servers = layout.servers();
  std::vector<std::unique_ptr<ShardLink>> links;
  for (int s = 0; s < servers; ++s)
    links.push_back(transport.link(s, layout.worker_index(context.rank), cfg));

  std::vector<float> accumulator(n, 0.0f);  // updates made locally and not yet pushed
  PartitionData partitions(train_set, batch_size, static_cast<std::size_t>(cfg.data.partition_batches),
                           seed, cfg.data.shuffle);

  std::vector<std::int64_t> since_push(links.size(), 0), since_pull(links.size(), 0);
  std::vector<bool> pull_started(links.size(), false);
  DownpourReport report;
  core::Stopwatch report_clock;
  std::int64_t steps = 0;
  auto parameters = replica.parameters();
  auto slice = [&](std::span<float> values, const ShardLink& link) {
    return values.subspan(link.range().begin, link.range().size());
  };
  // The local shard becomes the server's, plus what this worker has not yet sent: its own
  // progress since the last push is kept, not thrown away by the pull.
  auto install = [&](ShardLink& link, std::span<const float> shard) {
    auto local = slice(parameters, link);
    const auto pending = slice(accumulator, link);
    const auto residual = link.residual();
    for (std::size_t i = 0; i < local.size(); ++i)
      local[i] = shard[i] - pending[i] - (residual.empty() ? 0.0f : residual[i]);
  };
  auto finish_pulls = [&] {
    for (std::size_t s = 0; s < links.size(); ++s) {
      if (!pull_started[s]) continue;
      install(*links[s], links[s]->finish_pull(report, timeout));
      pull_started[s] = false;
    }
  };
  auto wait_for_acks = [&] {
    core::Deadline deadline(timeout);
    core::Backoff backoff;
    for (;;) {
      bool outstanding = false;
      for (auto& link : links) {
        link->advance(report);
        outstanding = outstanding || link->push_outstanding();
      }
      if (!outstanding) return;
      if (deadline.expired())
        throw core::RuntimeError("timed out after " + std::to_string(timeout) +
                                 " s waiting for the parameter servers to apply this worker's "
                                 "pushes");
      backoff.wait();
    }
  };

  bool finished_previous = false;
  DivergenceGuard divergence(cfg.training);
  bool diverged = false;  // then no more steps: the end protocol runs, the master saves nothing
  while (!diverged) {
    const auto assignment = request_partition(control, finished_previous);
    const auto& grant = assignment.grant;
    if (!grant) break;
    partitions.read_ahead(*grant, assignment.read_ahead);
    const auto& plan = partitions.plan(grant->epoch);
    const auto range = plan.partition(static_cast<std::size_t>(grant->partition));
    for (std::size_t b = range.first_batch; b < range.end_batch; ++b) {
      // What the previous step left in flight completes here, after it overlapped that step.
      for (auto& link : links) link->advance(report);
      finish_pulls();
      answer_state_requests();
      stop_notice.check();

      const auto result = replica.gradient(train_set, plan.batch_indices(b));
      if (auto reason = divergence.check(steps + 1, result.loss)) {
        core::log_error("diverged: " + *reason);
        send(control, 0, Diverged{steps + 1, *reason});
        diverged = true;
        break;
      }
      replica.compute_update(grant->epoch * batches_per_epoch + static_cast<std::int64_t>(b));
      replica.apply_update();
      kernels::cpu::axpy(1.0f, replica.update().data(), accumulator.data(), n);
      ++steps;
      ++report.steps;
      report.samples += result.samples;
      report.loss_sum += result.loss;
      report.correct += result.correct;

      for (std::size_t s = 0; s < links.size(); ++s) {
        auto& link = *links[s];
        if (++since_push[s] >= cfg.downpour.n_push) {
          if (!link.push_outstanding()) {
            link.push(slice(accumulator, link), static_cast<std::uint64_t>(steps), report);
            since_push[s] = 0;
          } else {
            ++report.busy_slots;  // the server has not applied the previous push yet
          }
        }
        // A pull waits until the server has applied this worker's last push, so that the
        // pulled shard minus the accumulator is exactly the server's view plus this worker's
        // unsent progress (a pull racing an unapplied push would drop that push locally).
        if (++since_pull[s] >= cfg.downpour.n_pull && !link.push_outstanding()) {
          link.start_pull(report);
          pull_started[s] = true;
          since_pull[s] = 0;
        }
      }
      if (report.steps >= cfg.logging.every_steps) {
        report.seconds = report_clock.seconds();
        report_clock.restart();
        send(control, 0, report);
        report = DownpourReport{};
      }
    }
    finished_previous = true;
  }

  // The last push: everything this worker computed reaches the servers, then the final pull.
  finish_pulls();
  wait_for_acks();
  for (auto& link : links) link->push_all(slice(accumulator, *link), report);
  wait_for_acks();
  report.seconds = report_clock.seconds();
  send(control, 0, DownpourDone{report, core::peak_resident_bytes()});
  report = DownpourReport{};
  await_master(DownpourFinalPull::kTag, "the master's signal for the final pull");
  for (auto& link : links) {
    link->start_pull(report);
    const auto shard = link->finish_pull(report, timeout);
    std::copy(shard.begin(), shard.end(), slice(parameters, *link).begin());
  }
  send(control, 0, DownpourFinalModel{{parameters.begin(), parameters.end()}});
  const int code = decode<Shutdown>(await_master(Shutdown::kTag, "shutdown")).exit_code;
  control.flush();
  core::log_info("worker done: " + std::to_string(steps) + " steps" +
                 (code == core::kExitRequeue ? " (stopped for a requeue)" : ""));
  return code;
}

}  // namespace gradshare::train

// downpour/worker.cpp: a Downpour worker: trains its replica on the partitions the master
// grants, pushes its accumulated updates to every shard's server every n_push steps and pulls
// every n_pull steps, without ever waiting for another worker. It answers the master's state
// requests (checkpoints) between steps and while it waits at the end. After a process failure
// it rejoins (downpour/network.h): links on the new transport, its pushes since the snapshot
// to a lost server's replacement (shard_rebuild.h), its push in flight sent again if the
// server lacks it, and the end of the run taken up where the master stands.
#include <algorithm>
#include <memory>
#include <optional>
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
#include "runtime/checkpointer.h"
#include "train/async_worker.h"
#include "train/downpour/link.h"
#include "train/downpour/network.h"
#include "train/group_recovery.h"
#include "train/downpour/roles.h"
#include "train/downpour/shard_rebuild.h"
#include "train/downpour/takeover.h"
#include "runtime/model_file.h"

namespace gradshare::train {

namespace {

class DownpourWorker : private AsyncWorker {
 public:
  DownpourWorker(runtime::RunContext& context, nn::Model model, DownpourNetwork& network,
                 const StartState& start, bool replacement)
      : AsyncWorker(context, worker_optimizer_config(context.config, network.layout().workers()),
                    std::move(model), replacement),
        network_(network),
        timeout_(network.control().timeout_seconds()),
        accumulator_(n_, 0.0f),
        replacement_(replacement),
        rebuild_on_rejoin_(!replacement) {
    if (start.resume)
      restore_optimizer_state(start.worker, replica_.optimizer(), "the resumed checkpoint");
    relink();
    since_push_.assign(links_.size(), 0);
    since_pull_.assign(links_.size(), 0);
    pull_started_.assign(links_.size(), false);
  }

  int run() {
    try {
      return run_with_recovery(network_.session(), replacement_, [this] { return train(); },
                               [this] { rejoin(); });
    } catch (const BecameMaster&) {
      // The master's role takes this worker's pushes to shard 0 and what it knows done; the
      // links stay allocated (a transfer the failure interrupted may still target them).
      DownpourHandover handover{network_.session().last_repair().former_rank,
                                links_[0]->push_log(), done_partitions_};
      network_.keep_alive(std::move(links_));
      network_.keep_alive(std::move(retired_links_));
      throw DownpourBecameMaster(std::move(handover));
    }
  }

 private:
  // Where this worker is in the end of the run.
  enum class Phase { kTraining, kDone, kModelSent };

  comm::ControlChannel& control() { return network_.control(); }

  int train() {
    if (phase_ == Phase::kTraining) {
      while (!diverged_) {
        const bool finished = finished_previous_;
        finished_previous_ = false;  // a repair during the request hands the partition out again
        const auto assignment = request_partition(control(), finished);
        if (!assignment.grant) break;
        train_partition(*assignment.grant, assignment.read_ahead);
        finished_previous_ = true;
        if (!diverged_) done_partitions_.push_back(*assignment.grant);
      }
      push_everything();
    }
    if (phase_ == Phase::kDone) final_pull();
    return await_shutdown();
  }

  // Links to every shard on the network's transport as it is now, continuing the old ones.
  void relink() {
    std::vector<std::unique_ptr<ShardLink>> links;
    const auto& layout = network_.layout();
    for (int s = 0; s < layout.servers(); ++s) {
      links.push_back(network_.transport().link(s, layout.worker_index(context_.rank), cfg_));
      if (static_cast<std::size_t>(s) < links_.size()) links.back()->take_over(*links_[s]);
    }
    // Kept, never freed: a Get or Put the failure interrupted may still target their buffers.
    for (auto& old : links_) retired_links_.push_back(std::move(old));
    links_.swap(links);
    // Shard 0 lives with the master: a new master rebuilds it from these (downpour/takeover.h).
    if (network_.session().fault_tolerant()) links_[0]->keep_pushes(cfg_, layout);
  }

  // After a repair (or as a replacement): new links, each server's word on this worker's
  // pushes, the master's on what it has; a replacement then pulls the model.
  void rejoin() {
    injector_.at_recovery();
    if (rebuild_on_rejoin_) {
      network_.rebuild();
      relink();
    }
    rebuild_on_rejoin_ = true;
    std::fill(pull_started_.begin(), pull_started_.end(), false);  // dropped with the old links
    finished_previous_ = false;  // the master hands every partition in flight out again
    stop_sent_ = false;  // a stop notice in flight was dropped; the master ignores a second one
    snapshots_wanted_ = false;  // so is a wish for snapshots
    if (divergence_report_) send(control(), 0, *divergence_report_);  // it may have been dropped
    // A lost server's replacement rebuilds its shard from what each worker kept
    // (shard_rebuild.h).
    // A replacement of this repair has posted nothing and knows nothing yet: the survivors
    // alone tell a lost server's replacement, or a new master (downpour/takeover.h), what they
    // kept and know.
    const auto& repair = network_.session().last_repair();
    if (!repair.was_replaced(context_.rank)) {
      for (int rank : repair.replaced)
        if (network_.layout().is_server(rank))
          send(control(), rank, links_[static_cast<std::size_t>(rank)]->push_log());
      if (repair.was_replaced(0)) send(control(), 0, DownpourTakeoverStatus{done_partitions_});
    }
    for (int s = 0; s < network_.layout().servers(); ++s)
      links_[static_cast<std::size_t>(s)]->resync(
          receive<DownpourResync>(control(), s, "the server's resync after a repair").applied);
    const auto resume =
        receive<DownpourResume>(control(), 0, "the master's resume after a repair");
    if (!resume.done.empty()) done_partitions_ = resume.done;  // a replacement's
    if (phase_ == Phase::kModelSent && !resume.has_final_model) phase_ = Phase::kDone;
    if (phase_ == Phase::kDone && !resume.has_done) phase_ = Phase::kTraining;
    if (replacement_ && steps_ == 0) pull_model();
  }

  // Every shard as the servers hold it (no push of this worker is in flight).
  void pull_model() {
    auto parameters = replica_.parameters();
    for (auto& link : links_) {
      link->start_pull(report_);
      const auto shard = link->finish_pull(report_, timeout_, [this] { answer_state_requests(); });
      std::copy(shard.begin(), shard.end(), slice(parameters, *link).begin());
    }
  }

  std::span<float> slice(std::span<float> values, const ShardLink& link) {
    return values.subspan(link.range().begin, link.range().size());
  }

  void train_partition(const runtime::PartitionGrant& grant,
                       std::span<const runtime::PartitionGrant> read_ahead) {
    const auto& plan = open_partition(grant, read_ahead);
    const auto range = plan.partition(static_cast<std::size_t>(grant.partition));
    for (std::size_t b = range.first_batch; b < range.end_batch && !diverged_; ++b) {
      // What the previous step left in flight completes here, after it overlapped that step.
      for (auto& link : links_) link->advance(report_);
      finish_pulls();
      answer_state_requests();
      StopNotice(control(), *context_.job, stop_sent_).check();
      step(plan.batch_indices(b), schedule_step(grant, b));
    }
  }

  void step(std::span<const std::uint32_t> indices, std::int64_t schedule_step) {
    injector_.at_step(steps_ + 1);
    const auto result = replica_.gradient(context_.data.train, indices);
    if (auto diverged = check_divergence(steps_ + 1, result.loss)) {
      divergence_report_ = std::move(diverged);
      send(control(), 0, *divergence_report_);  // no more steps: the end protocol runs
      return;
    }
    replica_.compute_update(schedule_step);
    epochs_done_ = static_cast<double>(schedule_step) / static_cast<double>(batches_per_epoch_);
    replica_.apply_update();
    kernels::cpu::axpy(1.0f, replica_.update().data(), accumulator_.data(), n_);
    ++steps_;
    unpushed_ = true;
    report_.count(result);
    for (std::size_t s = 0; s < links_.size(); ++s) exchange(s);
    want_snapshots_if_logs_fill();
    if (report_.steps >= cfg_.logging.every_steps) {
      report_.seconds = report_clock_.seconds();
      report_clock_.restart();
      send(control(), 0, report_);
      report_ = DownpourReport{};
    }
  }

  // Pushes and pulls of shard s after a step. A pull waits until the server has applied this
  // worker's last push, so that the pulled shard minus the accumulator is exactly the server's
  // view plus this worker's unsent progress (a pull racing an unapplied push would drop that
  // push locally); a push waits for a pull in flight for the same reason. A pull that was due at
  // an earlier step goes before a push: pushed first at every step (n_push 1), no pull ever
  // found the link free.
  void exchange(std::size_t s) {
    auto& link = *links_[s];
    const bool pull_overdue = ++since_pull_[s] > cfg_.downpour.n_pull;
    if (pull_overdue && !link.push_outstanding()) start_pull(s);
    if (++since_push_[s] >= cfg_.downpour.n_push) {
      if (!link.push_outstanding() && !pull_started_[s]) {
        link.push(slice(accumulator_, link), static_cast<std::uint64_t>(steps_), epochs_done_,
                  report_);
        since_push_[s] = 0;
      } else {
        ++report_.busy_slots;
      }
    }
    if (!pull_started_[s] && since_pull_[s] >= cfg_.downpour.n_pull && !link.push_outstanding())
      start_pull(s);
  }

  void start_pull(std::size_t s) {
    links_[s]->start_pull(report_);
    pull_started_[s] = true;
    since_pull_[s] = 0;
  }

  // Asks the master once for new snapshots while a shard's log fills half its budget.
  void want_snapshots_if_logs_fill() {
    if (snapshots_wanted_) return;
    for (const auto& link : links_)
      if (link->log_half_full()) {
        send(control(), 0, DownpourSnapshotWanted{});
        snapshots_wanted_ = true;
        return;
      }
  }

  // The local shard becomes the server's, plus what this worker has not yet sent: its own
  // progress since the last push is kept, not thrown away by the pull.
  void install(ShardLink& link, std::span<const float> shard) {
    auto local = slice(replica_.parameters(), link);
    const auto pending = slice(accumulator_, link);
    const auto residual = link.residual();
    for (std::size_t i = 0; i < local.size(); ++i)
      local[i] = shard[i] - pending[i] - (residual.empty() ? 0.0f : residual[i]);
  }

  void finish_pulls() {
    for (std::size_t s = 0; s < links_.size(); ++s) {
      if (!pull_started_[s]) continue;
      install(*links_[s],
              links_[s]->finish_pull(report_, timeout_, [this] { answer_state_requests(); }));
      pull_started_[s] = false;
    }
  }

  void wait_for_acks() {
    core::Deadline deadline(timeout_);
    core::Backoff backoff;
    for (;;) {
      bool outstanding = false;
      for (auto& link : links_) {
        link->advance(report_);
        outstanding = outstanding || link->push_outstanding();
      }
      if (!outstanding) return;
      answer_state_requests();  // (a process failure meanwhile shows here)
      if (deadline.expired())
        throw core::RuntimeError("timed out after " + std::to_string(timeout_) +
                                 " s waiting for the parameter servers to apply this worker's "
                                 "pushes");
      backoff.wait();
    }
  }

  // The master's state requests (a checkpoint), and its word on what the shards' snapshots
  // hold, which this worker need not keep any more.
  void answer_state_requests() {
    while (try_receive<StateRequest>(control(), 0))
      send(control(), 0, DownpourState{capture_worker_state(replica_.optimizer(), 0.0f), {}});
    while (auto taken = try_receive<DownpourSnapshotTaken>(control(), 0)) {
      for (std::size_t s = 0; s < links_.size() && s < taken->held.size(); ++s)
        links_[s]->snapshot_holds(taken->held[s]);
      snapshots_wanted_ = false;
    }
  }

  // Waits for the master's `tag`, answering its state requests and passing on a stop meanwhile.
  comm::ControlMessage await_master(comm::Tag tag, const char* awaited) {
    core::Deadline deadline(timeout_);
    core::Backoff backoff;
    for (;;) {
      answer_state_requests();
      StopNotice(control(), *context_.job, stop_sent_).check();
      if (auto message = control().try_receive(tag, 0)) return std::move(*message);
      if (deadline.expired())
        throw core::RuntimeError("timed out after " + std::to_string(timeout_) +
                                 " s waiting for rank 0: " + awaited);
      backoff.wait();
    }
  }

  // The last push: everything this worker computed reaches the servers.
  void push_everything() {
    finish_pulls();
    wait_for_acks();
    if (unpushed_) {
      for (auto& link : links_) link->push_all(slice(accumulator_, *link), report_);
      wait_for_acks();
      unpushed_ = false;
    }
    report_.seconds = report_clock_.seconds();
    send(control(), 0, DownpourDone{report_, core::peak_resident_bytes()});
    report_ = DownpourReport{};
    phase_ = Phase::kDone;
  }

  // Once every worker's last push is applied, the servers' model: every worker ends with it.
  void final_pull() {
    await_master(DownpourFinalPull::kTag, "the master's signal for the final pull");
    pull_model();
    std::vector<std::uint64_t> pushed;
    for (const auto& link : links_) pushed.push_back(link->posted());
    send(control(), 0, DownpourFinalModel{replica_.copy_parameters(), pushed});
    phase_ = Phase::kModelSent;
  }

  int await_shutdown() {
    network_.session().hand_in_results();  // the final model is with the master
    injector_.at_hand_in();
    const int code = decode<Shutdown>(await_master(Shutdown::kTag, "shutdown")).exit_code;
    flush_at_end(control());
    core::log_info("worker done: " + std::to_string(steps_) + " steps" +
                   replica_.clipping_summary() +
                   (code == core::kExitRequeue ? " (stopped for a requeue)" : ""));
    return code;
  }

  DownpourNetwork& network_;
  double epochs_done_ = 0.0;  // training progress at the last step (the push encoder's warm-up)
  double timeout_;
  bool stop_sent_ = false;  // this rank's stop signal passed on to the master
  std::vector<std::unique_ptr<ShardLink>> links_;
  std::vector<std::unique_ptr<ShardLink>> retired_links_;  // from transports a repair replaced
  std::vector<float> accumulator_;  // updates made locally and not yet pushed
  std::vector<std::int64_t> since_push_, since_pull_;
  std::vector<bool> pull_started_;
  DownpourReport report_;
  core::Stopwatch report_clock_;
  std::int64_t steps_ = 0;
  std::optional<Diverged> divergence_report_;  // sent to the master (again after a repair)
  bool replacement_;
  bool rebuild_on_rejoin_;  // false for a replacement's first rejoin: its network is new
  Phase phase_ = Phase::kTraining;
  bool finished_previous_ = false;  // the partition granted last is trained
  bool unpushed_ = false;           // steps taken since the last push of everything
  bool snapshots_wanted_ = false;   // DownpourSnapshotWanted sent, no snapshot taken since
};

}  // namespace

int run_downpour_worker(runtime::RunContext& context, nn::Model model, DownpourNetwork& network,
                        const StartState& start, bool replacement) {
  return DownpourWorker(context, std::move(model), network, start, replacement).run();
}

}  // namespace gradshare::train

// downpour/master.cpp: the Downpour master (rank 0): serves shard 0, hands out partitions,
// aggregates the workers' figures, evaluates the servers' model at the end of every epoch,
// writes checkpoints (downpour/checkpoint.h) and keeps the other shards' snapshots that come
// with them (downpour/shard_rebuild.h), stops the job on a signal, and at the end checks
// that every worker's final pull returned exactly the servers' parameters. Shard 0 is served
// wherever the master waits: between messages, while it reads the other shards, and while it
// evaluates or writes a checkpoint (on a second thread then).
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "ckpt/checkpoint.h"
#include "core/errors.h"
#include "core/log.h"
#include "data/epoch_plan.h"
#include "train/downpour/network.h"
#include "train/group_recovery.h"
#include "train/downpour/checkpoint.h"
#include "train/downpour/end_of_run.h"
#include "train/downpour/master_progress.h"
#include "train/downpour/roles.h"
#include "train/downpour/shard_rebuild.h"
#include "train/downpour/shard_snapshots.h"
#include "train/downpour/state_requests.h"
#include "train/downpour/shard_zero_file.h"
#include "train/downpour/takeover.h"
#include "train/master_base.h"
#include "train/master_takeover.h"
#include "runtime/model_file.h"
#include "runtime/partition_data.h"
#include "runtime/poll_during.h"
#include "runtime/partition_scheduler.h"
#include "train/worker_state.h"

namespace gradshare::train {

namespace {

class DownpourMaster : public MasterBase {
 public:
  // Starts at `position` and `step` (a resumed checkpoint's, or a takeover's); `model` holds
  // the servers' parameters at each read.
  DownpourMaster(runtime::RunContext& context, nn::Model model, DownpourNetwork& network,
                 std::unique_ptr<ShardServer> server, const runtime::DataPosition& position,
                 std::int64_t step, ShardSnapshots snapshots)
      : MasterBase(context, network.session(), std::move(model)),
        network_(network),
        layout_(network.layout()),
        server_(std::move(server)),
        shape_(runtime::epoch_shape(cfg_, context.data.train)),
        scheduler_(cfg_.training.epochs, static_cast<std::int64_t>(shape_.partition_count()),
                   position, shape_.partition_sizes(), cfg_.data.prefetch_partitions),
        progress_(context, static_cast<std::int64_t>(shape_.batch_count()), layout_.workers(),
                  step),
        requests_(network),
        recovery_(context, network.session()),
        snapshots_(std::move(snapshots)) {
    checkpointer_.mark_written(step);
    log_setup();
  }

  // A new master (downpour/takeover.h), shard 0 rebuilt and the schedule set: the run so far
  // from metrics.jsonl, every worker's resync and resume, and the other servers' snapshots
  // asked for at once.
  void resume_takeover(const RunSoFar& so_far) {
    reporter_.continue_from(so_far.wall_seconds, so_far.stopped_early);
    snapshots_wanted_ = true;
    network_.send_resync(*server_);
    send_resumes(network_.session().last_repair());
    recovery_.record_takeover(network_.session().last_repair(),
                              "; shard 0 rebuilt from its newest snapshot in the run directory and "
                              "the pushes the workers kept since (every push applied once, by "
                              "seq); the partitions in flight are trained again");
  }

  void on_stop_signal() override { request_stop(kFinishPartitionsInFlight); }

  std::optional<int> handle(const comm::ControlMessage& message) override {
    const int worker = message.source;
    switch (message.tag) {
      case PartitionRequest::kTag:
        if (decode<PartitionRequest>(message).finished_previous) scheduler_.complete(worker);
        send(control(), worker,
             PartitionGrantReply{stopping_early() ? runtime::PartitionAssignment{}
                                                  : scheduler_.assign(worker)});
        break;
      case DownpourState::kTag:
        if (requests_.take(message)) {
          const bool servers_only = requests_.servers_only();
          const auto replies = requests_.collect();
          if (servers_only) keep_snapshots(replies); else write_checkpoint(replies);
        }
        break;
      case DownpourSnapshotWanted::kTag:
        snapshots_wanted_ = true;
        break;
      case DownpourRebuildFailed::kTag:
        throw core::JobCannotGoOn(decode<DownpourRebuildFailed>(message).why +
                                  "; rerun the same "
                                  "command to resume every shard from " +
                                  runtime::resume_point(context_.run_directory));
      case Diverged::kTag:
        note_divergence(worker, decode<Diverged>(message));
        break;
      case Shutdown::kTag:  // a stop signal arrived at another rank
        request_stop(kFinishPartitionsInFlight,
                     "rank " + std::to_string(worker) + " received a stop signal (exit code " +
                         std::to_string(decode<Shutdown>(message).exit_code) + " asked)");
        break;
      case DownpourReport::kTag:
        progress_.add(decode<DownpourReport>(message));
        break;
      case DownpourDone::kTag: {
        const auto worker_done = decode<DownpourDone>(message);
        progress_.add(worker_done.report);
        peak_memory_.add(worker, worker_done.peak_bytes);
        done_.insert(worker);
        break;
      }
      case DownpourFinalModel::kTag:
        drained_[worker] = decode<DownpourFinalModel>(message);
        break;
      default:
        unexpected_message(message);
    }
    return std::nullopt;
  }

  // Serves shard 0; evaluates finished epochs, asks for due checkpoints, logs progress, and
  // once every worker's last push is in, signals the final pull.
  bool poll() override {
    const bool busy = server_->poll() > 0;
    const auto live = network_.live_workers();
    const bool all_done = nothing_to_train() && std::all_of(live.begin(), live.end(), [&](int w) {
                            return done_.count(w) > 0;
                          });
    bool checkpoint_due =
        !stopping_ && !diverged_ && !all_done && checkpointer_.due(progress_.step());
    for (const auto epoch : scheduler_.take_completed_epochs()) {
      read_servers();
      const auto minibatches = scheduler_.minibatches_in(epoch);
      runtime::poll_during(
          [&] { reporter_.end_of_epoch(model_, epoch + 1, progress_.step(), minibatches); },
          [&] { return server_->poll(); });
      checkpoint_due = checkpoint_due || (checkpointer_.at_epoch_end() && !stopping_ &&
                                          !diverged_ && epoch + 1 < cfg_.training.epochs);
    }
    if (!requests_.outstanding()) {
      if (checkpoint_due) {
        requests_.request();
      } else if (snapshots_wanted_ && !all_done) {
        requests_.request(/*servers_only=*/true);
        if (layout_.servers() == 1) keep_snapshots(requests_.collect());  // shard 0's alone
      }
    }
    progress_.maybe_log();
    if (all_done) {
      // Every worker's last push is applied on every shard: the servers are quiet from here on.
      for (int w : live)
        if (!drained_.count(w) && signalled_.insert(w).second)
          send(control(), w, DownpourFinalPull{});
    }
    return busy;
  }

  std::optional<int> finished() override {
    for (int w : network_.live_workers())
      if (!drained_.count(w)) return std::nullopt;
    EndState end;
    try {
      end = gather_end();
    } catch (const comm::TransportError& error) {
      if (!recover(error)) throw;
      return std::nullopt;  // the replacement trains to the end too
    }
    return finish(end);
  }

  std::string awaited() const override {
    return "a push or a message from any worker (" + std::to_string(done_.size()) + " of " +
           std::to_string(network_.live_workers().size()) + " finished, " +
           std::to_string(drained_.size()) + " pulled)";
  }

  // A process failed: under ULFM the job is repaired (downpour/network.h) and goes on.
  bool recover(const comm::TransportError& error) override {
    rebuilt_.clear();
    if (!recovery_.repair(error, [this] { resume_after_repair(); })) return false;
    stop_if_failure_aborts(
        "the workers push what they hold, then the checkpoint; exiting with the requeue code");
    recovery_.record(rebuilt_.empty()
                         ? "the servers' shards as they were (every push applied once, by seq); "
                           "the partitions in flight are trained again; a lost worker's updates "
                           "not yet pushed are lost with it (under n_push steps' worth)"
                         : "the servers' shards as they were, parameter server " + rebuilt_ +
                               " rebuilt from the master's newest snapshot of its shard and "
                               "the pushes the workers kept since (every push applied once, by "
                               "seq); the partitions in flight are trained again");
    return true;
  }

  // After each repair round (again when another process fails meanwhile): shard 0 onto the new
  // transport, the partitions in flight handed out again, and every live worker's resync and
  // resume (what the master has from it).
  void resume_after_repair() {
    network_.rebuild();
    server_ = network_.carry(*server_, cfg_);
    // A lost server's replacement rebuilds its shard from the newest snapshot
    // (shard_rebuild.h).
    for (int rank : snapshots_.send_to_replacements(network_.session().last_repair().replaced,
                                                    control()))
      rebuilt_ += (rebuilt_.empty() ? "" : ", ") + std::to_string(rank);
    if (network_.live_workers().empty())
      throw core::RuntimeError("every Downpour worker was lost; rerun the same command to resume "
                               "from the newest checkpoint");
    requests_.cancel();  // the states asked for are asked again when the next one is due
    // A dead worker's partition, and those whose request or grant the repair may have dropped.
    for (int w = 0; w < layout_.workers(); ++w) scheduler_.requeue_worker(layout_.worker_rank(w));
    const auto& record = recovery_.current();
    for (const auto& ranks : {record.lost, record.replaced})
      for (int rank : ranks) {
        done_.erase(rank);
        drained_.erase(rank);
      }
    // Workers that had finished take up training again when a partition came back (a shrink
    // after the others found nothing left to train).
    if (!nothing_to_train()) done_.clear();
    signalled_.clear();  // a final pull signal in flight was dropped: sent again to who lacks it
    network_.send_resync(*server_);
    send_resumes(network_.session().last_repair());
  }

  // Every live worker: what the master has from it; a replacement also every partition done.
  void send_resumes(const RepairOutcome& repair) {
    const auto done = scheduler_.done_partitions();
    for (int w : network_.live_workers()) {
      send(control(), w,
           DownpourResume{done_.count(w) > 0, drained_.count(w) > 0,
                          repair.was_replaced(w) ? done : std::vector<runtime::PartitionGrant>{}});
    }
  }

  // No partition is handed out any more (a stop, a divergence, early stopping).
  bool stopping_early() const { return stopping_ || diverged_ || reporter_.stop_early(); }
  // Nothing is left to hand out: every partition went to a worker (a live worker's
  // reservations are handed to it at its next request), or the run stops early.
  bool nothing_to_train() const { return stopping_early() || scheduler_.all_granted(); }

 private:
  // What the end of the run needs from the other ranks, gathered before anything is written
  // (a failure meanwhile is repaired and the run goes on).
  struct EndState {
    std::uint64_t versions = 0;                          // pushes applied over all shards
    std::vector<std::vector<std::uint64_t>> applied;     // per shard, per worker: last seq
    std::map<int, std::int64_t> server_peaks;            // servers 1..K-1: peak memory
    std::optional<std::map<int, DownpourState>> states;  // for the stop's or a due checkpoint
  };

  EndState gather_end() {
    EndState end;
    end.versions = read_servers();
    end.applied.push_back(server_->applied_seqs());
    // The other servers are quiet now, and answer before their shutdown.
    for (int s = 1; s < layout_.servers(); ++s) send(control(), s, PeakMemoryRequest{});
    for (int s = 1; s < layout_.servers(); ++s) {
      auto reply = receive<DownpourServerEnd>(control(), s, "its peak memory and applied seqs");
      end.server_peaks[s] = reply.peak_bytes;
      end.applied.push_back(std::move(reply.applied));
    }
    // A stop checkpoints at the end: every worker's updates are applied and the servers are
    // quiet. An outstanding request is completed too, so that no reply is left unreceived; a
    // diverged model is never saved.
    if (requests_.outstanding() && requests_.servers_only()) requests_.collect();  // not needed now
    if (requests_.outstanding() || (stopping_ && !diverged_)) end.states = requests_.collect();
    return end;
  }

  void log_setup() {
    runtime::log_model(model_);
    core::log_info(downpour_setup_line(cfg_, layout_));
    if (const auto momentum = worker_momentum_line(cfg_, layout_.workers()); !momentum.empty())
      core::log_info(momentum);
  }

  // The servers' model: shard 0 here, the others read through the transport (serving shard 0
  // while it waits). Returns the sum of the shard versions (pushes applied over all shards).
  std::uint64_t read_servers() {
    auto parameters = model_.parameters();
    const auto own = server_->parameters();
    std::copy(own.begin(), own.end(),
              parameters.begin() + static_cast<std::ptrdiff_t>(layout_.shard(0).begin));
    std::uint64_t versions = server_->version();
    for (int s = 1; s < layout_.servers(); ++s)
      versions += network_.transport().read_shard(
          s, parameters.subspan(layout_.shard(s).begin, layout_.shard(s).size()),
          control().timeout_seconds(), [&] {
            server_->poll();
            control().check_failures();  // a server in a repair never answers
          });
    return versions;
  }

  void write_checkpoint(const std::map<int, DownpourState>& replies) {
    const ShardSnapshot own = server_->snapshot();
    save_checkpoint(replies, own);
    keep_snapshots(replies, own);
  }

  // The servers' shards as they answered, and shard 0's: what a lost one is rebuilt from.
  void keep_snapshots(const std::map<int, DownpourState>& replies,
                      std::optional<ShardSnapshot> own = std::nullopt) {
    if (!own && snapshots_.keeps_shard_zero()) own = server_->snapshot();
    snapshots_.keep(replies, own, control(), network_.live_workers());
    snapshots_wanted_ = false;
  }

  // The checkpoint of the servers' model, with every rank's state; `own`: shard 0's snapshot.
  void save_checkpoint(const std::map<int, DownpourState>& replies, const ShardSnapshot& own) {
    auto c = runtime::make_checkpoint(context_, model_, nullptr, progress_.step(),
                                      scheduler_.position());
    put_rank_states(c, own, replies, layout_, network_.live_workers().at(0));
    runtime::poll_during([&] { checkpointer_.write(c); }, [&] { return server_->poll(); });
  }

  // Every worker pulled at the end and `end` is gathered: the consistency checks, the summary,
  // the servers' peak memory, then the stop's checkpoint or model.h5, and every rank's shutdown.
  int finish(const EndState& end) {
    const Comparison worst = least_alike(drained_, model_.parameters());
    for (const auto& [server, bytes] : end.server_peaks) peak_memory_.add(server, bytes);
    const int mismatched = mismatched_slots(drained_, end.applied, layout_);
    summarize_downpour(context_, progress_.total(), layout_, model_.parameter_count(),
                       {end.versions, static_cast<int>(drained_.size()), worst, mismatched});
    peak_memory_.summarize(context_);
    if (end.states && !diverged_) save_checkpoint(*end.states, server_->snapshot());
    snapshots_.remove_shard_zero_file();  // a rerun resumes from a checkpoint
    const int code = exit_code();
    if (code == core::kExitOk)
      write_final_model(context_, model_, progress_.step(), scheduler_.position(), reporter_,
                        scheduler_.minibatches_in(cfg_.training.epochs - 1));
    end_job(network_.live_ranks(), code);
    recovery_.summarize();
    if (!worst.identical && !diverged_)  // (NaNs compare unequal)
      throw core::RuntimeError("downpour: a worker's final parameters differ from the servers'");
    if (mismatched > 0)
      throw core::RuntimeError("downpour: a server applied a worker's pushes other than exactly "
                               "once (the lines above name them)");
    return code;
  }

  DownpourNetwork& network_;
  const DownpourLayout& layout_;
  std::unique_ptr<ShardServer> server_;  // shard 0 (a repair moves it onto the new transport)
  data::EpochPlan shape_;
  runtime::PartitionScheduler scheduler_;
  DownpourProgress progress_;
  StateRequests requests_;
  GroupRecovery recovery_;
  std::set<int> done_;                         // workers whose DownpourDone is in
  std::set<int> signalled_;                    // workers sent the final pull signal
  std::map<int, DownpourFinalModel> drained_;  // their final models
  ShardSnapshots snapshots_;
  std::string rebuilt_;  // the servers the recovery under way rebuilds
  bool snapshots_wanted_ = false;  // a worker's log for a shard is half full
};

// Under fault tolerance shard 0's snapshots go to the run directory (shard_zero_file.h).
std::string shard_zero_file(runtime::RunContext& context, DownpourNetwork& network) {
  return network.session().fault_tolerant() ? shard_zero_path(context.run_directory) : "";
}

}  // namespace

int run_downpour_master(runtime::RunContext& context, nn::Model model, DownpourNetwork& network,
                        std::unique_ptr<ShardServer> server,
                        const std::optional<ckpt::Checkpoint>& resume) {
  ShardSnapshots snapshots(network.layout(), model.parameters(), resume,
                           shard_zero_file(context, network));
  return DownpourMaster(context, std::move(model), network, std::move(server),
                        resume ? runtime::data_position(*resume) : runtime::DataPosition{},
                        resume ? resume->iteration : 0, std::move(snapshots))
      .run_loop();
}

int run_downpour_takeover(runtime::RunContext& context, DownpourNetwork& network,
                          const std::optional<DownpourHandover>& handover) {
  auto takeover = take_over_downpour(context, network, handover);
  ShardSnapshots snapshots(network.layout(), takeover.server->snapshot(),
                           shard_zero_file(context, network));
  // The model holds the servers' parameters at each read.
  DownpourMaster master(context, runtime::build_model(context.config), network,
                        std::move(takeover.server), takeover.position, takeover.so_far.steps,
                        std::move(snapshots));
  master.resume_takeover(takeover.so_far);
  load_evaluation_sets(context);  // the workers train meanwhile
  return master.run_loop();
}

}  // namespace gradshare::train

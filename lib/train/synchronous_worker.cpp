// synchronous_worker.cpp: SynchronousWorker (see synchronous_worker.h).
#include "train/synchronous_worker.h"

#include "train/messages.h"
#include "runtime/model_file.h"
#include "runtime/partition_data.h"
#include "train/worker_state.h"

namespace gradshare::train {

SynchronousWorker::SynchronousWorker(runtime::RunContext& context, GroupSession& session,
                                     bool replacement)
    : context_(context),
      cfg_(context.config),
      session_(session),
      batches_(runtime::minibatches_per_epoch(cfg_, context.data.train)),
      per_epoch_(runtime::steps_per_epoch(cfg_, context.data.train, context.worker_count())),
      total_steps_(per_epoch_ * cfg_.training.epochs),
      replica_(cfg_, total_steps_, per_epoch_, static_cast<std::uint64_t>(context.rank)),
      checkpointer_(context),
      divergence_(cfg_.training, cfg_.model.num_classes),
      injector_(cfg_.fault_tolerance, context.rank, replacement, context.end_rank_by_fault()),
      replacement_(replacement) {}

int SynchronousWorker::run() {
  return run_with_recovery(
      session_, replacement_,
      [this] {
        if (!started_) start();
        return train();
      },
      [this] { rejoin(); });
}

void SynchronousWorker::start() {
  const auto start = receive<Start>(control(), 0, "initial model");
  apply_start_state(start.state, replica_.model(), replica_.optimizer());
  iteration_ = start.step;
  // Resumed at an epoch's end: the checkpoint trained all of that epoch (what the final record
  // reports when the run resumed at the very end).
  if (iteration_ > 0 && iteration_ % batches_ == 0) last_epoch_minibatches_ = batches_;
  // The epoch of a resumed run continues at its first untrained minibatch; step_ counts steps
  // as an undisturbed run with this many workers would.
  const std::int64_t count = workers().size();
  step_ = iteration_ / batches_ * per_epoch_ + (iteration_ % batches_ + count - 1) / count;
  started_ = true;
  on_started();
}

data::EpochPlan SynchronousWorker::plan_of(std::int64_t epoch) const {
  return data::EpochPlan(context_.data.train.size(),
                         static_cast<std::size_t>(cfg_.training.batch_size),
                         static_cast<std::size_t>(cfg_.data.partition_batches),
                         static_cast<std::uint64_t>(cfg_.run.seed), epoch, cfg_.data.shuffle);
}

void SynchronousWorker::read_ahead_mine(const data::EpochPlan& plan, std::int64_t first) {
  std::vector<std::vector<std::uint32_t>> mine;
  const int count = workers().size();
  for (std::int64_t b = first + workers().index(); b < batches_; b += count) {
    const auto indices = plan.batch_indices(static_cast<std::size_t>(b));
    mine.emplace_back(indices.begin(), indices.end());
  }
  data::read_ahead(context_.data.train, std::move(mine));
}

void SynchronousWorker::send_epoch_model() {
  kept_epoch_model_ = EpochModel{iteration_ / batches_, iteration_, last_epoch_minibatches_,
                                 replica_.copy_parameters()};
  if (workers().index() == 0) send(control(), 0, *kept_epoch_model_);
}

std::int64_t SynchronousWorker::resend_kept_epoch_model(const GroupResume& resume) {
  if (workers().index() != 0 || !kept_epoch_model_ ||
      kept_epoch_model_->epoch <= resume.epochs_evaluated)
    return -1;
  send(control(), 0, *kept_epoch_model_);
  return kept_epoch_model_->epoch;
}

int SynchronousWorker::hand_in_and_wait() {
  session_.hand_in_results();
  injector_.at_hand_in();
  return receive<Shutdown>(control(), 0, "the master's end of the run").exit_code;
}

void SynchronousWorker::end_epoch_count() {
  last_epoch_minibatches_ = epoch_minibatches_;
  epoch_minibatches_ = 0;
}

// {step, iteration, minibatches this epoch and last, checkpoint mark, finish asked: i64 x 6,
//  the strategy's own, parameters: f32[], worker state}
std::vector<std::uint8_t> SynchronousWorker::save_state() {
  comm::ByteWriter writer;
  writer.put(step_).put(iteration_).put(epoch_minibatches_).put(last_epoch_minibatches_);
  writer.put(checkpoint_mark_).put<std::int64_t>(finish_asked_);
  write_own_state(writer);
  writer.put_vector(std::span<const float>(replica_.parameters()));
  capture_worker_state(replica_.optimizer(), 0.0f).write(writer);
  return writer.take();
}

void SynchronousWorker::load_state(std::span<const std::uint8_t> bytes) {
  comm::ByteReader reader(bytes, "a worker's state after a repair");
  step_ = reader.get<std::int64_t>();
  iteration_ = reader.get<std::int64_t>();
  epoch_minibatches_ = reader.get<std::int64_t>();
  last_epoch_minibatches_ = reader.get<std::int64_t>();
  checkpoint_mark_ = reader.get<std::int64_t>();
  finish_asked_ = reader.get<std::int64_t>() != 0;
  read_own_state(reader);
  StartState state{true, reader.get_vector<float>(), WorkerState::read(reader)};
  reader.expect_end();
  apply_start_state(state, replica_.model(), replica_.optimizer());
  started_ = true;
  on_state_loaded();
}

// After a repair (or as a replacement): every worker takes the state of the member furthest
// along, then the master's GroupResume.
void SynchronousWorker::rejoin() {
  injector_.at_recovery();
  load_state(furthest_state(workers(), progress(),
                            started_ ? state_to_offer() : std::vector<std::uint8_t>{}));
  const auto resume = receive<GroupResume>(control(), 0, "the master's resume after a repair");
  stop_asked_ = stop_asked_ || resume.stop;
  finish_asked_ = finish_asked_ || resume.finish;
  send_what_master_lacks(resume);
}

}  // namespace gradshare::train

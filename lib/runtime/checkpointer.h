// checkpointer.h: when the master writes checkpoints, where, how many it keeps, and which one a
// run resumes from.
//   <run dir>/checkpoints/ckpt-<iteration, 12 digits>.h5, newest checkpoint.keep kept, with the
//   parts its workers wrote beside it (ckpt-<iteration>.parts/, ckpt/checkpoint.h), if any.
//   Written at every multiple of checkpoint.every_steps steps (once the master's step passes
//   it), every checkpoint.every_seconds seconds, at the
//   end of every epoch (checkpoint.every_epoch) and when a stop signal arrives.
//   checkpoint.resume: auto (newest valid checkpoint of the run directory; corrupt ones are
//   reported and skipped), never, or the path of a checkpoint.
//   Every checkpoint written is logged and recorded in metrics.jsonl (on the master):
//   {"kind":"checkpoint","step","epochs_done" (the epochs whose every minibatch it holds),
//    "file","bytes" (with the workers' parts),"part_bytes","seconds" (the master's write's)}.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "core/timer.h"
#include "comm/job.h"
#include "runtime/run_context.h"

namespace gradshare::runtime {

class Checkpointer {
 public:
  explicit Checkpointer(RunContext& context);

  // Whether a periodic checkpoint is due at master step `step`.
  bool due(std::int64_t step) const;
  bool at_epoch_end() const { return every_epoch_; }
  // Writes atomically, logs size and time, prunes old ones; returns the path.
  std::string write(const ckpt::Checkpoint& checkpoint);
  // For a rank that decides when to checkpoint but leaves the writing to the master.
  void mark_written(std::int64_t step);
  const std::string& directory() const { return directory_; }

  // The checkpoint to resume from, if any (see above). UserError for an explicit path that
  // cannot be read.
  // Records a "resume" line in metrics.jsonl when it finds one.
  static std::optional<ckpt::Checkpoint> find_resume(RunContext& context);

 private:
  // Keeps the newest checkpoint.keep (with their parts) and removes parts older than
  // `iteration` that no checkpoint links.
  void prune(std::int64_t iteration) const;

  std::string directory_;
  report::MetricsLog& metrics_;
  std::int64_t every_steps_;
  double every_seconds_;
  bool every_epoch_;
  std::int64_t keep_;
  std::int64_t last_step_ = 0;
  core::Stopwatch since_last_;
};

// After a stop checkpoint the master tells every rank to exit with the requeue code (Shutdown,
// train/messages.h), and the ranks wait for it: Open MPI's launcher ends the whole job as soon
// as one rank exits non-zero, so no rank may exit 75 before the master's checkpoint is on disk.

// The line a rank logs when a stop signal arrives: "<signal> received: <plan>". It promises no
// checkpoint (the checkpoint's own line follows once it is on disk): without fault tolerance
// the signal may be mpirun ending the job because a rank was lost, which kills this rank before
// any checkpoint; with `other_ranks` the line then says what would have kept the job alive.
void log_stop_request(const std::string& plan, bool other_ranks, const comm::Job& job);
// A checkpoint's file name, and the name of worker rank `rank`'s part of it, both relative to
// the checkpoint directory.
std::string checkpoint_file_name(std::int64_t iteration);
std::string worker_part_name(std::int64_t iteration, int rank);
// The path of `name` (one of the two above) in checkpoint directory `directory`.
std::string checkpoint_path(const std::string& directory, const std::string& name);

// The run directory's newest checkpoint file, if any.
std::optional<std::string> newest_checkpoint(const report::RunDirectory& directory);
// Where a rerun resumes, for the line that ends a run: the newest checkpoint file, or "the
// start (no checkpoint written yet)".
std::string resume_point(const report::RunDirectory& directory);

}  // namespace gradshare::runtime

// master_loop.h: the loop every strategy's master runs: poll the control channel with back-off,
// hand each message to the strategy's role, do the role's own work between messages, pass a
// stop signal on once, and give up with an error naming what it waited for when nothing
// happens for transport.timeout_ms. The role decides when the run ends and with which code,
// and whether a failed transport call (a dead peer under ULFM) is repaired or ends the run.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "ckpt/checkpoint.h"
#include "comm/control_channel.h"
#include "comm/transport_error.h"
#include "nn/model.h"
#include "runtime/checkpointer.h"
#include "runtime/epoch_report.h"
#include "runtime/partition_scheduler.h"
#include "runtime/run_context.h"

namespace gradshare::train {

class MasterRole {
 public:
  virtual ~MasterRole() = default;
  // A stop signal (SIGTERM, SIGUSR1) arrived at the master; called once.
  virtual void on_stop_signal() = 0;
  // One control message; an exit code ends the loop with it.
  virtual std::optional<int> handle(const comm::ControlMessage& message) = 0;
  // The role's own work between messages; true when it did something.
  virtual bool poll() { return false; }
  // The run is over without a further message (checked after every message and poll).
  virtual std::optional<int> finished() { return std::nullopt; }
  // A transport call in handle() or poll() failed: true when the role repaired the job and the
  // loop goes on; false ends the run with the error.
  virtual bool recover(const comm::TransportError&) { return false; }
  // What the master waits for, for the timeout error: "the parameter-averaging workers (2 of 3
  // finished)".
  virtual std::string awaited() const = 0;
};

class MasterLoop {
 public:
  // The control channel is asked for anew on every pass: a repair replaces it.
  explicit MasterLoop(std::function<comm::ControlChannel&()> control)
      : control_(std::move(control)) {}
  // Runs until the role returns an exit code.
  int run(MasterRole& role);

 private:
  // One pass: the role's work, one message; true when something happened.
  bool pass(MasterRole& role, std::optional<int>& code);

  std::function<comm::ControlChannel&()> control_;
};

// The end of a run that trained to the end: a TorchScript module's running statistics
// refreshed (running_statistics.h), model.h5 from `checkpoint` (and model.pt for a module),
// then the final evaluation and summary record (with the last epoch's minibatches, where
// counted).
void write_final_model(runtime::RunContext& context, nn::Model& model,
                       runtime::EpochReporter& reporter,
                       const std::function<ckpt::Checkpoint()>& checkpoint,
                       std::optional<std::int64_t> minibatches = std::nullopt);
// The same with the checkpoint of `model` at `step` and `position`.
void write_final_model(runtime::RunContext& context, nn::Model& model, std::int64_t step,
                       const runtime::DataPosition& position, runtime::EpochReporter& reporter,
                       std::optional<std::int64_t> minibatches = std::nullopt);

// "unexpected <tag> message from rank <r>"
[[noreturn]] void unexpected_message(const comm::ControlMessage& message);

}  // namespace gradshare::train

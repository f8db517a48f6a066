// master_loop.cpp: MasterLoop and the end of a run.
#include "train/master_loop.h"

#include "ckpt/checkpoint.h"
#include "core/errors.h"
#include "core/stop_signal.h"
#include "core/timer.h"
#include "runtime/model_file.h"
#include "runtime/module_file.h"
#include "runtime/running_statistics.h"
#include "train/tags.h"

namespace gradshare::train {

bool MasterLoop::pass(MasterRole& role, std::optional<int>& code) {
  try {
    bool busy = role.poll();
    if (auto message = control_().try_receive()) {
      busy = true;
      code = role.handle(*message);
    }
    return busy;
  } catch (const comm::TransportError& error) {
    if (!role.recover(error)) throw;
    return true;
  }
}

int MasterLoop::run(MasterRole& role) {
  core::Backoff backoff;
  core::Deadline deadline(control_().timeout_seconds());
  bool stop_passed_on = false;
  for (;;) {
    if (core::stop_requested() && !stop_passed_on) {
      role.on_stop_signal();
      stop_passed_on = true;
    }
    std::optional<int> code;
    const bool busy = pass(role, code);
    if (code) return *code;
    if (auto finished = role.finished()) return *finished;
    const double timeout = control_().timeout_seconds();
    if (busy) {
      backoff.reset();
      deadline = core::Deadline(timeout);
      continue;
    }
    if (deadline.expired())
      throw core::RuntimeError(comm::timeout_message(timeout, role.awaited()));
    backoff.wait();
  }
}

void write_final_model(runtime::RunContext& context, nn::Model& model,
                       runtime::EpochReporter& reporter,
                       const std::function<ckpt::Checkpoint()>& checkpoint,
                       std::optional<std::int64_t> minibatches) {
  runtime::refresh_running_statistics(model, context);
  ckpt::write_checkpoint(context.run_directory.file("model.h5"), checkpoint());
  runtime::write_module_file(context, model);
  reporter.finish(model, minibatches);
}

void write_final_model(runtime::RunContext& context, nn::Model& model, std::int64_t step,
                       const runtime::DataPosition& position, runtime::EpochReporter& reporter,
                       std::optional<std::int64_t> minibatches) {
  write_final_model(
      context, model, reporter,
      [&] { return runtime::make_checkpoint(context, model, nullptr, step, position); },
      minibatches);
}

void unexpected_message(const comm::ControlMessage& message) {
  throw core::RuntimeError(std::string("unexpected ") + tag_name(message.tag) +
                           " message from rank " + std::to_string(message.source));
}

}  // namespace gradshare::train

// master_base.cpp: MasterBase (see master_base.h).
#include "train/master_base.h"

#include "core/errors.h"
#include "core/log.h"
#include "runtime/divergence_guard.h"

namespace gradshare::train {

MasterBase::MasterBase(runtime::RunContext& context, JobSession& session, nn::Model model)
    : context_(context),
      cfg_(context.config),
      model_(std::move(model)),
      checkpointer_(context),
      reporter_(context),
      job_session_(session) {}

int MasterBase::run_loop() {
  return MasterLoop([this]() -> comm::ControlChannel& { return control(); }).run(*this);
}

void MasterBase::request_stop(const std::string& plan, const std::string& why) {
  if (stopping_) return;
  if (why.empty())
    runtime::log_stop_request(plan, true, *context_.job);
  else
    core::log_warn(why + ": " + plan);
  stopping_ = true;
}

bool MasterBase::stop_if_failure_aborts(const std::string& plan) {
  if (cfg_.fault_tolerance.on_worker_failure != "abort") return false;
  if (!abort_logged_) core::log_warn("fault_tolerance.on_worker_failure is abort: " + plan);
  abort_logged_ = true;
  stopping_ = true;
  return true;
}

void MasterBase::note_divergence(int worker, const Diverged& diverged, const std::string& cause) {
  if (diverged_) return;
  diverged_ = true;
  runtime::log_divergence(context_,
                          "on rank " + std::to_string(worker) + " at its step " +
                              std::to_string(diverged.step) + ": " + diverged.reason,
                          cause);
}

int MasterBase::exit_code() const {
  return diverged_ ? core::kExitDiverged : stopping_ ? core::kExitRequeue : core::kExitOk;
}

void MasterBase::end_job(const std::vector<int>& ranks, int code) {
  send_shutdown(control(), ranks, code);
  job_session_.release_spares();
  if (code == core::kExitDiverged)
    core::log_info("ended after the divergence; the newest checkpoint is the newest good one");
  else if (code == core::kExitRequeue)
    core::log_info("stopped after the checkpoint; exiting with " +
                   std::to_string(core::kExitRequeue) + " (requeue me)");
}

}  // namespace gradshare::train

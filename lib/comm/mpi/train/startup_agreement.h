// startup_agreement.h: how the ranks get through the start-up phases together (config checks,
// data, run directory). Each phase runs on every rank, then all agree on its outcome with two
// all-reduces (ok everywhere? the lowest failing rank, the worst exit code), so a mistake found
// on some ranks stops all of them with one line (the lowest failing rank's) and one exit code,
// instead of leaving the others waiting in the next collective. A rank lost meanwhile (ULFM)
// fails the agreement itself: in a job that repairs it (startup_repair.h) that throws
// comm::LostBeforeTraining, otherwise end_job_lost_at_startup names it and the phase, exit 1.
// Each phase is a start-up point where an injected fault may end this rank first
// (ft/fault_injection.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "comm/job.h"
#include "core/errors.h"
#include "ft/fault_injection.h"
#include "runtime/run_context.h"

namespace gradshare::cli {

class StartupAgreement {
 public:
  // repairs: a lost rank throws comm::LostBeforeTraining instead of ending the job.
  StartupAgreement(runtime::RunContext& context, const ft::FaultInjector& injector, bool repairs)
      : context_(context), injector_(injector), repairs_(repairs) {}

  // Runs `work` on this rank as phase `name` (context.phase), start-up point `point`; returns
  // the exit code every rank leaves with when it failed on any rank, nothing when all may go on.
  template <typename Work>
  std::optional<int> run(const char* point, const char* name, Work&& work) {
    context_.phase = name;
    injector_.at_startup(point);
    std::optional<std::pair<int, std::string>> failure;
    try {
      work();
    } catch (const core::UserError& error) {
      failure.emplace(core::kExitUserError, error.what());
    } catch (const std::exception& error) {
      failure.emplace(core::kExitRuntimeFailure, error.what());
    }
    return settle(failure);
  }

  // Rank 0's `text`, on every rank.
  std::string broadcast(std::string text);
  // Rank 0's `bytes`, on every rank.
  std::vector<std::uint8_t> broadcast(std::vector<std::uint8_t> bytes);

 private:
  std::optional<int> settle(const std::optional<std::pair<int, std::string>>& failure);
  // A failed start-up collective: a rank was lost; ends the job.
  void check(int rc);

  runtime::RunContext& context_;
  const ft::FaultInjector& injector_;
  bool repairs_;
};

}  // namespace gradshare::cli

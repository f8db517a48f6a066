// ft/liveness.cpp: Liveness (see liveness.h).
#include "ft/liveness.h"

#include <unistd.h>

#include <csignal>
#include <string>

#include "core/errors.h"
#include "core/log.h"

namespace gradshare::ft {

void Liveness::restart(const std::vector<int>& workers) {
  for (int worker : workers) heard_from_[worker].restart();
  stopped_.clear();
}

void Liveness::master_was_busy() {
  for (auto& [worker, heard] : heard_from_) heard.restart();
}

void Liveness::check(const std::vector<int>& workers, bool fault_tolerant,
                     const std::map<int, ProcessIdentity>& processes) {
  const double timeout = static_cast<double>(timeout_ms_) / 1000.0;
  for (int worker : workers) {
    auto& heard = heard_from_[worker];
    if (heard.seconds() < timeout) continue;
    const std::string silent = "rank " + std::to_string(worker) + " sent nothing for " +
                               std::to_string(static_cast<int>(heard.seconds())) +
                               " s (fault_tolerance.timeout_ms " + std::to_string(timeout_ms_) + ")";
    const auto identity = processes.find(worker);
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    if (!fault_tolerant || identity == processes.end() ||
        identity->second.host != host)
      throw core::RuntimeError(silent + ": it hangs; ending the job (rerun to resume from the "
                               "newest checkpoint" +
                               (fault_tolerant ? ", it runs on another host" : "") + ")");
    if (stopped_.count(worker))
      throw core::RuntimeError(silent + " after being stopped, and MPI does not report it "
                               "failed (did it exit without finalizing MPI?): ending the job; "
                               "rerun to resume from the newest checkpoint");
    core::log_warn(silent + ": declared dead, stopping process " +
                   std::to_string(identity->second.pid));
    kill(identity->second.pid, SIGKILL);
    stopped_.insert(worker);
    heard.restart();  // ULFM reports the failure shortly; do not stop it twice
  }
}

}  // namespace gradshare::ft

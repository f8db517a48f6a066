// in_process_failures.cpp: InProcessFailures (see in_process_failures.h).
#include "comm/inproc/in_process_failures.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "comm/transport_error.h"
#include "core/errors.h"

namespace gradshare::comm {

InProcessFailures::InProcessFailures(int ranks, int spares, double timeout_seconds)
    : timeout_seconds_(timeout_seconds), assigned_(static_cast<std::size_t>(ranks)) {
  GS_CHECK(spares >= 0 && spares < ranks,
           std::to_string(spares) + " spares of " + std::to_string(ranks) + " ranks");
  for (int thread = 0; thread < ranks; ++thread)
    logical_.push_back(thread < ranks - spares ? thread : -1);
}

void InProcessFailures::fail(int thread) {
  std::lock_guard lock(mutex_);
  auto& logical = logical_.at(static_cast<std::size_t>(thread));
  if (logical >= 0) {
    lost_.push_back(logical);
    arrived_.erase(logical);
  }
  std::erase(waiting_spares_, thread);
  logical = -2;
  ++failures_;
  changed_.notify_all();
}

int InProcessFailures::repaired_failures() const {
  std::lock_guard lock(mutex_);
  return repaired_failures_;
}

void InProcessFailures::check(int repaired) const {
  std::lock_guard lock(mutex_);
  if (failures_ <= repaired) return;
  std::string ranks;
  for (int rank : lost_) ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
  throw TransportError("a process failed" + (ranks.empty() ? "" : " (rank " + ranks + ")") +
                           ": the job must be repaired",
                       true);
}

bool InProcessFailures::repair_begun_or_failed(int logical, int repaired) const {
  std::lock_guard lock(mutex_);
  return repaired_failures_ > repaired || !arrived_.empty() ||
         std::find(lost_.begin(), lost_.end(), logical) != lost_.end();
}

bool InProcessFailures::everyone_arrived() const {
  std::size_t spares = 0;
  for (int logical : logical_) {
    if (logical == -1) ++spares;
    if (logical >= 0 && !arrived_.count(logical)) return false;
  }
  return spares == waiting_spares_.size();
}

InProcessRepair InProcessFailures::complete_repair(bool replace, const Complete& complete) {
  InProcessRepair repair;
  repair.lost = lost_;
  std::sort(repair.lost.begin(), repair.lost.end());
  std::vector<int> spares_taken;
  for (int lost : repair.lost) {
    if (!replace || waiting_spares_.empty()) break;
    const int spare = waiting_spares_.front();
    waiting_spares_.erase(waiting_spares_.begin());
    logical_[static_cast<std::size_t>(spare)] = lost;
    repair.replaced.push_back(lost);
    spares_taken.push_back(spare);
  }
  for (int logical : logical_)
    if (logical > 0) repair.workers.push_back(logical);  // 0 is the master, < 0 spare or dead
  std::sort(repair.workers.begin(), repair.workers.end());
  for (std::size_t i = 0; i < spares_taken.size(); ++i)
    assigned_[static_cast<std::size_t>(spares_taken[i])] = Assignment{repair.replaced[i], repair};
  lost_.clear();
  arrived_.clear();
  repaired_failures_ = failures_;
  last_ = repair;
  complete(repair);
  ++repairs_;
  changed_.notify_all();
  return repair;
}

InProcessRepair InProcessFailures::repair(int logical, bool replace, const Complete& complete) {
  std::unique_lock lock(mutex_);
  const int round = repairs_;
  arrived_.insert(logical);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(timeout_seconds_);
  while (repairs_ == round) {
    if (everyone_arrived()) return complete_repair(replace, complete);
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && repairs_ == round &&
        !everyone_arrived())
      throw TransportError("timed out after " + std::to_string(timeout_seconds_) +
                               " s waiting for every live rank to join the repair",
                           false);
  }
  return last_;
}

std::optional<InProcessFailures::Assignment> InProcessFailures::wait_as_spare(int thread) {
  std::unique_lock lock(mutex_);
  waiting_spares_.push_back(thread);
  std::sort(waiting_spares_.begin(), waiting_spares_.end());
  changed_.notify_all();
  // Without a deadline, as a spare process waits: the test's harness releases the spares when
  // the master's thread ends, however it ends.
  changed_.wait(lock, [&] { return released_ || assigned_[static_cast<std::size_t>(thread)]; });
  std::erase(waiting_spares_, thread);
  return assigned_[static_cast<std::size_t>(thread)];
}

void InProcessFailures::release_spares() {
  std::lock_guard lock(mutex_);
  released_ = true;
  changed_.notify_all();
}

}  // namespace gradshare::comm

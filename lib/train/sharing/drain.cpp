// sharing/drain.cpp: SharingDrain (see drain.h).
#include "train/sharing/drain.h"

#include <algorithm>
#include <utility>

#include "train/messages.h"

namespace gradshare::train {

void SharingDrain::done(int worker, const SharingDone& done) {
  targets_[static_cast<std::size_t>(worker)] = done.last_seq;
  done_.insert(worker);
}

void SharingDrain::drained(int worker, DrainedReport report) {
  applied_twice_[worker] = report.applied_twice;
  relays_[worker] = {report.published,       report.relayed,   report.links,
                     report.bytes_published, report.transport, report.cpu_seconds,
                     report.flush_messages,  report.flush_bytes};
  models_[worker] = std::move(report.parameters);
}

bool SharingDrain::ready_to_send(const std::vector<int>& live) const {
  return done_.size() == live.size() && !sent_;
}

void SharingDrain::send_targets(const std::vector<int>& live, UpdateExchange& exchange,
                                comm::ControlChannel& control) {
  const auto applied = exchange.applied_ids();
  for (int origin = 1; origin < ranks_; ++origin)
    if (std::find(live.begin(), live.end(), origin) == live.end())
      targets_[static_cast<std::size_t>(origin)] = applied.highest(origin);
  if (exchange.aggregating()) flush_round_ = exchange.begin_flush();
  for (int w : live) send(control, w, SharingDrainTarget{targets_, flush_round_});
  sent_ = true;
}

bool SharingDrain::complete(const std::vector<int>& live, const UpdateExchange& exchange) const {
  if (!sent_ || models_.size() != live.size() || exchange.has_backlog()) return false;
  if (flush_round_ > 0) return exchange.flush_complete(flush_round_);
  for (int origin = 1; origin < ranks_; ++origin)
    if (exchange.version_vector()[static_cast<std::size_t>(origin)] <
        targets_[static_cast<std::size_t>(origin)])
      return false;
  return true;
}

void SharingDrain::forget(int worker) {
  done_.erase(worker);
  models_.erase(worker);
  applied_twice_.erase(worker);
  relays_.erase(worker);
}

void SharingDrain::restart() {
  done_.clear();
  models_.clear();
  applied_twice_.clear();
  relays_.clear();
  sent_ = false;
}

std::int64_t SharingDrain::applied_twice() const {
  std::int64_t total = 0;
  for (const auto& [worker, count] : applied_twice_) total += count;
  return total;
}

}  // namespace gradshare::train

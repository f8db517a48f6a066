// fault_injection.cpp: FaultInjector (see fault_injection.h).
#include "ft/fault_injection.h"

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "core/errors.h"
#include "core/log.h"

namespace gradshare::ft {

namespace {

bool is_startup_point(const std::string& name) {
  for (const char* point : {"config", "data", "run_directory", "hosts", "setup"})
    if (name == point) return true;
  return false;
}

// One entry RANK:STEP:KIND, where STEP is a step number or a start-up point's name.
config::FaultInjection parse_injection(const std::string& entry) {
  const auto bad = [&entry] {
    return core::UserError("GRADSHARE_INJECT: bad entry '" + entry +
                           "' (want RANK:STEP:KIND with RANK >= 1, STEP >= -1 or a start-up "
                           "point config|data|run_directory|hosts|setup, KIND "
                           "sigkill|exit|hang|stall; at start-up sigkill, and RANK 0, the "
                           "master, too)");
  };
  const auto first = entry.find(':'), last = entry.rfind(':');
  if (first == std::string::npos || first == last) throw bad();
  config::FaultInjection injection;
  const std::string rank = entry.substr(0, first), step = entry.substr(first + 1, last - first - 1);
  injection.kind = entry.substr(last + 1);
  char* end = nullptr;
  injection.rank = std::strtoll(rank.c_str(), &end, 10);
  if (rank.empty() || *end != '\0' || injection.rank < 0) throw bad();
  // The master takes no training steps: it can fail at a start-up point only.
  if (injection.rank == 0 && !is_startup_point(step)) throw bad();
  if (is_startup_point(step)) {
    injection.at_startup = step;
  } else {
    injection.at_step = std::strtoll(step.c_str(), &end, 10);
    if (step.empty() || *end != '\0' || injection.at_step < -1) throw bad();
  }
  const auto& kind = injection.kind;
  if (injection.at_startup != "none" ? kind != "sigkill"
                                     : kind != "sigkill" && kind != "exit" && kind != "hang" &&
                                           kind != "stall")
    throw bad();
  return injection;
}

}  // namespace

std::vector<config::FaultInjection> parse_injections(const std::string& text) {
  std::vector<config::FaultInjection> injections;
  std::stringstream entries(text);
  std::string entry;
  while (std::getline(entries, entry, ','))
    if (!entry.empty()) injections.push_back(parse_injection(entry));
  return injections;
}

FaultInjector::FaultInjector(const config::FaultToleranceConfig& config, int rank,
                             bool replacement, EndRank end_rank)
    : stall_seconds_(3.0 * static_cast<double>(config.timeout_ms) / 1000.0),
      end_rank_(std::move(end_rank)) {
  if (replacement) return;
  auto all = config.inject;
  if (const char* text = std::getenv("GRADSHARE_INJECT")) {
    const auto extra = parse_injections(text);
    all.insert(all.end(), extra.begin(), extra.end());
  }
  for (const auto& injection : all)
    if (injection.rank == rank) mine_.push_back(injection);
}

void FaultInjector::at_step(std::int64_t step) const {
  for (const auto& injection : mine_)
    if (injection.at_startup == "none" && injection.at_step == step)
      fire(injection, "at step " + std::to_string(step));
}

void FaultInjector::at_recovery() {
  if (recovered_once_) return;
  recovered_once_ = true;
  for (const auto& injection : mine_)
    if (injection.at_startup == "none" && injection.at_step == 0)
      fire(injection, "during a recovery");
}

void FaultInjector::at_hand_in() const {
  for (const auto& injection : mine_)
    if (injection.at_startup == "none" && injection.at_step == -1)
      fire(injection, "after handing in its results");
}

void FaultInjector::at_startup(const std::string& point) const {
  for (const auto& injection : mine_)
    if (injection.at_startup == point) fire(injection, "at start-up (" + point + ")");
}

void FaultInjector::fire(const config::FaultInjection& injection, const std::string& when) const {
  core::log_warn("fault injection: " + injection.kind + " " + when);
  if (injection.kind == "stall") {
    std::this_thread::sleep_for(std::chrono::duration<double>(stall_seconds_));
    core::log_warn("fault injection: stall over after " + std::to_string(stall_seconds_) + " s");
    return;
  }
  end_rank_(injection.kind);
  throw core::RuntimeError("the fault injection's EndRank returned");
}

}  // namespace gradshare::ft

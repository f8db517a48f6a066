// fault_injection.cpp: FaultInjector (see fault_injection.h).
#include "ft/fault_injection.h"

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "core/errors.h"
#include "core/log.h"

namespace gradshare::ft {

std::vector<config::FaultInjection> parse_injections(const std::string& text) {
  std::vector<config::FaultInjection> injections;
  std::stringstream entries(text);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    if (entry.empty()) continue;
    config::FaultInjection injection;
    char kind[16] = {};
    long long rank = 0, step = 0;
    int used = 0;
    if (std::sscanf(entry.c_str(), "%lld:%lld:%15[a-z]%n", &rank, &step, kind, &used) != 3 ||
        used != static_cast<int>(entry.size()) || rank < 1 || step < -1 ||
        (std::string(kind) != "sigkill" && std::string(kind) != "exit" &&
         std::string(kind) != "hang" && std::string(kind) != "stall"))
      throw core::UserError("GRADSHARE_INJECT: bad entry '" + entry +
                            "' (want RANK:STEP:KIND with RANK >= 1, STEP >= -1, KIND "
                            "sigkill|exit|hang|stall)");
    injection.rank = rank;
    injection.at_step = step;
    injection.kind = kind;
    injections.push_back(injection);
  }
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
    if (injection.at_step == step) fire(injection, "at step " + std::to_string(step));
}

void FaultInjector::at_recovery() {
  if (recovered_once_) return;
  recovered_once_ = true;
  for (const auto& injection : mine_)
    if (injection.at_step == 0) fire(injection, "during a recovery");
}

void FaultInjector::at_hand_in() const {
  for (const auto& injection : mine_)
    if (injection.at_step == -1) fire(injection, "after handing in its results");
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

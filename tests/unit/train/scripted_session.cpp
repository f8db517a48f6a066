// scripted_session.cpp: ScriptedChannel and ScriptedGroupSession (see scripted_session.h).
#include "scripted_session.h"

#include <algorithm>

#include "core/errors.h"

namespace gradshare::train::testing {

void ScriptedChannel::send(int dest, comm::Tag tag, std::span<const std::uint8_t> payload) {
  sent_.push_back({dest, {rank_, tag, {payload.begin(), payload.end()}}});
  if (script_) script_(sent_.back(), *this);
}

std::optional<comm::ControlMessage> ScriptedChannel::try_receive(std::optional<comm::Tag> tag,
                                                                 int source) {
  const auto found = std::find_if(incoming_.begin(), incoming_.end(), [&](const auto& m) {
    return (!tag || m.tag == *tag) && (source == comm::kAnySource || m.source == source);
  });
  if (found == incoming_.end()) return std::nullopt;
  auto message = std::move(*found);
  incoming_.erase(found);
  return message;
}

RepairOutcome ScriptedGroupSession::repair(const std::vector<std::uint8_t>&) {
  throw core::RuntimeError("a role run alone was asked to repair the job");
}

std::unique_ptr<DownpourTransport> ScriptedGroupSession::downpour_transport(
    RunContext&, const DownpourLayout&) {
  throw core::RuntimeError("a synchronous role run alone was asked for a Downpour transport");
}

}  // namespace gradshare::train::testing

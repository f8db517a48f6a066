#include "train/update_exchange.h"

#include "codec/decoder.h"
#include "codec/message.h"
#include "core/errors.h"
#include "core/log.h"

namespace gradshare::train {

UpdateExchange::UpdateExchange(comm::DataPlane& plane, int self_rank, int ranks,
                               std::size_t parameter_count)
    : plane_(plane), self_(self_rank), parameter_count_(parameter_count),
      applied_upto_(static_cast<std::size_t>(ranks), 0),
      applied_above_(static_cast<std::size_t>(ranks)),
      // The relay's saturation signal is not used: own messages wait for empty queues instead.
      relay_(plane, plane.max_message_bytes()) {}

bool UpdateExchange::has_applied(int origin, std::uint64_t seq) const {
  const auto o = static_cast<std::size_t>(origin);
  return seq <= applied_upto_[o] || applied_above_[o].count(seq) > 0;
}

bool UpdateExchange::mark_applied(int origin, std::uint64_t seq) {
  if (has_applied(origin, seq)) return false;
  const auto o = static_cast<std::size_t>(origin);
  applied_above_[o].insert(seq);
  auto& above = applied_above_[o];
  while (!above.empty() && *above.begin() == applied_upto_[o] + 1) {
    ++applied_upto_[o];
    above.erase(above.begin());
  }
  return true;
}

std::size_t UpdateExchange::poll(std::span<float> parameters) {
  const std::size_t received = plane_.poll([&](int from, std::span<const std::uint8_t> message) {
    codec::MessageHeader header;
    std::string error;
    if (!codec::parse_header(message, parameter_count_, header, &error) ||
        header.origin >= applied_upto_.size() || header.seq == 0) {
      ++stats_.rejected;
      last_error_ = "malformed message from rank " + std::to_string(from) + ": " +
                    (error.empty() ? "origin or seq out of range" : error);
      core::log_warn(last_error_);
      return;
    }
    const int origin = static_cast<int>(header.origin);
    if (has_applied(origin, header.seq)) {
      ++stats_.duplicates;
      return;
    }
    if (!codec::apply_message(message, parameters, &error)) {
      ++stats_.rejected;
      last_error_ = "malformed message from rank " + std::to_string(from) + ": " + error;
      core::log_warn(last_error_);
      return;
    }
    mark_applied(origin, header.seq);
    ++stats_.applied;
    stats_.relayed += plane_.links().size() - 1;
    relay_.forward(from, message);
  });
  relay_.flush();
  return received;
}

bool UpdateExchange::can_publish(std::size_t bytes) const {
  if (relay_.queued_messages() > 0) return false;
  for (int link : plane_.links())
    if (!plane_.can_send(link, bytes)) return false;
  return true;
}

void UpdateExchange::publish(std::span<const std::uint8_t> message, std::span<float> parameters) {
  codec::MessageHeader header;
  std::string error;
  GS_CHECK(codec::parse_header(message, parameter_count_, header, &error), error);
  GS_CHECK(static_cast<int>(header.origin) == self_, "publishing another rank's message");
  GS_CHECK(codec::apply_message(message, parameters, &error), error);
  GS_CHECK(mark_applied(self_, header.seq), "seq " + std::to_string(header.seq) + " reused");
  ++stats_.applied;
  ++stats_.published;
  stats_.bytes_published += message.size();
  relay_.forward(comm::kOriginHere, message);
}

bool UpdateExchange::has_backlog() const { return relay_.queued_messages() > 0; }

}  // namespace gradshare::train

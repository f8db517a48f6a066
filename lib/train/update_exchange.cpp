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
      applied_above_(static_cast<std::size_t>(ranks)) {
  for (int link : plane_.links()) outgoing_[link];
}

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
    enqueue_except(from, message);
  });
  flush_queues();
  return received;
}

bool UpdateExchange::can_publish(std::size_t bytes) const {
  for (const auto& [link, queue] : outgoing_)
    if (!queue.empty() || !plane_.can_send(link, bytes)) return false;
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
  enqueue_except(-1, message);
  flush_queues();
}

bool UpdateExchange::has_backlog() const {
  for (const auto& [link, queue] : outgoing_)
    if (!queue.empty()) return true;
  return false;
}

void UpdateExchange::enqueue_except(int from_link, std::span<const std::uint8_t> message) {
  for (auto& [link, queue] : outgoing_) {
    if (link == from_link) continue;
    queue.emplace_back(message.begin(), message.end());
    if (from_link >= 0) ++stats_.relayed;
  }
}

void UpdateExchange::flush_queues() {
  for (auto& [link, queue] : outgoing_) {
    while (!queue.empty() && plane_.try_send(link, queue.front())) queue.pop_front();
  }
}

}  // namespace gradshare::train

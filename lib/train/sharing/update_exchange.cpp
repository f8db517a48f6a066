#include "train/sharing/update_exchange.h"

#include <algorithm>

#include "codec/decoder.h"
#include "comm/byte_io.h"
#include "codec/message.h"
#include "core/errors.h"
#include "core/log.h"

namespace gradshare::train {

namespace {
// A replica's own newest messages: more than its rings and relay queues can hold in flight.
constexpr std::size_t kKeepOwnMessages = 16;
}  // namespace

bool AppliedIds::contains(int origin, std::uint64_t seq) const {
  const auto o = static_cast<std::size_t>(origin);
  if (o >= upto.size()) return false;
  return seq <= upto[o] || std::binary_search(above[o].begin(), above[o].end(), seq);
}

std::uint64_t AppliedIds::highest(int origin) const {
  const auto o = static_cast<std::size_t>(origin);
  if (o >= upto.size()) return 0;
  return above[o].empty() ? upto[o] : std::max(upto[o], above[o].back());
}

std::size_t AppliedIds::count() const {
  std::size_t ids = 0;
  for (const auto seq : upto) ids += seq;
  for (const auto& seqs : above) ids += seqs.size();
  return ids;
}

std::vector<std::uint8_t> AppliedIds::serialize() const {
  comm::ByteWriter writer;
  writer.put_vector(upto);
  for (const auto& seqs : above) writer.put_vector(seqs);
  return {writer.bytes().begin(), writer.bytes().end()};
}

AppliedIds AppliedIds::deserialize(std::span<const std::uint8_t> bytes) {
  comm::ByteReader reader(bytes, "applied update IDs");
  AppliedIds ids;
  ids.upto = reader.get_vector<std::uint64_t>();
  for (std::size_t o = 0; o < ids.upto.size(); ++o) {
    ids.above.push_back(reader.get_vector<std::uint64_t>());
    GS_CHECK(std::is_sorted(ids.above.back().begin(), ids.above.back().end()),
             "applied update IDs out of order");
  }
  reader.expect_end();
  return ids;
}

UpdateExchange::UpdateExchange(comm::DataPlane& plane, int self_rank, int ranks,
                               std::size_t parameter_count, std::optional<std::size_t> keep_bytes)
    : plane_(&plane), self_(self_rank), parameter_count_(parameter_count),
      keep_bytes_(keep_bytes), applied_upto_(static_cast<std::size_t>(ranks), 0),
      applied_above_(static_cast<std::size_t>(ranks)) {
  attach(plane);
}

void UpdateExchange::attach(comm::DataPlane& plane) {
  plane_ = &plane;
  // The relay's saturation signal is not used: own messages wait for empty queues instead.
  relay_.emplace(plane, plane.max_message_bytes());
}

void UpdateExchange::keep(int origin, std::uint64_t seq, std::span<const std::uint8_t> message) {
  if (!keep_bytes_) return;
  Kept kept{origin, seq, std::vector<std::uint8_t>(message.begin(), message.end())};
  if (aggregator_) {  // the messages sent toward the master: the budget, at least the newest 16
    kept_bytes_ += message.size();
    kept_own_.push_back(std::move(kept));
    while (kept_own_.size() > kKeepOwnMessages && kept_bytes_ > *keep_bytes_) {
      kept_bytes_ -= kept_own_.front().bytes.size();
      kept_own_.pop_front();
    }
    stats_.kept_bytes_peak = std::max(stats_.kept_bytes_peak, kept_bytes_);
    return;
  }
  if (origin == self_) {
    kept_own_.push_back(std::move(kept));
    if (kept_own_.size() > kKeepOwnMessages) kept_own_.pop_front();
    return;
  }
  kept_bytes_ += message.size();
  kept_peers_.push_back(std::move(kept));
  while (!kept_peers_.empty() && kept_bytes_ > *keep_bytes_) {
    kept_bytes_ -= kept_peers_.front().bytes.size();
    kept_peers_.pop_front();
  }
  stats_.kept_bytes_peak = std::max(stats_.kept_bytes_peak, kept_bytes_);
}

std::optional<std::span<const std::uint8_t>> UpdateExchange::kept(int origin,
                                                                  std::uint64_t seq) const {
  for (const auto* store : {&kept_own_, &kept_peers_})
    for (const auto& message : *store)
      if (message.origin == origin && message.seq == seq)
        return std::span<const std::uint8_t>(message.bytes);
  return std::nullopt;
}

AppliedIds UpdateExchange::applied_ids() const {
  AppliedIds ids;
  ids.upto = applied_upto_;
  for (const auto& above : applied_above_) ids.above.emplace_back(above.begin(), above.end());
  return ids;
}

void UpdateExchange::restore(const AppliedIds& ids) {
  GS_CHECK(ids.upto.size() == applied_upto_.size(), "applied update IDs for " +
                                                        std::to_string(ids.upto.size()) + " ranks");
  applied_upto_ = ids.upto;
  for (std::size_t o = 0; o < ids.above.size(); ++o)
    applied_above_[o] = std::set<std::uint64_t>(ids.above[o].begin(), ids.above[o].end());
  // The snapshot's updates are in the parameters this replica starts from: applied once each.
  stats_.applied = distinct_applied();
}

void UpdateExchange::adopt(const AppliedIds& ids) {
  const std::int64_t twice = applied_twice();
  restore(ids);
  stats_.applied += static_cast<std::uint64_t>(twice);
}

std::vector<std::vector<std::uint8_t>> UpdateExchange::kept_missing_from(
    const AppliedIds& other) const {
  std::vector<std::vector<std::uint8_t>> missing;
  for (const auto* store : {&kept_own_, &kept_peers_})
    for (const auto& message : *store)
      if (!other.contains(message.origin, message.seq)) missing.push_back(message.bytes);
  return missing;
}

void UpdateExchange::reject(int from, const std::string& error) {
  ++stats_.rejected;
  last_error_ = (from == kResync ? std::string("malformed resync message: ")
                                 : "malformed message from rank " + std::to_string(from) + ": ") +
                (error.empty() ? "origin or seq out of range" : error);
}

UpdateExchange::Accepted UpdateExchange::accept(std::span<const std::uint8_t> message,
                                                std::span<float> parameters, int from,
                                                codec::ParsedMessage& parsed) {
  std::string error;
  if (!codec::parse_message(message, parameter_count_, parsed, &error) ||
      parsed.header.origin >= applied_upto_.size() || parsed.header.seq == 0) {
    reject(from, error);
    return Accepted::kRejected;
  }
  const int origin = static_cast<int>(parsed.header.origin);
  if (has_applied(origin, parsed.header.seq)) {
    ++stats_.duplicates;
    return Accepted::kDuplicate;
  }
  if (!codec::apply_parsed(parsed, parameters, &error)) {
    reject(from, error);
    return Accepted::kRejected;
  }
  mark_applied(origin, parsed.header.seq);
  if (!aggregator_) keep(origin, parsed.header.seq, message);
  ++stats_.applied;
  if (observer_) observer_(parsed);
  return Accepted::kApplied;
}

bool UpdateExchange::deliver(std::span<const std::uint8_t> message, std::span<float> parameters) {
  codec::ParsedMessage parsed;
  return accept(message, parameters, kResync, parsed) != Accepted::kRejected;
}

bool UpdateExchange::has_applied(int origin, std::uint64_t seq) const {
  const auto o = static_cast<std::size_t>(origin);
  return seq <= applied_upto_[o] || applied_above_[o].count(seq) > 0;
}

std::uint64_t UpdateExchange::distinct_applied() const {
  std::uint64_t distinct = distinct_before_restarts_;
  for (std::size_t o = 0; o < applied_upto_.size(); ++o)
    distinct += applied_upto_[o] + applied_above_[o].size();
  return distinct;
}

std::int64_t UpdateExchange::applied_twice() const {
  return static_cast<std::int64_t>(stats_.applied) - static_cast<std::int64_t>(distinct_applied());
}

std::uint64_t UpdateExchange::highest_applied(int origin) const {
  const auto& above = applied_above_[static_cast<std::size_t>(origin)];
  return above.empty() ? applied_upto_[static_cast<std::size_t>(origin)] : *above.rbegin();
}

bool UpdateExchange::mark_applied(int origin, std::uint64_t seq) {
  if (has_applied(origin, seq)) return false;
  const auto o = static_cast<std::size_t>(origin);
  auto& above = applied_above_[o];
  if (above.empty() && seq == applied_upto_[o] + 1) {  // in order, as nearly every message is
    ++applied_upto_[o];
    return true;
  }
  above.insert(seq);
  while (!above.empty() && *above.begin() == applied_upto_[o] + 1) {
    ++applied_upto_[o];
    above.erase(above.begin());
  }
  return true;
}

void UpdateExchange::take(int from, std::span<const std::uint8_t> message,
                          std::span<float> parameters, double now) {
  if (aggregator_ && aggregator_->deferring(relay_->index_of(from))) {
    deferred_.push_back({from, {message.begin(), message.end()}});
    return;
  }
  codec::ParsedMessage parsed;
  switch (accept(message, parameters, from, parsed)) {
    case Accepted::kRejected:
      core::log_warn(last_error_);
      return;
    case Accepted::kDuplicate:
      return;
    case Accepted::kApplied:
      if (aggregator_) {
        aggregator_->contribute(relay_->index_of(from), parsed, now);
        return;
      }
      stats_.relayed += plane_->links().size() - 1;
      relay_->forward(from, message);
      return;
  }
}

std::size_t UpdateExchange::poll(std::span<float> parameters, double now) {
  const std::size_t received = plane_->poll([&](int from, std::span<const std::uint8_t> message) {
    take(from, message, parameters, now);
  });
  relay_->flush();
  return received;
}

std::size_t UpdateExchange::release_cut(std::span<float> parameters, double now) {
  aggregator_->release_cut();
  // In arrival order; a message deferred again (a later cut's marker came first) keeps its place.
  auto deferred = std::move(deferred_);
  deferred_.clear();
  for (const Deferred& d : deferred) take(d.from, d.message, parameters, now);
  return deferred.size();
}

void UpdateExchange::aggregate(const config::EncodingConfig& encoding, double wait_seconds,
                               int band, bool trains, const topology::Tree& tree) {
  const double epochs = aggregation_ ? aggregation_->epochs : 0.0;
  aggregation_ = Aggregation{encoding, wait_seconds, band, trains, epochs};
  const auto sizes = subtree_sizes(tree);
  std::vector<int> bands;
  for (const int peer : plane_->links())
    bands.push_back(aggregated_band(tree, sizes, self_, peer, band));
  aggregator_.emplace(encoding, parameter_count_, plane_->links().size(), wait_seconds, trains,
                      std::move(bands));
  relay_parent_ = tree.parent[static_cast<std::size_t>(self_)];
  if (relay_parent_ >= 0) aggregator_->set_parent(relay_->index_of(relay_parent_));
  aggregator_->limit_message_bytes(plane_->max_message_bytes());
  aggregator_->set_training_progress(epochs);
  link_seq_.assign(plane_->links().size(), 0);
}

void UpdateExchange::set_training_progress(double epochs) {
  aggregation_->epochs = epochs;
  aggregator_->set_training_progress(epochs);
}

UpdateExchange::Unconfirmed UpdateExchange::take_unconfirmed(
    std::optional<std::uint64_t> parent_applied, std::span<float> into) {
  Unconfirmed taken;
  const auto parent = aggregator_->parent();
  if (!parent) return taken;  // the master: no link toward it
  const auto owed = aggregator_->residual(*parent);
  for (std::size_t i = 0; i < into.size(); ++i) into[i] += owed[i];
  if (!parent_applied) return taken;
  std::uint64_t next = *parent_applied + 1;  // the oldest message the parent lacks
  for (const Kept& message : kept_own_) {
    if (message.seq <= *parent_applied) continue;
    if (message.seq > next) taken.not_kept += message.seq - next;
    next = message.seq + 1;
    std::string error;
    GS_CHECK(codec::accumulate_message(message.bytes, into, &error),
             "a kept message does not decode: " + error);
    ++taken.added_back;
  }
  if (link_seq_[*parent] >= next) taken.not_kept += link_seq_[*parent] - next + 1;
  return taken;
}

void UpdateExchange::restart_aggregation(const topology::Tree& tree) {
  distinct_before_restarts_ = distinct_applied();
  std::fill(applied_upto_.begin(), applied_upto_.end(), 0);
  for (auto& above : applied_above_) above.clear();
  kept_own_.clear();
  kept_bytes_ = 0;
  deferred_.clear();
  finals_.clear();
  aggregate(aggregation_->encoding, aggregation_->wait_seconds, aggregation_->band,
            aggregation_->trains, tree);
}

void UpdateExchange::send_on_link(std::size_t l, std::uint64_t seq,
                                  std::span<const std::uint8_t> message) {
  // Kept first: a send that fails (a repair under way) must not lose what left the residual.
  if (aggregator_->parent() == l) keep(self_, seq, message);
  relay_->send(plane_->links()[l], message);
}

std::size_t UpdateExchange::send_aggregates(double now, bool flush) {
  const auto& links = plane_->links();
  std::size_t sent = 0;
  if (aggregator_->marker_due()) {
    const std::size_t parent = *aggregator_->parent();
    aggregator_->encode_marker(static_cast<std::uint32_t>(self_), ++link_seq_[parent], aggregate_);
    send_on_link(parent, link_seq_[parent], aggregate_);
    ++stats_.flushed;
    stats_.flushed_bytes += aggregate_.size();
    ++sent;
  }
  for (std::size_t l = 0; l < links.size(); ++l) {
    if (aggregator_->final_due(l)) {
      finals_.clear();
      std::uint64_t seq = link_seq_[l];
      aggregator_->encode_final(l, static_cast<std::uint32_t>(self_), link_seq_[l],
                                plane_->max_message_bytes(), finals_);
      for (const auto& piece : finals_) {
        send_on_link(l, ++seq, piece);
        stats_.flushed_bytes += piece.size();
      }
      stats_.flushed += finals_.size();
      sent += finals_.size();
      continue;
    }
    if (!aggregator_->owes(l) || !(aggregator_->due(l, now) || (flush && aggregator_->fresh(l))))
      continue;
    // Back-pressure: what a full link cannot take stays owed and grows into the next message.
    if (relay_->queued_bytes(links[l]) > 0 ||
        !plane_->can_send(links[l], aggregator_->max_message_bytes(l))) {
      aggregator_->postpone(l, now);
      continue;
    }
    aggregator_->encode(l, static_cast<std::uint32_t>(self_), ++link_seq_[l], 0, now, aggregate_);
    send_on_link(l, link_seq_[l], aggregate_);
    ++stats_.aggregated;
    stats_.aggregated_bytes += aggregate_.size();
    ++sent;
  }
  return sent;
}

bool UpdateExchange::can_publish(std::size_t bytes) const {
  if (aggregator_) return true;
  if (relay_->queued_messages() > 0) return false;
  for (int link : plane_->links())
    if (!plane_->can_send(link, bytes)) return false;
  return true;
}

void UpdateExchange::publish(std::span<const std::uint8_t> message, std::span<float> parameters,
                             double now) {
  codec::ParsedMessage parsed;
  std::string error;
  GS_CHECK(codec::parse_message(message, parameter_count_, parsed, &error), error);
  const auto& header = parsed.header;
  GS_CHECK(static_cast<int>(header.origin) == self_, "publishing another rank's message");
  GS_CHECK(codec::apply_parsed(parsed, parameters, &error), error);
  GS_CHECK(mark_applied(self_, header.seq), "seq " + std::to_string(header.seq) + " reused");
  if (!aggregator_) keep(self_, header.seq, message);  // aggregating, its links' messages are
  ++stats_.applied;
  ++stats_.published;
  stats_.bytes_published += message.size();
  if (aggregator_)
    aggregator_->contribute(aggregator_->own_source(), parsed, now);
  else
    relay_->forward(comm::kOriginHere, message);
}

bool UpdateExchange::has_backlog() const { return relay_->queued_messages() > 0; }

}  // namespace gradshare::train

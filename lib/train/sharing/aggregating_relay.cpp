#include "train/sharing/aggregating_relay.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "codec/message.h"
#include "codec/sparsity_band.h"
#include "codec/values.h"
#include "core/errors.h"
#include "train/sharing/staleness.h"

namespace gradshare::train {
namespace {

constexpr std::size_t kPrefetchAhead = 16;

// A relay passes on other workers' content: clipping would drop some of it and a shake-up would
// send half quanta of it. No threshold: every element owed fires up to the link's cap (header
// comment), at the smallest tau the encoder takes (encoding.min_threshold); the cap is set by
// the relay (set_training_progress).
config::EncodingConfig relay_encoding(const config::EncodingConfig& encoding) {
  config::EncodingConfig relay = encoding;
  relay.residual = "none";
  relay.shake_up_every_steps = 0;
  relay.threshold_algorithm = "fixed";
  relay.initial_threshold = encoding.min_threshold;
  relay.max_message_sparsity = 1.0;
  return relay;
}

// `band` workers' caps of `cap_fraction` of the n parameters at a band `workers_band` times the
// configured one; every parameter for band 0 (aggregate_cap).
std::size_t band_cap(double cap_fraction, double workers_band, int band, std::size_t n) {
  if (band <= 0) return n;
  return codec::cap_quanta(cap_fraction, workers_band * band, n);
}

}  // namespace

std::vector<int> subtree_sizes(const topology::Tree& tree) {
  // Ranks in preorder from the master, then summed from the last: children before parents.
  std::vector<int> order{0};
  for (std::size_t i = 0; i < order.size(); ++i)
    for (int child : tree.children[static_cast<std::size_t>(order[i])]) order.push_back(child);
  std::vector<int> sizes(static_cast<std::size_t>(tree.size()), 0);
  for (auto r = order.rbegin(); r != order.rend(); ++r) {
    auto& size = sizes[static_cast<std::size_t>(*r)];
    size += 1;
    if (const int parent = tree.parent[static_cast<std::size_t>(*r)]; parent >= 0)
      sizes[static_cast<std::size_t>(parent)] += size;
  }
  return sizes;
}

int workers_behind(const topology::Tree& tree, const std::vector<int>& sizes, int rank,
                   int toward) {
  if (tree.parent[static_cast<std::size_t>(rank)] == toward)
    return sizes[static_cast<std::size_t>(rank)];
  // Toward a child: every live worker (the master trains nothing) but that child's subtree.
  return sizes[0] - 1 - sizes[static_cast<std::size_t>(toward)];
}

int aggregated_band(const topology::Tree& tree, const std::vector<int>& sizes, int rank, int toward,
                    int most) {
  return workers_behind(tree, sizes, rank, toward) > most ? most : 0;
}

std::size_t aggregate_cap(const config::EncodingConfig& encoding, std::size_t parameter_count,
                          int band, double epochs) {
  return band_cap(codec::message_cap_fraction(encoding),
                  codec::BandScale(encoding, parameter_count).at(epochs), band, parameter_count);
}

std::int64_t aggregated_staleness_bound(std::int64_t max_staleness, int tree_depth) {
  if (max_staleness <= 0) return max_staleness;  // no bound stays no bound
  return max_staleness + 2 * std::max(2 * tree_depth - 1, 0);
}

AggregatingRelay::AggregatingRelay(const config::EncodingConfig& encoding,
                                   std::size_t parameter_count, std::size_t links,
                                   double wait_seconds, bool trains, std::vector<int> link_bands)
    : parameter_count_(parameter_count),
      sources_(links + 1),
      wait_seconds_(wait_seconds),
      trains_(trains),
      check_(encoding.check_conservation),
      worker_cap_fraction_(codec::message_cap_fraction(encoding)),
      worker_band_(encoding, parameter_count),
      link_bands_(std::move(link_bands)) {
  GS_CHECK(link_bands_.empty() || link_bands_.size() == links, "a band per link");
  links_.reserve(links);
  const auto relay = relay_encoding(encoding);
  for (std::size_t l = 0; l < links; ++l) {
    links_.push_back(Link{codec::Encoder(relay, parameter_count),
                          {},
                          {},
                          std::vector<bool>(links + 1, false),
                          {},
                          CandidateSet(parameter_count),
                          false,
                          0.0});
    links_.back().encoder.carry_values();
    if (check_) {
      links_.back().contributed.assign(parameter_count, 0.0f);
      links_.back().sent.assign(parameter_count, 0.0f);
    }
  }
  set_training_progress(0.0);
}

void AggregatingRelay::set_training_progress(double epochs) {
  // Called every step and every master poll: the caps move only while the warm-up lasts.
  const double workers_band = worker_band_.at(epochs);
  if (link_bands_.empty() || workers_band == caps_band_) return;
  caps_band_ = workers_band;
  for (std::size_t l = 0; l < links_.size(); ++l)
    links_[l].encoder.set_message_cap(
        band_cap(worker_cap_fraction_, workers_band, link_bands_[l], parameter_count_));
}

void AggregatingRelay::contribute(std::size_t source, const codec::ParsedMessage& message,
                                  double now) {
  GS_CHECK(source < sources_.size(), "contribution from source " + std::to_string(source));
  auto& from = sources_[source];
  from.spoken = true;
  from.clock = message.header.iteration;
  from.idle = (message.header.flags & kFlagIdle) != 0;
  if ((message.header.flags & (kFlagFinal | kFlagMarker)) != 0) {
    GS_CHECK(source < links_.size(), "a final or marker from this rank's own training");
    if ((message.header.flags & kFlagFinal) != 0) ++links_[source].finals_received;
    if ((message.header.flags & kFlagMarker) != 0) {
      ++links_[source].markers_received;
      return;  // empty: it owes the other links nothing
    }
  }
  // Decoded once, then added to every other link: one addition per element and link, as
  // accumulate_parsed does.
  std::string error;
  entries_.clear();
  values_.clear();
  GS_CHECK(codec::entry_values(message, entries_, values_, &error), error);
  add_to_links(source, now);
}

void AggregatingRelay::owe_everywhere(std::span<const float> content, double now) {
  entries_.clear();
  values_.clear();
  for (std::size_t i = 0; i < content.size(); ++i)
    if (content[i] != 0.0f) {
      entries_.push_back(static_cast<std::uint32_t>(i));
      values_.push_back(content[i]);
    }
  if (!entries_.empty()) add_to_links(own_source(), now);
}

void AggregatingRelay::add_to_links(std::size_t source, double now) {
  for (std::size_t l = 0; l < links_.size(); ++l) {
    if (l == source) continue;
    Link& link = links_[l];
    const auto residual = link.encoder.residual();
    const std::size_t count = entries_.size();
    for (std::size_t e = 0; e < count; ++e) {
      const std::uint32_t i = entries_[e];
      if (e + kPrefetchAhead < count)
        __builtin_prefetch(&residual[entries_[e + kPrefetchAhead]], 1);
      residual[i] += values_[e];
      if (!link.contributed.empty()) link.contributed[i] += values_[e];
      if (!link.is_candidate.insert(i)) link.candidates.push_back(i);
    }
    if (!link.owed) link.owed_since = now;
    link.owed = true;
    link.heard[source] = true;
  }
}

void AggregatingRelay::set_parent(std::optional<std::size_t> parent) {
  parent_ = parent;
  if (parent_) links_[*parent_].contributed.resize(parameter_count_, 0.0f);
}

std::span<const float> AggregatingRelay::upward() const {
  GS_CHECK(parent_, "the master's relay has no link toward a parent");
  return links_[*parent_].contributed;
}

bool AggregatingRelay::due(std::size_t link, double now) const {
  const Link& l = links_[link];
  if (!l.owed) return false;
  if (now >= l.owed_since + wait_seconds_) return true;  // as next_deadline computes it
  for (std::size_t s = 0; s < sources_.size(); ++s) {
    if (s == link || l.heard[s]) continue;
    if (s == own_source() ? trains_ : !sources_[s].idle) return false;
  }
  return true;
}

bool AggregatingRelay::fresh(std::size_t link) const {
  const auto& heard = links_[link].heard;
  return std::find(heard.begin(), heard.end(), true) != heard.end();
}

double AggregatingRelay::next_deadline() const {
  double deadline = std::numeric_limits<double>::infinity();
  for (const Link& link : links_)
    if (link.owed) deadline = std::min(deadline, link.owed_since + wait_seconds_);
  return deadline;
}

codec::EncodeStats AggregatingRelay::encode(std::size_t link, std::uint32_t origin,
                                            std::uint64_t seq, std::uint32_t epoch,
                                            double now, std::vector<std::uint8_t>& out) {
  Link& l = links_[link];
  const auto meta = stamp(link, origin, seq, epoch, 0);
  // Every element changed since it last fired goes, the largest first up to the link's cap.
  const auto stats = l.encoder.encode_candidates(l.candidates, meta, out);
  // What fired leaves its bfloat16 rounding, which waits for the element's next change, as does
  // an element below encoding.min_threshold; what the cap held back stays a candidate.
  const auto magnitudes = l.encoder.candidate_magnitudes();
  GS_CHECK(magnitudes.size() == l.candidates.size(), "a magnitude per candidate");
  std::size_t kept = 0;
  for (std::size_t k = 0; k < l.candidates.size(); ++k) {
    const std::uint32_t i = l.candidates[k];
    if (stats.capped && magnitudes[k] != 0.0f && magnitudes[k] < stats.tau)
      l.candidates[kept++] = i;
    else
      l.is_candidate.erase(i);
  }
  l.candidates.resize(kept);
  if (check_) {
    std::string error;
    GS_CHECK(codec::accumulate_message(out, l.sent, &error), error);
  }
  sent(link, now);
  return stats;
}

codec::MessageMeta AggregatingRelay::stamp(std::size_t link, std::uint32_t origin,
                                           std::uint64_t seq, std::uint32_t epoch,
                                           std::uint32_t flags) const {
  // An idle source's clock stops: counted, it would hold the receiver's bound back for good.
  constexpr auto kNone = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t clock = kNone, idle_clock = kNone;
  for (std::size_t s = 0; s < sources_.size(); ++s) {
    if (s == link || !sources_[s].spoken) continue;
    auto& slowest = sources_[s].idle ? idle_clock : clock;
    slowest = std::min(slowest, sources_[s].clock);
  }
  const bool idle = clock == kNone;
  if (idle) clock = idle_clock == kNone ? 0 : idle_clock;
  return {origin, seq, clock, epoch, flags | (idle ? kFlagIdle : 0u)};
}

void AggregatingRelay::sent(std::size_t index, double now) {
  Link& link = links_[index];
  std::fill(link.heard.begin(), link.heard.end(), false);
  link.owed = !link.candidates.empty();
  link.owed_since = now;
}

std::size_t AggregatingRelay::max_message_bytes(std::size_t link) const {
  // The candidates are every element the next message can carry.
  const Link& l = links_[link];
  return codec::kHeaderBytes +
         codec::values_payload_bound(std::min(l.candidates.size(), l.encoder.message_cap()),
                                     l.encoder.parameter_count());
}
void AggregatingRelay::limit_message_bytes(std::size_t bytes) {
  for (Link& link : links_) link.encoder.limit_message_bytes(bytes);
}

void AggregatingRelay::postpone(std::size_t link, double now) {
  if (links_[link].owed) links_[link].owed_since = now;
}

double AggregatingRelay::conservation_error() const {
  GS_CHECK(check_, "the relay's conservation check needs encoding.check_conservation");
  double largest = 0, error = 0;
  for (const Link& link : links_) {
    const auto residual = link.encoder.residual();
    for (std::size_t i = 0; i < residual.size(); ++i) {
      largest = std::max(largest, static_cast<double>(std::abs(link.contributed[i])));
      error = std::max(error, std::abs(static_cast<double>(link.contributed[i]) -
                                       link.sent[i] - residual[i]));
    }
  }
  return largest > 0 ? error / largest : error;
}

}  // namespace gradshare::train

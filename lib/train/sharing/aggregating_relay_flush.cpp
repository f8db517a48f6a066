// sharing/aggregating_relay_flush.cpp: AggregatingRelay's flush rounds (aggregating_relay.h).
#include <algorithm>

#include "codec/exact.h"
#include "core/errors.h"
#include "train/sharing/aggregating_relay.h"
#include "train/sharing/staleness.h"

namespace gradshare::train {

std::uint64_t AggregatingRelay::begin_round() {
  GS_CHECK(round_complete(round_), "flush round " + std::to_string(round_ + 1) +
                                       " begun before round " + std::to_string(round_) +
                                       " completed");
  return ++round_;
}

bool AggregatingRelay::round_complete(std::uint64_t round) const {
  if (round_ < round) return false;
  for (const Link& link : links_)
    if (link.finals_sent < round || link.finals_received < round) return false;
  return true;
}

bool AggregatingRelay::final_due(std::size_t link) const {
  const std::uint64_t closing = links_[link].finals_sent + 1;
  if (round_ < closing) return false;
  for (std::size_t l = 0; l < links_.size(); ++l)
    if (l != link && links_[l].finals_received < closing) return false;
  return true;
}

void AggregatingRelay::encode_final(std::size_t link, std::uint32_t origin, std::uint64_t& seq,
                                    std::size_t max_bytes,
                                    std::vector<std::vector<std::uint8_t>>& out) {
  GS_CHECK(final_due(link), "a final message on link " + std::to_string(link) + " not due");
  Link& l = links_[link];
  const auto residual = l.encoder.residual();
  const std::size_t before = out.size();
  const auto carried =
      codec::encode_exact_pieces(residual, stamp(link, origin, seq + 1, 0, 0), kFlagFinal,
                                 max_bytes, out);
  seq += out.size() - before;
  for (const std::uint32_t i : carried) {
    if (check_) l.sent[i] += residual[i];
    residual[i] = 0.0f;
  }
  for (const std::uint32_t i : l.candidates) l.is_candidate.erase(i);
  l.candidates.clear();
  ++l.finals_sent;
  sent(link, 0.0);
}

}  // namespace gradshare::train

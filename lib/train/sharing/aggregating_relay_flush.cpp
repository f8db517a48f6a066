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
  GS_CHECK(max_bytes >= codec::kHeaderBytes + codec::kExactEntryBytes,
           "message limit of " + std::to_string(max_bytes) + " bytes holds no exact entry");
  Link& l = links_[link];
  const auto residual = l.encoder.residual();
  std::vector<std::uint32_t> nonzero;
  for (std::size_t i = 0; i < residual.size(); ++i)
    if (residual[i] != 0.0f) nonzero.push_back(static_cast<std::uint32_t>(i));
  const std::size_t per_message = (max_bytes - codec::kHeaderBytes) / codec::kExactEntryBytes;
  std::size_t begin = 0;
  do {
    const std::size_t end = std::min(nonzero.size(), begin + per_message);
    const bool last = end == nonzero.size();
    const std::span<const std::uint32_t> piece(nonzero.data() + begin, end - begin);
    out.emplace_back();
    codec::encode_exact(residual, piece, stamp(link, origin, ++seq, 0, last ? kFlagFinal : 0u),
                        out.back());
    for (const std::uint32_t i : piece) {
      if (check_) l.sent[i] += residual[i];
      residual[i] = 0.0f;
    }
    begin = end;
  } while (begin < nonzero.size());
  for (const std::uint32_t i : l.candidates) l.is_candidate[i] = 0;
  l.candidates.clear();
  ++l.finals_sent;
  sent(l, 0.0);
}

}  // namespace gradshare::train

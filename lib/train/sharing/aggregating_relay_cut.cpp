// sharing/aggregating_relay_cut.cpp: AggregatingRelay's checkpoint cuts (aggregating_relay.h).
#include "codec/exact.h"
#include "core/errors.h"
#include "train/sharing/aggregating_relay.h"
#include "train/sharing/staleness.h"

namespace gradshare::train {

std::uint64_t AggregatingRelay::begin_cut() {
  GS_CHECK(cut_complete(cut_), "checkpoint cut " + std::to_string(cut_ + 1) + " begun before cut " +
                                   std::to_string(cut_) + " completed");
  return ++cut_;
}

bool AggregatingRelay::marker_due() const {
  if (!parent_ || markers_sent_ >= cut_) return false;
  for (std::size_t l = 0; l < links_.size(); ++l)
    if (l != *parent_ && links_[l].markers_received < cut_) return false;
  return true;
}

void AggregatingRelay::encode_marker(std::uint32_t origin, std::uint64_t seq,
                                     std::vector<std::uint8_t>& out) {
  GS_CHECK(marker_due(), "a checkpoint marker not due");
  // No entries: the residual only gives the message its parameter count.
  codec::encode_exact(links_[*parent_].encoder.residual(), {},
                      stamp(*parent_, origin, seq, 0, kFlagMarker), out);
  ++markers_sent_;
}

void AggregatingRelay::release_cut() {
  GS_CHECK(cut_complete(cut_),
           "checkpoint cut " + std::to_string(cut_) + " released before it completed");
  released_cut_ = cut_;
}

bool AggregatingRelay::cut_complete(std::uint64_t cut) const {
  if (cut_ < cut) return false;
  if (parent_) return markers_sent_ >= cut;
  for (const Link& link : links_)
    if (link.markers_received < cut) return false;
  return true;
}

}  // namespace gradshare::train

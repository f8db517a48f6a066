#include "sim/state_collection.h"

#include <algorithm>

namespace gradshare::sim {
namespace {

// Control-channel framing of a state piece and the size of its acknowledgement (protocol.h).
constexpr std::size_t kStatePieceHeaderBytes = 32;
constexpr std::size_t kStateAckBytes = 16;

}  // namespace

StateCollection::StateCollection(const EventSetup& setup, VirtualNetwork& network)
    : setup_(setup),
      network_(network),
      left_(static_cast<std::size_t>(setup.tree.size()), 0),
      due_(left_.size(), kNever),
      step_ends_(left_.size()) {}

void StateCollection::start(double clock) {
  start_ = end_ = clock;
  for (std::size_t r = 1; r < left_.size(); ++r) {
    left_[r] = setup_.state_bytes;
    due_[r] = clock;
  }
}

bool StateCollection::ongoing() const {
  if (!started()) return false;
  for (std::size_t r = 1; r < left_.size(); ++r)
    if (left_[r] > 0 || network_.clock(static_cast<int>(r)) < end_) return true;
  return false;
}

void StateCollection::send_piece(int worker, double clock) {
  const auto w = static_cast<std::size_t>(worker);
  if (left_[w] == 0 || due_[w] > clock) return;
  const auto& node = setup_.placement.node;
  const std::size_t piece =
      node[w] == node[0] ? left_[w] : std::min(setup_.state_piece_bytes, left_[w]);
  left_[w] -= piece;
  const double arrival = network_.transfer(worker, 0, piece + kStatePieceHeaderBytes, clock);
  end_ = std::max(end_, arrival);
  // The acknowledgement leaves when the piece is in; stamping it on the master's link now would
  // hold everything the master sends before then behind it, so it is charged its wire time
  // alone (16 bytes).
  due_[w] = left_[w] > 0 ? arrival + setup_.link.seconds(kStateAckBytes, 1.0) : kNever;
}

void StateCollection::note_step(int worker, double clock) {
  if (started()) step_ends_[static_cast<std::size_t>(worker)].push_back(clock);
}

double StateCollection::step_seconds() const {
  double steps = 0;
  for (const auto& ends : step_ends_)
    for (double end : ends) steps += end <= end_ ? 1 : 0;
  const double workers = static_cast<double>(left_.size() - 1);
  return steps > 0 ? seconds() * workers / steps : seconds();
}

}  // namespace gradshare::sim

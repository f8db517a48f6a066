// sharing/checkpoint_cut.h: the master's parameters at a consistent cut, taken while every
// worker keeps training (a Chandy-Lamport snapshot that leans on updates being additive).
//
//   master                                           worker w
//   copies its parameters, then StateRequest    -->
//                                                    StateReply {cut = its last sent seq,
//                                               <--    its state}; trains on
//   every update it applies from then on is applied to the copy as well when it precedes its
//   origin's cut (seq <= cut), held while that cut is unknown (the update may arrive before
//   the reply: they travel on different channels), and left out after it
//   complete once every cut is known and every update up to it applied here
//
// Every update of w applied here before the copy was sent before w saw the request, so it
// precedes w's cut; every later one is sorted by its seq. The copy then holds exactly each
// worker's updates up to its cut, which with the residual and optimizer state w sent is
// everything w trained up to the cut, nothing twice. Origins without a cut (a worker gone
// since) are applied in full, as on the master.
//
// Aggregating (topology.aggregate) the master receives sums, not the workers' updates, and the
// relays hold some of them: each worker pauses at its next step, and markers move up the tree
// (sharing/aggregating_relay.h, checkpoint cuts); what a worker's link toward the master still
// owes goes in its reply's residual, and it trains on. The cut is a copy of the master's
// parameters once every child's marker is in; what a child sent after its marker waits until
// the copy is taken (UpdateExchange::release_cut).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "codec/decoder.h"
#include "train/sharing/update_exchange.h"

namespace gradshare::train {

class CheckpointCut {
 public:
  // `parameters`: the master's, before it asks any worker; `workers`: those asked.
  CheckpointCut(std::span<const float> parameters, const std::vector<int>& workers);
  // Aggregating: the cut is the relays' cut number `cut`; parameters() is empty until copy().
  CheckpointCut(std::uint64_t cut, const std::vector<int>& workers);

  // An update the master has just applied (to its own parameters).
  void applied(const codec::ParsedMessage& message);
  bool asked(int worker) const { return cuts_.count(worker) > 0; }
  // Whether worker w's cut is known (its reply has begun to arrive).
  bool has_cut(int worker) const {
    const auto cut = cuts_.find(worker);
    return cut != cuts_.end() && cut->second.has_value();
  }
  // Worker w's reply: its updates up to `sent_seq` belong to the cut.
  void set_cut(int worker, std::uint64_t sent_seq);
  // Every cut known and every update up to it applied by `exchange` (the master's); aggregating,
  // every reply begun and the copy taken.
  bool complete(const UpdateExchange& exchange) const;
  // Aggregating: every child's marker is in at `exchange` and the master's parameters, which are
  // the cut now, are not copied yet; copy() takes them.
  bool copy_due(const UpdateExchange& exchange) const;
  void copy(std::span<const float> parameters);
  // The parameters at the cut (complete() first).
  std::span<const float> parameters() const { return parameters_; }
  // The update IDs the cut holds, per origin: the cut for a worker asked, what `exchange` has
  // applied for any other origin.
  std::vector<std::uint64_t> version_vector(const UpdateExchange& exchange) const;

 private:
  void apply(const codec::ParsedMessage& message);

  std::vector<float> parameters_;
  std::optional<std::uint64_t> aggregated_cut_;
  std::map<int, std::optional<std::uint64_t>> cuts_;           // per worker asked
  std::map<int, std::vector<std::vector<std::uint8_t>>> held_;  // updates before its cut is known
};

}  // namespace gradshare::train

// sharing/aggregating_relay.h: a rank's side of the aggregating mesh (Deeplearning4j's "each
// node aggregates the updates received from all nodes connected to it"). Instead of forwarding
// every worker's message, a rank owes each of its links the sum of what reached it from
// elsewhere -- its own updates and what arrived on its other links -- keeps that sum in a relay
// residual per link, and sends it as one message per link: a link carries one message per round
// of its sources however many workers are behind it, each element once however many of them
// moved it.
//
//   contribute(source, message): message's values += relay residual of every link but `source`
//   encode(link):                every element of that residual that changed since it last
//                                fired leaves it whole, as one values message
//                                (Encoder::carry_values, codec/values.h: bfloat16 values, their
//                                rounding stays in the residual), the largest first up to the
//                                link's cap (what that holds back goes next)
//
// No threshold of its own, and a cap only where a link carries many workers: what a relay holds
// back has been applied on one side of the link and not on the other, the replicas disagree by
// it until it moves, nobody trains against it meanwhile, and what piles up goes in at once with
// the drain's flush. Relays that kept a worker's threshold machinery (an adaptive tau and a cap
// of as many workers' bands as the link carried, at most 8) held 1-3 (L2) of the shipped MLP's
// updates each, 5-10 times a worker's residual, on the 6-worker mesh of
// train_sharing_mesh_aggregate_7: its 2-epoch runs ended at 69.9-82.2 % (40 runs; 8 under 76 %)
// where relaying ends at 79.9-81.5 %; sending everything owed, 79.6-81.8 % (20 runs). Sending
// everything, though, a message carries the union of what its sources sent, so a link's traffic
// and a relay's CPU grow with the workers behind it until each message holds a value of every
// parameter (the shipped MLP's mesh 8 then fell under half speed from 14 workers on, whatever
// the link rate: docs/scaling.md). So a link that carries more workers than
// topology.aggregate_band (8) is capped at that many workers' message caps
// (encoding.max_message_sparsity at the workers' band of the step, warm-up included), the
// largest values first; any other link sends everything. A leaf then receives at most
// (fan-out + 1) x aggregate_band workers' caps per step whatever the tree's size. What a cap
// costs, 2 epochs of the shipped MLP on one host: 16 workers on a mesh of fan-out 4 (its links
// down carry 12-15 workers) ended at 84.75-85.95 % with a band of 8 (6 seeds), 84.65-85.20
// uncapped, 84.05-84.85 with a band of 4, relaying 85.30-86.20; on the 6-worker mesh (links down
// to a leaf carry 5) a band of 2 ended at 68.1-77.2 % (5 seeds): a link whose inflow is many
// times its cap holds back too long.
//
// Whole values, not quanta: a quantum of a relay's tau left a remainder below tau in every
// element that fired, and the sum of several workers' quanta can be many of the relay's; both
// waited in the relay residual. A values entry costs about 3.5 bytes where a worker's Rice-coded
// quantum costs about 1.5.
//
// Cost in the messages' entries, not the parameters: a link remembers which elements changed
// since they last fired (its candidates) and its encoder tests only those
// (codec::Encoder::encode_candidates); a fired element's rounding waits for its next change.
//
// When a link's message is due (due()):
//   - once every source but the link itself (each other link, and this rank's own training)
//     has contributed since the link's last message, sources known idle not waited for;
//   - or once content has been owed longer than `wait_seconds`, so that a quiet source never
//     holds the others back;
//   - or whenever the caller flushes (a worker held by the staleness bound), if anything was
//     contributed since its last message.
// A message's iteration is the smallest clock among its training sources' newest (each link's
// last message, this rank's own step): the receiver's staleness bound then counts the slowest
// worker behind the link that still trains. It is flagged idle only when every source that has
// spoken is. Each relay on
// the way holds an update a while, so the bound a worker keeps counts those hops
// (aggregated_staleness_bound).
//
// Flush rounds (the drain): each rank counts the rounds it has begun (its
// own training paused or over) and, per link, the round-closing ("final") messages sent and
// received. A link's final goes once the rank has begun the round and every other link's final
// of that round has arrived: it carries the link's whole relay residual as exact values
// (codec/exact.h, in pieces of the message limit, the last flagged kFlagFinal), so the residual
// ends at zero. Finals move in from the leaves and back out, as an echo over a tree does; when a
// rank has sent and received every link's final, everything trained before the round is in its
// replica, and once every rank has, the replicas are equal to rounding. Links stay FIFO, so
// whatever a link carries after its final belongs to the next round.
//
// Checkpoint cuts are cheaper than flush rounds: only the master's parameters must hold what was
// trained before the workers paused, and what their links toward the master still owe can travel
// in their checkpoint state instead. A rank that has begun a cut (its own training paused) and has
// every child link's marker sends a marker (an empty message flagged kFlagMarker) on its parent
// link. Its relay residual toward the parent is then what its subtree trained and the master
// lacks; the worker adds it to the residual in its checkpoint state, taken at once, and trains
// on. The master's cut is complete once every child's marker has arrived: links are FIFO, so
// everything sent up before a marker is in its parameters, which it copies then. What a child
// sends after its marker belongs to its state or to training after the cut, so its parent takes
// none of it in (deferring(link)) until its own part of the cut is done, the copy taken or its
// own state (release_cut()): taken in earlier, a parent would count it in its own state or the
// master in its copy, a second time.
//
// Nothing lost: the values a message carries leave the residual exactly (encoder.h), so
// contributed(link) == sent(link) + residual(link) to one rounding per element and addition
// (conservation_error()); the relay residual is never clipped or shaken up (it is other workers'
// content).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "codec/decoder.h"
#include "codec/encoder.h"
#include "codec/sparsity_band.h"
#include "config/experiment_config.h"
#include "topology/tree.h"

namespace gradshare::train {

// encoding.max_staleness plus two steps for each relay an update crosses on the tree's longest
// path (2 x depth - 1 between two leaves at the deepest level): a relay holds content until its
// other sources have spoken, and its neighbour hears of it with the relay's next message. With
// two steps per relay the event simulation's workers take 5-21 % longer per step than the flow
// model's pace (MLP, 32 and 64 workers; docs/scaling.md), one step held them more. 0 (no bound)
// stays 0.
std::int64_t aggregated_staleness_bound(std::int64_t max_staleness, int tree_depth);

// The ranks of each rank's subtree in `tree` (index = rank; 0 for a removed rank).
std::vector<int> subtree_sizes(const topology::Tree& tree);

// How many workers' training a message from `rank` to its neighbour `toward` carries: those on
// rank's side of that link (`sizes`: subtree_sizes(tree)); what the simulator's traffic model
// sizes an aggregate by.
int workers_behind(const topology::Tree& tree, const std::vector<int>& sizes, int rank,
                   int toward);

// A link's cap in workers' message caps: `most` (topology.aggregate_band) when it carries more
// workers than that (workers_behind), else 0, no cap (header comment; `most` 0: never a cap).
int aggregated_band(const topology::Tree& tree, const std::vector<int>& sizes, int rank, int toward,
                    int most);
// A link's cap in entries: `band` workers' message caps `epochs` into training (`encoding`: the
// workers'); every parameter for band 0.
std::size_t aggregate_cap(const config::EncodingConfig& encoding, std::size_t parameter_count,
                          int band, double epochs);

class AggregatingRelay {
 public:
  // links: how many links the rank has; the source index `links` is the rank's own training.
  // link_bands[l]: link l's cap in workers' message caps (aggregated_band; `encoding` is the
  // workers'); empty: no cap but the transport's.
  AggregatingRelay(const config::EncodingConfig& encoding, std::size_t parameter_count,
                   std::size_t links, double wait_seconds, bool trains,
                   std::vector<int> link_bands = {});
  // Where training is, in epochs: the links' caps follow the workers' (their warm-up).
  void set_training_progress(double epochs);

  std::size_t own_source() const { return links_.size(); }
  // Adds `message` (from link `source`, or own_source()) to every other link's residual, noting
  // its clock and idle flag. `now` in seconds of the caller's clock.
  void contribute(std::size_t source, const codec::ParsedMessage& message, double now);
  // Content this rank owes every link that is not a step of its training (a relay restart's:
  // what the master lacked of this subtree): added whole, never clipped; no clock changes.
  void owe_everywhere(std::span<const float> content, double now);
  // The rank's own training stopped or resumed (a rank that never trains: false).
  void set_training(bool trains) { trains_ = trains; }

  bool owes(std::size_t link) const { return links_[link].owed; }
  // Something was contributed to the link since its last message (what a flush waits for: what
  // stayed owed after a message, held back by the cap, waits for the link to be due).
  bool fresh(std::size_t link) const;
  bool due(std::size_t link, double now) const;
  // The link had no room: its wait starts again at `now` (not at once on every poll).
  void postpone(std::size_t link, double now);
  // The earliest time a link that owes becomes due by the wait; infinity when none owes.
  double next_deadline() const;

  // The link's owed elements that fire now as one message stamped {origin, seq, the sources'
  // smallest clock, epoch, idle flag} (see the header comment for which); the link's count of
  // contributions restarts. A fired element's bfloat16 rounding waits in the relay residual for
  // the element's next change; what the cap held back stays owed.
  codec::EncodeStats encode(std::size_t link, std::uint32_t origin, std::uint64_t seq,
                            std::uint32_t epoch, double now, std::vector<std::uint8_t>& out);
  // Largest message encode(link) can produce (for room on the link).
  std::size_t max_message_bytes(std::size_t link) const;
  void limit_message_bytes(std::size_t bytes);

  // Flush rounds (see above). begin_round(): this rank's own training is paused or over for the
  // next round (the previous one must be complete here); returns that round's number, from 1.
  std::uint64_t begin_round();
  std::uint64_t round() const { return round_; }
  // Every link's final of round `round` sent and received here.
  bool round_complete(std::uint64_t round) const;
  // The link's final of the current round can go: begun here, every other link's arrived.
  bool final_due(std::size_t link) const;
  // The link's whole relay residual as exact messages of at most `max_bytes`, the last one
  // flagged final; seq counts from `seq` (incremented per message).
  void encode_final(std::size_t link, std::uint32_t origin, std::uint64_t& seq,
                    std::size_t max_bytes, std::vector<std::vector<std::uint8_t>>& out);

  // Checkpoint cuts (see above). `parent`: the link toward the master (none at the master).
  void set_parent(std::optional<std::size_t> parent);
  std::optional<std::size_t> parent() const { return parent_; }
  // Everything contributed to the parent link since the relay started: what reached this rank
  // from all but its parent (its training, its children, what it owed at a restart), sent up or
  // still owed. A lost master's children hand it to the new master (sharing/takeover.h).
  std::span<const float> upward() const;
  // This rank's own training is paused for the next cut; returns its number, from 1.
  std::uint64_t begin_cut();
  // Begun here, every child link's marker in, this rank's not yet sent.
  bool marker_due() const;
  // The marker on the parent link (marker_due() first).
  void encode_marker(std::uint32_t origin, std::uint64_t seq, std::vector<std::uint8_t>& out);
  // Cut `cut` is complete here: the master has every child's marker, a worker has sent its own.
  bool cut_complete(std::uint64_t cut) const;
  // Whether what arrives on `link` now must wait: its marker of a cut this rank has not released.
  bool deferring(std::size_t link) const { return links_[link].markers_received > released_cut_; }
  // This rank's part of the cut is done (the master's copy, a worker's state): what its children
  // sent after their markers may be taken in (cut_complete(current cut) first).
  void release_cut();

  std::span<const float> residual(std::size_t link) const { return links_[link].encoder.residual(); }
  // Largest |contributed - sent - residual| over every link and element, relative to the
  // largest |contributed|: 0 up to rounding (the conservation check).
  double conservation_error() const;

 private:
  // Which elements are a link's candidates, a bit each: every contribution tests and sets one
  // per entry and link, and a byte each made that a second cache miss beside the residual's.
  class CandidateSet {
   public:
    explicit CandidateSet(std::size_t n) : words_((n + 63) / 64, 0) {}
    // Whether i was already in the set; it is now.
    bool insert(std::uint32_t i) {
      std::uint64_t& word = words_[i / 64];
      const std::uint64_t bit = std::uint64_t{1} << (i % 64);
      const bool had = (word & bit) != 0;
      word |= bit;
      return had;
    }
    void erase(std::uint32_t i) { words_[i / 64] &= ~(std::uint64_t{1} << (i % 64)); }

   private:
    std::vector<std::uint64_t> words_;
  };
  struct Link {
    codec::Encoder encoder;
    std::vector<float> contributed;  // kept for the conservation check, and on the parent link
    std::vector<float> sent;
    std::vector<bool> heard;  // sources that contributed since this link's last message
    std::vector<std::uint32_t> candidates;  // elements changed since they last fired
    CandidateSet is_candidate;
    bool owed = false;
    double owed_since = 0;
    std::uint64_t finals_sent = 0, finals_received = 0;
    std::uint64_t markers_received = 0;
  };
  struct Source {
    bool spoken = false;
    std::uint64_t clock = 0;
    bool idle = false;
  };

  // The {origin, seq, clock, epoch, flags} of a message on `link` (iteration and idle flag: see
  // the header comment).
  codec::MessageMeta stamp(std::size_t link, std::uint32_t origin, std::uint64_t seq,
                           std::uint32_t epoch, std::uint32_t flags) const;
  // A message has left the link: its heard sources start again.
  void sent(std::size_t link, double now);

  std::size_t parameter_count_;
  std::vector<Link> links_;
  std::vector<Source> sources_;  // per link, then own training
  // Adds the contribution in entries_ / values_ to every link but `source`'s.
  void add_to_links(std::size_t source, double now);
  std::vector<std::uint32_t> entries_;  // the contribution being added: its elements
  std::vector<float> values_;           // and their values
  double wait_seconds_;
  bool trains_;
  std::uint64_t round_ = 0;
  std::optional<std::size_t> parent_;
  std::uint64_t cut_ = 0, markers_sent_ = 0;
  std::uint64_t released_cut_ = 0;
  bool check_;
  double worker_cap_fraction_;    // a worker's cap, as a fraction of the parameters (the
  codec::BandScale worker_band_;  // links' caps: aggregate_cap) and its band's factor
  std::vector<int> link_bands_;
  double caps_band_ = -1;  // the worker band the links' caps were last set at
};

}  // namespace gradshare::train

// sharing/update_exchange.h: one replica's side of gradient sharing, independent of who trains.
//   - applies every encoded update exactly once: an update ID is (origin, seq); a version
//     vector (highest contiguous seq applied per origin) plus the few seqs applied above it
//     decides; duplicates are counted, never applied;
//   - relays each message to every link except the one it came from (star and tree alike), or,
//     aggregating (aggregate()), owes it to those links and sends each link one re-encoded sum
//     of what it is owed (sharing/aggregating_relay.h): the update IDs are then the links'
//     (origin = the sending neighbour, seq = that link's count);
//   - sends through a comm::Relay, whose per-link FIFO queues make back-pressure on one link
//     neither drop nor reorder anything;
//   - rejects malformed messages (bad bytes from the network) without crashing, and counts them;
//   - under fault tolerance, keeps its own 16 newest messages and the newest peer messages
//     within a byte budget (fault_tolerance.keep_bytes, however many workers there are), so
//     that after a process failure what was in flight on the abandoned data plane can be re-sent
//     (resync); a replica that lacks an update no longer kept anywhere gets a whole state
//     instead (update_resync.h). Without fault tolerance nothing is copied;
//   - parses (and checksums) each message once, on one accept path for the data plane's
//     messages and the resync's alike.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "codec/decoder.h"
#include "codec/message.h"
#include "comm/data_plane.h"
#include "comm/relay.h"
#include "config/experiment_config.h"
#include "topology/tree.h"
#include "train/sharing/aggregating_relay.h"

namespace gradshare::train {

struct ExchangeStats {
  std::uint64_t applied = 0;     // messages applied to the parameters (own ones included)
  std::uint64_t duplicates = 0;  // messages seen again and not applied
  std::uint64_t rejected = 0;    // malformed messages dropped
  std::uint64_t relayed = 0;     // message copies forwarded to other links
  std::uint64_t published = 0;   // own messages sent
  std::uint64_t bytes_published = 0;
  std::size_t kept_bytes_peak = 0;  // of the peer messages kept for a resync
  std::uint64_t aggregated = 0;     // aggregate messages sent (aggregating), finals excluded
  std::uint64_t aggregated_bytes = 0;
  std::uint64_t flushed = 0;        // finals sent (in pieces) and checkpoint markers
  std::uint64_t flushed_bytes = 0;
};

// Which update IDs a replica has applied: per origin, every seq up to upto[o] and those in
// above[o]. Travels in recovery messages.
struct AppliedIds {
  std::vector<std::uint64_t> upto;
  std::vector<std::vector<std::uint64_t>> above;

  bool contains(int origin, std::uint64_t seq) const;
  std::uint64_t highest(int origin) const;
  // How many IDs: every origin's seqs up to upto[o] and those above.
  std::size_t count() const;
  std::vector<std::uint8_t> serialize() const;
  static AppliedIds deserialize(std::span<const std::uint8_t> bytes);
};

class UpdateExchange {
 public:
  // keep_bytes: the budget of kept peer messages (fault_tolerance.keep_bytes); nullopt keeps
  // nothing (no resync can happen).
  UpdateExchange(comm::DataPlane& plane, int self_rank, int ranks, std::size_t parameter_count,
                 std::optional<std::size_t> keep_bytes);

  // After a failure repair: sends on `plane` from now on. Messages queued for the old links are
  // dropped: the resync hands every replica what it lacks (aggregating: restart_aggregation).
  void attach(comm::DataPlane& plane);

  // From now on an applied message is not forwarded: it is owed to every other link and
  // send_aggregates() sends each link one message for all it is owed (aggregating_relay.h).
  // trains: whether this rank publishes updates of its own; `tree`: the job's (each link's
  // band, at most `band` workers, topology.aggregate_band, 0 for none; the link toward the
  // master).
  void aggregate(const config::EncodingConfig& encoding, double wait_seconds, int band, bool trains,
                 const topology::Tree& tree);
  bool aggregating() const { return aggregator_.has_value(); }
  // Aggregating: where training is, in epochs (the links' caps follow the workers' warm-up).
  void set_training_progress(double epochs);
  // Aggregating: this rank's parent on the tree its relay (re)started on (-1: the master).
  int relay_parent() const { return relay_parent_; }
  // Aggregating: sends every link's message that is due at `now` (flush: every link contributed
  // to since its last message) and has room, and every link's final and the cut's marker once due (queued
  // behind what the link has queued); returns the messages sent.
  std::size_t send_aggregates(double now, bool flush);
  // Aggregating: this rank's training is paused or over for the next flush round
  // (AggregatingRelay::begin_round); returns its number.
  std::uint64_t begin_flush() { return aggregator_->begin_round(); }
  // Aggregating: round `round` is complete here and its finals have left the queues.
  bool flush_complete(std::uint64_t round) const {
    return aggregator_->round_complete(round) && !has_backlog();
  }
  // Aggregating, a checkpoint's cut (AggregatingRelay::begin_cut): begun, complete here. What
  // a child sent after its marker waits (AggregatingRelay::deferring) until release_cut(), which
  // takes it in now, as poll would have; returns the messages taken in.
  std::uint64_t begin_cut() { return aggregator_->begin_cut(); }
  bool cut_complete(std::uint64_t cut) const { return aggregator_->cut_complete(cut); }
  std::size_t release_cut(std::span<float> parameters, double now);
  // Aggregating, after a repair (sharing/recovery.h, RelayRestart), before
  // restart_aggregation (whose relay then owes it everywhere, AggregatingRelay::owe_everywhere):
  // adds to `into` what the link toward the old parent still owes and the
  // kept messages sent on it past `parent_applied` (the newest that parent applied; nullopt: it
  // died, and what it was sent died with it). Returns the messages added back and how many of
  // those the parent lacked were no longer kept (lost).
  struct Unconfirmed {
    std::size_t added_back = 0;
    std::uint64_t not_kept = 0;
  };
  Unconfirmed take_unconfirmed(std::optional<std::uint64_t> parent_applied, std::span<float> into);
  // Aggregating, after a repair (attach first): a fresh relay on the repaired plane and `tree`;
  // link counts, applied IDs, relay residuals, kept and deferred messages start again (the
  // replicas start again from the master's parameters). Counts of applications carry on.
  void restart_aggregation(const topology::Tree& tree);
  AggregatingRelay& aggregator() { return *aggregator_; }
  const AggregatingRelay& aggregator() const { return *aggregator_; }

  // Delivers inbound messages: applies new ones to `parameters` and queues them for relay;
  // then pushes queued messages out as far as the links allow. Returns messages received.
  // `now`: the caller's clock in seconds (the aggregation's wait).
  std::size_t poll(std::span<float> parameters, double now = 0);
  // True when an own message of `bytes` can go out now on every link (queues empty, room);
  // aggregating, always (the links' residuals take it).
  bool can_publish(std::size_t bytes) const;
  // Applies this replica's own message to `parameters` and sends it on every link (aggregating:
  // owes it to every link).
  void publish(std::span<const std::uint8_t> message, std::span<float> parameters,
               double now = 0);
  // Messages still queued for some link.
  bool has_backlog() const;
  // Links of this replica in the tree (parent and children).
  std::size_t link_count() const { return plane_->links().size(); }
  // Called with every peer message applied here (poll and deliver), e.g. to measure staleness
  // (staleness.h) or to build a checkpoint's cut (checkpoint_cut.h).
  void on_applied(std::function<void(const codec::ParsedMessage&)> observer) {
    observer_ = std::move(observer);
  }

  // Applies a message that arrived outside the data plane (resync) unless already applied;
  // not relayed. False (and last_error()) for a malformed message.
  bool deliver(std::span<const std::uint8_t> message, std::span<float> parameters);
  AppliedIds applied_ids() const;
  // A replacement takes a snapshot's IDs as applied (its parameters already contain them).
  void restore(const AppliedIds& ids);
  // A survivor takes over another replica's whole state (the caller copies the parameters):
  // its IDs become the applied ones; updates applied twice so far stay counted.
  void adopt(const AppliedIds& ids);
  // Kept messages whose IDs `other` lacks, up to highest[o] per origin (for the resync).
  std::vector<std::vector<std::uint8_t>> kept_missing_from(const AppliedIds& other) const;
  // The kept message (origin, seq), if still kept.
  std::optional<std::span<const std::uint8_t>> kept(int origin, std::uint64_t seq) const;

  // Highest contiguous seq applied per origin rank.
  const std::vector<std::uint64_t>& version_vector() const { return applied_upto_; }
  bool has_applied(int origin, std::uint64_t seq) const;
  std::uint64_t highest_applied(int origin) const;
  // Applications beyond the distinct update IDs applied: 0 unless an update was applied twice
  // (what the fault-tolerance tests assert, the replacements' snapshots included).
  std::int64_t applied_twice() const;
  const ExchangeStats& stats() const { return stats_; }
  const std::string& last_error() const { return last_error_; }

 private:
  enum class Accepted { kApplied, kDuplicate, kRejected };
  // Validates, deduplicates, applies and keeps one message that came from rank `from` on the
  // data plane (kResync: in a resync), naming it so in the error of a malformed one.
  static constexpr int kResync = -1;
  Accepted accept(std::span<const std::uint8_t> message, std::span<float> parameters, int from,
                  codec::ParsedMessage& parsed);
  void reject(int from, const std::string& error);
  // Records (origin, seq) as applied; false if it already was.
  bool mark_applied(int origin, std::uint64_t seq);
  std::uint64_t distinct_applied() const;
  void keep(int origin, std::uint64_t seq, std::span<const std::uint8_t> message);
  // Aggregating: sends link index `l`'s message `seq`, kept when that is the parent link.
  void send_on_link(std::size_t l, std::uint64_t seq, std::span<const std::uint8_t> message);
  // poll's work on one message from `from` (aggregating: held back while its link defers).
  void take(int from, std::span<const std::uint8_t> message, std::span<float> parameters,
            double now);

  comm::DataPlane* plane_;
  int self_;
  std::size_t parameter_count_;
  std::optional<std::size_t> keep_bytes_;
  std::vector<std::uint64_t> applied_upto_;
  std::vector<std::set<std::uint64_t>> applied_above_;
  std::optional<comm::Relay> relay_;
  std::optional<AggregatingRelay> aggregator_;
  struct Aggregation {  // aggregate()'s arguments, for restart_aggregation
    config::EncodingConfig encoding;
    double wait_seconds = 0;
    int band = 0;
    bool trains = false;
    double epochs = 0;  // set_training_progress's
  };
  std::optional<Aggregation> aggregation_;
  std::uint64_t distinct_before_restarts_ = 0;  // update IDs applied before the relay restarted
  std::vector<std::uint64_t> link_seq_;  // aggregating: messages sent per link
  int relay_parent_ = -1;
  std::vector<std::uint8_t> aggregate_;  // aggregating: the message being sent
  std::vector<std::vector<std::uint8_t>> finals_;  // aggregating: a link's final, in pieces
  struct Deferred {
    int from;
    std::vector<std::uint8_t> message;
  };
  std::vector<Deferred> deferred_;  // aggregating: arrived after a child's marker, in order
  // Kept messages, oldest first: what is in flight at a failure is among the newest. Aggregating,
  // kept_own_ holds the messages sent on the link toward the master (origin: this rank, seq:
  // the link's).
  struct Kept {
    int origin;
    std::uint64_t seq;
    std::vector<std::uint8_t> bytes;
  };
  std::deque<Kept> kept_own_;
  std::deque<Kept> kept_peers_;
  std::size_t kept_bytes_ = 0;  // under keep_bytes: kept_peers_ (aggregating: kept_own_)
  ExchangeStats stats_;
  std::string last_error_;
  std::function<void(const codec::ParsedMessage&)> observer_;
};

}  // namespace gradshare::train

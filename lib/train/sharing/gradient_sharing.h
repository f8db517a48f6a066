// sharing/gradient_sharing.h: asynchronous threshold-encoded gradient sharing (the default strategy).
//
// Protocol (rank 0 = master, ranks 1..W = workers; control messages (sharing/protocol.h) are
// two-sided and typed, encoded updates travel on the data plane along the links of the tree):
//
//  worker                                         master
//  ------                                         ------
//  PartitionRequest {finished previous}       --> scheduler.complete / next
//                                             <-- PartitionGrantReply {epoch, partition}
//  per minibatch: poll data plane (apply new      polls data plane: applies every update once,
//    updates, relay), gradient -> updater ->        relays it to every other link
//    residual -> encode -> publish (own message    evaluates the test set when an epoch's
//    applied locally, sent on every link);          partitions are all done, logs, checkpoints
//    when a link lacks room the update stays
//    in the residual (back-pressure)
//  SharingReport {deltas} every
//    logging.every_steps steps             -->  aggregates, prints the progress line
//  no grant left: SharingDone {last seq}   -->  when every worker is done:
//                                          <--  SharingDrainTarget {last seq per origin}
//  polls until its version vector reaches
//  every target and its queues are empty:
//  DrainedReport {parameters}              -->  model-equivalence check against its own copy
//                                          <--  Shutdown (after every worker drained)
//  exits                                          final evaluation, model.h5, summary
//
// The update ID is (origin rank, seq), seq = 1, 2, ... per origin; every replica applies an ID
// at most once (UpdateExchange). Replicas start from identical parameters (same seed), so after
// the drain every replica has applied the same set of updates and holds the same model up to
// floating-point summation order: the check asserts relative max-norm <= 1e-5.
// Under `mpirun --with-ft ulfm` a failed worker is replaced or dropped and the replicas are
// brought back to the same applied updates before training goes on: sharing/recovery.h.
// With topology.aggregate every relay (the master, a mesh's inner workers) sends each link one
// re-encoded sum instead (sharing/aggregating_relay.h); checkpoints are then cuts (markers up the
// tree), the drain a flush round after which the replicas are the same to rounding, and a failed
// rank restarts the relays from the master's parameters (a lost master's from its children's
// sums: sharing/takeover.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "topology/tree.h"
#include "runtime/run_context.h"

namespace gradshare::train {

int run_gradient_sharing(runtime::RunContext& context);

// The config a worker steps with, one of `workers`: under combine: sum it clips as one of the
// workers whose updates add up (one_of_summed_workers); under encoding.momentum: compensate,
// its momentum lowered by the momentum asynchronous workers imply (with_compensated_momentum).
config::ExperimentConfig sharing_worker_config(const config::ExperimentConfig& config,
                                               int workers);
// The master's line saying what the workers' momentum is, empty when as set.
std::string sharing_momentum_line(const config::ExperimentConfig& config, int workers);

// The staleness bound the workers keep: encoding.max_staleness, and aggregating
// (topology.aggregate) two steps more per relay on the tree's longest path
// (aggregated_staleness_bound).
std::int64_t sharing_staleness_bound(const config::ExperimentConfig& config,
                                     const topology::Tree& tree);
// Whether the job's relays aggregate (topology.aggregate; auto: on a mesh).
bool sharing_aggregates(const config::ExperimentConfig& config, const topology::Tree& tree);

// Relative max-norm difference max|a - b| / max|b| (0 when both are zero).
double relative_max_difference(std::span<const float> a, std::span<const float> b);
inline constexpr double kEquivalenceTolerance = 1e-5;
// The model-equivalence check's tolerance. Relaying, replicas apply the same messages in other
// orders: kEquivalenceTolerance (1e-7 is what runs show). Aggregating, each applies other
// messages (its links' sums) of the same total, so the float32 rounding of its parameters walks
// its own way: about 2^-24 x sqrt(messages applied) per element, the largest of 1e5 elements a
// few times that (2.6e-5 of max|p| measured after 15 epochs of the MLP, 8,000 messages applied).
// The bound is 8 times that, at least kEquivalenceTolerance; a message lost or applied twice
// moves an element by a quantum, about 1e-2 of max|p|, which it still catches.
double equivalence_tolerance(bool aggregating, double most_messages_applied);

}  // namespace gradshare::train

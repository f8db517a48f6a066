// downpour/strategy.h: Downpour SGD (DistBelief) with a sharded parameter server.
//
// Ranks 0..K-1 serve one shard each (downpour.servers = K; rank 0 is also the master), ranks
// K..size-1 are workers. Pushes, acks and pulls travel over one-sided RMA or two-sided
// messages, chosen per job (downpour/transport.h); the shared protocol is in
// downpour/protocol.h, the workers' half in downpour/link.h, the servers' in downpour/server.h.
// Below, the RMA transport's operations, with the two-sided ones in brackets.
//
//  worker                                     server s (rank s)        master (rank 0)
//  ------                                     -----------------        ---------------
//  PartitionRequest {finished previous} -------------------------------> scheduler
//                                         <------------------------------ PartitionGrantReply
//  every step: local updater step on the
//    local replica, update also summed into
//    the accumulator
//  every n_push steps, per shard, if the
//    previous push was acknowledged and no
//    pull is in flight (else
//    keep accumulating, never wait):
//    Put payload + slot header, and at
//    the next step flush + Put seq
//    [one push message]                  --> polls slots (back-off) [probes each
//                                            worker in turn], applies in
//                                            arrival order with its optimizer
//                                            (lr times the push's weight),
//                                            version += 1 under the seqlock,
//                                   <------- Put ack word (seq, age) [ack message]
//  every n_pull steps (overdue ones before
//    a push), per shard, once its
//    last push is acknowledged: Get the
//    shard under the seqlock [request; the
//    server answers in its poll with the
//    version and a copy], overlapped with
//    the next step; local shard = pulled -
//    accumulator - encoder residual
//  DownpourReport every
//    logging.every_steps steps -------------------------------------------> progress line;
//                                                                            end of an epoch's
//                                                                            partitions: reads
//                                                                            every shard,
//                                                                            evaluates
//  no partition left: wait for acks, push
//    everything left (dense), wait for its
//    ack, DownpourDone {report} ------------------------------------------> after every one:
//                                         <------------------------------ DownpourFinalPull
//  final pull of every shard (servers are quiet now),
//    DownpourFinalModel {parameters} -------------------------------------> compares each with
//                                                                            the shards
//                                                                            (bit-exact), final
//                                                                            evaluation, model.h5,
//                                         <------------------------------ Shutdown (to workers
//  exits                                      exits <------------------- and servers)
//
// Staleness: a push carries the shard version the worker last pulled; the server reports the
// push's age (the other workers' pushes applied since) in the ack and workers report mean and
// maximum.
#pragma once

#include "runtime/run_context.h"

namespace gradshare::train {

int run_downpour(runtime::RunContext& context);

}  // namespace gradshare::train

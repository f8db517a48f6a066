// tags.h: the tag of every control message (train/messages.h and the strategies' protocol
// headers give each its payload), and their names for messages and errors. lib/comm carries a
// tag as a number it does not interpret (comm::Tag): a new message is added here, beside its
// payload, and nowhere in lib/comm.
#pragma once

#include "comm/control_channel.h"

namespace gradshare::train {

namespace tags {
inline constexpr comm::Tag kPartitionRequest{1};
inline constexpr comm::Tag kPartitionGrant{2};
inline constexpr comm::Tag kHeartbeat{3};
inline constexpr comm::Tag kShutdown{4};
inline constexpr comm::Tag kStateRequest{5};
inline constexpr comm::Tag kRecovery{6};
// recovery: the master asks for updates it missed, by ID
inline constexpr comm::Tag kResyncFetch{7};
inline constexpr comm::Tag kResyncUpdates{8};  // recovery: encoded updates a replica missed
inline constexpr comm::Tag kResyncDone{9};  // recovery: the master's go-ahead after the resync
// a worker's loss exploded (divergence guard): the step and the reason
inline constexpr comm::Tag kDiverged{10};
// early stopping: the synchronous workers end training at their next round
inline constexpr comm::Tag kFinish{11};
// recovery: the master asks a replica for its whole state
inline constexpr comm::Tag kResyncStateFetch{12};
// recovery: a replica's whole state (parameters and applied IDs)
inline constexpr comm::Tag kResyncState{13};
inline constexpr comm::Tag kPeakMemory{14};  // at the end: a rank's peak memory
inline constexpr comm::Tag kPeakMemoryRequest{15};
inline constexpr comm::Tag kStart{16};  // master -> worker: where training starts
inline constexpr comm::Tag kEpochModel{17};  // a synchronous worker's model at an epoch's end
inline constexpr comm::Tag kAllreduceProgress{18};
inline constexpr comm::Tag kAllreduceSnapshot{19};
inline constexpr comm::Tag kAllreduceFinal{20};
inline constexpr comm::Tag kAveragingReport{21};
inline constexpr comm::Tag kAveragingSnapshot{22};
inline constexpr comm::Tag kAveragingDone{23};
inline constexpr comm::Tag kSharingReport{24};
inline constexpr comm::Tag kSharingState{25};
inline constexpr comm::Tag kSharingDone{26};
inline constexpr comm::Tag kSharingDrainTarget{27};
inline constexpr comm::Tag kSharingDrained{28};
inline constexpr comm::Tag kReplacementStart{29};
inline constexpr comm::Tag kDownpourReport{30};
inline constexpr comm::Tag kDownpourState{31};
inline constexpr comm::Tag kDownpourDone{32};
inline constexpr comm::Tag kDownpourFinalPull{33};
inline constexpr comm::Tag kDownpourFinalModel{34};
// recovery: the master tells a synchronous worker where the run stands
inline constexpr comm::Tag kGroupResume{35};
// recovery: a parameter server tells a worker the last push it applied
inline constexpr comm::Tag kDownpourResync{36};
// recovery: the master tells a Downpour worker what it has from it
inline constexpr comm::Tag kDownpourResume{37};
// at the end: a parameter server's peak memory and the seqs it applied
inline constexpr comm::Tag kDownpourServerEnd{38};
// a sharing worker's checkpoint state, one piece at a time
inline constexpr comm::Tag kStateChunk{39};
inline constexpr comm::Tag kStateChunkAck{40};  // the master has a piece: the next may go
// recovery, aggregating: the master's model and what a survivor's old parent took in
inline constexpr comm::Tag kRelayRestart{41};
// recovery, Downpour: a lost server's shard rebuilt (downpour/shard_rebuild.h): the master's
// snapshot of it, each worker's pushes since, and the master telling workers what a snapshot holds
inline constexpr comm::Tag kDownpourShardRebuild{42};
inline constexpr comm::Tag kDownpourPushLog{43};
inline constexpr comm::Tag kDownpourSnapshotTaken{44};
// a Downpour worker's pushes kept for the rebuild fill half their budget: snapshots wanted
inline constexpr comm::Tag kDownpourSnapshotWanted{45};
// a lost server's replacement could not rebuild the shard: why
inline constexpr comm::Tag kDownpourRebuildFailed{46};
// a Downpour master lost: each worker tells the new master the partitions it knows done
inline constexpr comm::Tag kDownpourTakeoverStatus{47};
// a sharing master lost, aggregating: a new master asks its old children what they sent it
inline constexpr comm::Tag kRelayUpwardFetch{48};
inline constexpr comm::Tag kRelayUpward{49};
// a sharing checkpoint: the master asks each worker for its state, written to its part file
inline constexpr comm::Tag kCheckpointRequest{50};
}  // namespace tags

inline constexpr int kTagCount = 50;
static_assert(kTagCount <= comm::kLastTag, "comm carries tags up to comm::kLastTag");

// "partition request", "heartbeat", ...; "tag N" for a number no message has.
std::string tag_name(comm::Tag tag);

}  // namespace gradshare::train

// control_channel_test.cpp: the MPI control channel, MPI error reporting, graph communicators and the
// data-plane setup deadline on real ranks (run with 3 or more).
//   mpirun -n 3 mpi_control_channel_test
#include "comm/control_channel.h"
#include "comm/mpi/mpi_control_channel.h"

#include <mpi.h>

#include <cstdio>
#include <string>

#include "comm/byte_io.h"
#include "comm/mpi/communicator.h"
#include "comm/mpi/graph_comm.h"
#include "comm/mpi/mpi_error.h"
#include "comm/mpi/rma_data_plane.h"
#include "core/errors.h"
#include "mpi_check.h"
#include "../unit/comm/test_tags.h"
#include "topology/tree.h"

namespace {

using namespace gradshare;
namespace test_tags = gradshare::comm::test_tags;

void round_trip(comm::ControlChannel& control, mpi_testing::Checker& check) {
  if (control.rank() == 1) {
    comm::ByteWriter writer;
    writer.put<std::int64_t>(7).put_string("need work");
    control.send(0, test_tags::kPartitionRequest, writer.bytes());
    comm::ControlMessage grant = control.receive(0, test_tags::kPartitionGrant, "partition grant");
    comm::ByteReader reader(grant.payload, "partition grant");
    check.expect(reader.get<std::int32_t>() == 42, "grant payload");
    reader.expect_end();
  } else if (control.rank() == 0) {
    comm::ControlMessage request =
        control.receive(comm::kAnySource, test_tags::kPartitionRequest, "partition request");
    check.expect(request.source == 1, "request source " + std::to_string(request.source));
    check.expect(request.tag == test_tags::kPartitionRequest, "request tag");
    comm::ByteReader reader(request.payload, "partition request");
    check.expect(reader.get<std::int64_t>() == 7, "request id");
    check.expect(reader.get_string() == "need work", "request text");
    comm::ByteWriter writer;
    writer.put<std::int32_t>(42);
    control.send(request.source, test_tags::kPartitionGrant, writer.bytes());
  }
  control.flush();
}

void tag_selection(comm::ControlChannel& control, mpi_testing::Checker& check) {
  if (control.rank() == 2) {
    std::uint8_t byte = 1;
    control.send(0, test_tags::kSharingReport, {&byte, 1});
    control.send(0, test_tags::kHeartbeat, {&byte, 1});
    control.flush();
  } else if (control.rank() == 0) {
    // The heartbeat is picked out ahead of the metrics message sent before it.
    comm::ControlMessage beat = control.receive(2, test_tags::kHeartbeat, "heartbeat");
    check.expect(beat.payload.size() == 1, "heartbeat payload");
    comm::ControlMessage any = control.receive(comm::kAnySource, test_tags::kSharingReport, "metrics");
    check.expect(any.source == 2 && any.tag == test_tags::kSharingReport, "metrics from rank 2");
    check.expect(!control.try_receive().has_value(), "nothing else queued");
  }
}

void timeouts(comm::ControlChannel& control, mpi_testing::Checker& check) {
  if (control.rank() != 0) return;
  try {
    control.receive(1, test_tags::kPartitionGrant, "partition grant", 0.5);
    check.expect(false, "receive without a sender returned");
  } catch (const core::RuntimeError& e) {
    check.expect_contains(e.what(), "timed out after 0.5 s waiting for rank 1: partition grant");
  }
  try {
    control.receive(comm::kAnySource, test_tags::kSharingDrained, "drained", 0.2);
    check.expect(false, "receive from any rank without a sender returned");
  } catch (const core::RuntimeError& e) {
    check.expect_contains(e.what(), "timed out after 0.2 s waiting for any rank: drained");
  }
}

void mpi_errors(int size, mpi_testing::Checker& check) {
  comm::Communicator world = comm::Communicator::duplicate(MPI_COMM_WORLD);
  int value = 0;
  try {
    comm::check_mpi(MPI_Send(&value, 1, MPI_INT, size + 5, 0, world.get()), "MPI_Send");
    check.expect(false, "MPI_Send to a missing rank succeeded");
  } catch (const comm::MpiError& e) {
    check.expect_contains(e.what(), "MPI_Send failed: ");
    check.expect(e.error_class() == MPI_ERR_RANK, "error class " + std::to_string(e.error_class()));
    check.expect(!e.is_process_failure(), "a bad rank is not a process failure");
  }
}

void graph(int rank, int size, mpi_testing::Checker& check) {
  topology::Tree tree = topology::build_mesh(size, 2, size);
  comm::Communicator graph = comm::make_graph_comm(MPI_COMM_WORLD, tree);
  check.expect(graph.rank() == rank, "graph communicator reordered ranks");
  int kind = MPI_UNDEFINED;
  MPI_Topo_test(graph.get(), &kind);
  check.expect(kind == MPI_DIST_GRAPH, "not a distributed graph");
  check.expect(comm::graph_neighbors(graph.get()) == tree.links(rank), "neighbours != links");
  // A neighbourhood collective over the graph reaches exactly the links.
  std::vector<int> links = tree.links(rank);
  std::vector<int> got(links.size() + 1, -1);
  MPI_Neighbor_allgather(&rank, 1, MPI_INT, got.data(), 1, MPI_INT, graph.get());
  got.resize(links.size());
  check.expect(got == links, "neighbour allgather");
  try {
    comm::make_graph_comm(MPI_COMM_WORLD, topology::build_plain(size + 1));
    check.expect(false, "a tree of the wrong size was accepted");
  } catch (const core::RuntimeError& e) {
    check.expect_contains(e.what(), "ranks but the communicator");
  }
}

void setup_deadline(int rank, mpi_testing::Checker& check) {
  // Rank 0 claims rank 1 as a link, rank 1 does not: rank 0's setup must time out naming it.
  std::vector<int> links;
  if (rank == 0) links = {1};
  try {
    comm::RmaDataPlane plane(MPI_COMM_WORLD, links, 4096, 0.5);
    check.expect(rank != 0, "setup with a one-sided link succeeded");
    plane.abandon();  // rank 0 never reaches the collective free
  } catch (const core::RuntimeError& e) {
    check.expect(rank == 0, std::string("unexpected: ") + e.what());
    check.expect_contains(e.what(), "timed out after 0.5 s waiting for rank 1: data-plane setup");
  }
}

void unmatched_send(int rank, mpi_testing::Checker& check) {
  // A large message rank 1 never receives: flush names the peer, and the plane can still be
  // destroyed (the send is abandoned, its buffer kept) without hanging.
  comm::MpiControlChannel control(MPI_COMM_WORLD, 0.5);
  if (rank != 0) return;
  std::vector<std::uint8_t> parameters(1 << 20, 3);
  control.send(1, test_tags::kStart, parameters);
  check.expect(control.pending_sends() == 1, "a 1 MiB send completed without a receiver");
  try {
    control.flush();
    check.expect(false, "flush of an unmatched send returned");
  } catch (const core::RuntimeError& e) {
    check.expect_contains(
        e.what(), "timed out after 0.5 s waiting for rank 1: delivery of a tag-5 message");
  }
}

int run(int rank, int size) {
  mpi_testing::Checker check(rank);
  check.expect(size >= 3, "needs at least 3 ranks");
  // Receives that must succeed wait up to 60 s (a loaded machine); the timeouts tested are short.
  comm::MpiControlChannel control(MPI_COMM_WORLD, 60.0);
  round_trip(control, check);
  tag_selection(control, check);
  timeouts(control, check);
  MPI_Barrier(MPI_COMM_WORLD);
  mpi_errors(size, check);
  graph(rank, size, check);
  setup_deadline(rank, check);
  unmatched_send(rank, check);
  MPI_Barrier(MPI_COMM_WORLD);
  return check.finish(MPI_COMM_WORLD);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int code = 0;
  try {
    code = run(rank, size);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: error: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return code;
}

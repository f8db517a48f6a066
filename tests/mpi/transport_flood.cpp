// transport_flood.cpp: the flood test on real MPI ranks. Every rank originates --messages
// messages of random sizes and relays what it receives over a mesh tree (--fanout), on the RMA
// or two-sided data plane; every message must reach every rank exactly once, intact and in
// order per origin. With --expect-back-pressure the run must also have hit full rings.
//   mpirun -n 7 mpi_transport_flood --plane rma --fanout 2 --messages 200 --ring-bytes 65536
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "comm/mpi/make_data_plane.h"
#include "core/errors.h"
#include "core/timer.h"
#include "flood_node.h"
#include "mpi_check.h"
#include "topology/tree.h"

namespace {

using namespace gradshare;

struct Args {
  std::string plane = "rma";
  int fanout = 2;
  int messages = 200;
  long ring_bytes = 65536;
  long min_bytes = 16;
  long max_bytes = 4000;
  double timeout = 60.0;
  bool expect_back_pressure = false;
};

Args parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string key = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw core::UserError(key + " needs a value");
      return argv[++i];
    };
    if (key == "--plane")
      args.plane = value();
    else if (key == "--fanout")
      args.fanout = std::stoi(value());
    else if (key == "--messages")
      args.messages = std::stoi(value());
    else if (key == "--ring-bytes")
      args.ring_bytes = std::stol(value());
    else if (key == "--min-bytes")
      args.min_bytes = std::stol(value());
    else if (key == "--max-bytes")
      args.max_bytes = std::stol(value());
    else if (key == "--timeout")
      args.timeout = std::stod(value());
    else if (key == "--expect-back-pressure")
      args.expect_back_pressure = true;
    else
      throw core::UserError("unknown argument " + key);
  }
  return args;
}

int run(const Args& args, int rank, int size) {
  mpi_testing::Checker check(rank);
  topology::Tree tree = topology::build_mesh(size, args.fanout, size);
  config::TransportConfig transport;
  transport.data_plane = args.plane;
  transport.ring_bytes = args.ring_bytes;
  transport.timeout_ms = static_cast<std::int64_t>(args.timeout * 1000);
  auto made = comm::make_data_plane(transport, MPI_COMM_WORLD, tree.links(rank));
  auto& plane = made.plane;
  if (rank == 0) std::printf("data plane: %s\n", made.description.c_str());

  comm::testing::FloodOptions options;
  options.ranks = size;
  options.messages_per_rank = args.messages;
  options.min_message_bytes = static_cast<std::size_t>(args.min_bytes);
  options.max_message_bytes = static_cast<std::size_t>(args.max_bytes);
  options.relay_queue_bytes = 4 * static_cast<std::size_t>(args.ring_bytes);
  comm::testing::FloodNode node(*plane, rank, options);

  MPI_Barrier(MPI_COMM_WORLD);
  core::Stopwatch elapsed;
  core::Stopwatch since_progress;
  core::Backoff backoff(500);
  MPI_Request all_complete = MPI_REQUEST_NULL;
  while (true) {
    if (node.step()) {
      backoff.reset();
      since_progress.restart();
    } else {
      backoff.wait();
    }
    if (all_complete == MPI_REQUEST_NULL && node.complete())
      MPI_Ibarrier(MPI_COMM_WORLD, &all_complete);
    if (all_complete != MPI_REQUEST_NULL) {
      int done = 0;
      MPI_Test(&all_complete, &done, MPI_STATUS_IGNORE);
      if (done) break;
      since_progress.restart();  // waiting for others is not this rank's stall
    }
    if (since_progress.seconds() > args.timeout) {
      std::fprintf(stderr, "rank %d: no progress for %.1f s: received %zu of %zu messages\n", rank,
                   args.timeout, node.received(), node.expected());
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
  double seconds = elapsed.seconds();
  MPI_Barrier(MPI_COMM_WORLD);
  node.final_poll();  // anything arriving now is a duplicate

  for (const std::string& error : node.errors()) check.expect(false, error);
  check.expect(node.error_count() == node.errors().size(), "more errors than listed");
  check.expect(node.received() == node.expected(), "received " + std::to_string(node.received()) +
                                                       " of " + std::to_string(node.expected()));
  comm::TransportStats stats = plane->stats();
  unsigned long long local[4] = {stats.messages_sent, stats.bytes_sent, stats.messages_received,
                                 stats.back_pressure_events};
  unsigned long long total[4] = {};
  MPI_Allreduce(local, total, 4, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  double slowest = 0;
  MPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    check.expect(total[0] == total[2], "messages sent " + std::to_string(total[0]) +
                                           " != received " + std::to_string(total[2]));
    // Each message crosses each of the size - 1 tree edges once.
    unsigned long long hops = static_cast<unsigned long long>(size) * args.messages * (size - 1);
    check.expect(total[0] == hops, "messages sent " + std::to_string(total[0]) + ", expected " +
                                       std::to_string(hops));
    if (args.expect_back_pressure)
      check.expect(total[3] > 0,
                   "no back-pressure with a " + std::to_string(args.ring_bytes) + "-byte ring");
    std::printf(
        "%s plane, %d ranks, fan-out %d, ring %ld B: %llu link messages, %.1f MB in "
        "%.3f s (%.0f msg/s, %.1f MB/s), %llu back-pressure events\n",
        args.plane.c_str(), size, args.fanout, args.ring_bytes, total[0],
        static_cast<double>(total[1]) / 1e6, slowest, static_cast<double>(total[0]) / slowest,
        static_cast<double>(total[1]) / 1e6 / slowest, total[3]);
  }
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
    code = run(parse(argc, argv), rank, size);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: error: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Finalize();
  return code;
}

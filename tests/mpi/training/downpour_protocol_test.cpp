// downpour_protocol_test.cpp: Downpour's push/pull protocol on real ranks, without training,
// over either transport (run with 3 ranks: rank 0 serves the only shard, ranks 1 and 2 are
// workers).
//   - encoded and dense pushes are applied exactly, acknowledged, their staleness reported
//   - pulls racing a stream of pushes only ever return one consistent version (RMA: the
//     seqlock; two-sided: by construction)
//   - malformed pushes are rejected with an error naming the worker, leaving the shard intact
//   - two-sided: no message is left unreceived at the end
//   mpirun -n 3 mpi_downpour_protocol_test [rma|two_sided]   (rma when not given)
#include "train/downpour/protocol.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/timer.h"
#include "mpi_check.h"
#include "train/downpour/link.h"
#include "comm/mpi/train/downpour/message_transport.h"
#include "comm/mpi/train/downpour/message_wire.h"
#include "comm/mpi/train/downpour/rma_transport.h"
#include "train/downpour/server.h"
#include "train/downpour/transport.h"

namespace {

using namespace gradshare;
using train::DownpourReport;

constexpr std::size_t kParameters = 200000;  // large enough that a read takes a while
constexpr double kTimeout = 60.0;

std::vector<float> initial_parameters() {
  std::vector<float> values(kParameters);
  for (std::size_t i = 0; i < kParameters; ++i) values[i] = 0.25f * static_cast<float>(i % 7);
  return values;
}

// Polls the server until it reached `version` (deadline: a hang is a failure, not a wait).
void serve_until(train::ShardServer& server, std::uint64_t version, mpi_testing::Checker& check) {
  core::Deadline deadline(kTimeout);
  core::Backoff backoff;
  while (server.version() < version && !deadline.expired())
    if (server.poll() == 0) backoff.wait();
  check.expect(server.version() == version, "server version " + std::to_string(server.version()) +
                                                ", expected " + std::to_string(version));
}

// A barrier during which rank 0 keeps serving: two-sided pulls need the server's poll.
void serve_to_barrier(train::ShardServer* server) {
  MPI_Request barrier = MPI_REQUEST_NULL;
  MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
  core::Backoff backoff;
  for (;;) {
    int done = 0;
    MPI_Test(&barrier, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (server != nullptr && server->poll() > 0)
      backoff.reset();
    else
      backoff.wait();
  }
}

void wait_applied(train::ShardLink& client, DownpourReport& report) {
  core::Deadline deadline(kTimeout);
  core::Backoff backoff;
  do {
    client.advance(report);
    if (!client.push_outstanding()) return;
    backoff.wait();
  } while (!deadline.expired());
  throw core::RuntimeError("push not acknowledged");
}

// Phase 1: worker 1 pushes 0.5 everywhere encoded (only quanta go out) and then everything
// left (dense); worker 2 pushes 0.25 dense. The shard must end at initial - 0.75.
void exact_pushes(int rank, train::DownpourTransport& transport, train::ShardServer* server,
                  train::ShardLink* client, mpi_testing::Checker& check) {
  DownpourReport report;
  if (rank == 0) {
    serve_until(*server, 3, check);
  } else {
    std::vector<float> delta(kParameters, rank == 1 ? 0.5f : 0.25f);
    // Worker 1's second push goes out after worker 2's is applied: it is exactly one old.
    constexpr int kApplied = 4242;
    int token = 0;
    if (rank == 1) {
      client->push(delta, 1, 0.0, report);
      wait_applied(*client, report);
      check.expect(delta[0] == 0.0f, "push zeroes the accumulator");
      check.expect(std::fabs(client->residual()[0] - 0.5f) < 1e-3f, "the encoder kept the rest");
      MPI_Recv(&token, 1, MPI_INT, 2, kApplied, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    client->push_all(delta, report);
    wait_applied(*client, report);
    if (rank == 2) MPI_Send(&token, 1, MPI_INT, 1, kApplied, MPI_COMM_WORLD);
    check.expect(report.ages == report.pushes, "every push acknowledged with an age");
    if (rank == 1) check.expect(report.age_max == 1, "worker 1's second push is one old");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<float> shard(kParameters);
  if (rank == 0) {
    const auto p = server->parameters();
    std::copy(p.begin(), p.end(), shard.begin());
    const auto initial = initial_parameters();
    double worst = 0;
    for (std::size_t i = 0; i < kParameters; ++i)
      worst = std::max(worst, std::fabs(static_cast<double>(initial[i]) - 0.75 - shard[i]));
    check.expect(worst < 1e-5, "shard = initial - 0.75, off by " + std::to_string(worst));
  }
  MPI_Bcast(shard.data(), static_cast<int>(kParameters), MPI_FLOAT, 0, MPI_COMM_WORLD);
  if (rank != 0) {
    client->start_pull(report);
    const auto pulled = client->finish_pull(report, kTimeout, {});
    check.expect(std::memcmp(pulled.data(), shard.data(), pulled.size_bytes()) == 0,
                 "a quiet server's pull is bit-exact");
    std::vector<float> out(kParameters);
    check.expect(transport.read_shard(0, out, kTimeout, {}) == 3, "read_shard version");
    check.expect(out == shard, "read_shard contents");
  }
  serve_to_barrier(server);
}

// Phase 2: worker 2 pushes -1 (dense) 150 times while worker 1 keeps pulling: every pull must be
// one version v, with shard = base + v exactly (the values stay small integers + quarters).
void pulls_race_pushes(int rank, train::ShardServer* server, train::ShardLink* client,
                       mpi_testing::Checker& check) {
  constexpr std::uint64_t kPushes = 150;
  std::vector<float> base(kParameters);
  if (rank == 0) {
    const auto p = server->parameters();
    std::copy(p.begin(), p.end(), base.begin());
  }
  MPI_Bcast(base.data(), static_cast<int>(kParameters), MPI_FLOAT, 0, MPI_COMM_WORLD);
  DownpourReport report;
  if (rank == 0) {
    serve_until(*server, 3 + kPushes, check);
  } else if (rank == 2) {
    std::vector<float> delta(kParameters);
    for (std::uint64_t k = 0; k < kPushes; ++k) {
      std::fill(delta.begin(), delta.end(), -1.0f);
      client->push_all(delta, report);
      wait_applied(*client, report);
    }
  } else {
    core::Deadline deadline(kTimeout);
    std::uint64_t version = 3, pulls = 0;
    while (version < 3 + kPushes && !deadline.expired()) {
      client->start_pull(report);
      const auto shard = client->finish_pull(report, kTimeout, {});
      ++pulls;
      // Each push adds exactly 1 up to float rounding: a torn read would mix offsets k, k+1.
      const double offset = std::round(static_cast<double>(shard[0]) - base[0]);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < kParameters; ++i)
        wrong += std::fabs(static_cast<double>(shard[i]) - base[i] - offset) > 1e-3;
      check.expect(wrong == 0, "a pull mixed versions in " + std::to_string(wrong) + " values");
      check.expect(offset >= 0 && offset <= static_cast<double>(kPushes),
                   "pulled offset " + std::to_string(offset));
      version = 3 + static_cast<std::uint64_t>(offset);
    }
    check.expect(version == 3 + kPushes, "the last pull saw every push");
    std::printf("rank 1: %llu pulls, %lld retried, while rank 2 pushed %llu times\n",
                static_cast<unsigned long long>(pulls), static_cast<long long>(report.pull_retries),
                static_cast<unsigned long long>(kPushes));
  }
  serve_to_barrier(server);
}

// How the test hands the server a push of its own making, bypassing ShardLink's checks:
// `send` posts `header` with `payload` without waiting for the server, `settle` completes it
// once the server has polled, `acknowledged` takes the ack of one that applied; two-sided only,
// `send_message` posts `bytes` as a push message, header or not.
struct RawPusher {
  std::function<void(const train::PushHeader& header, std::span<const std::uint8_t> payload)> send;
  std::function<void()> settle;
  std::function<void()> acknowledged;
  std::function<void(std::span<const std::uint8_t> bytes)> send_message;
};

// RMA: straight into worker 1's slot (at most its capacity), seq last (the ack lands in its
// window by itself).
RawPusher slot_writer(train::RmaDownpourTransport& transport, const train::DownpourLayout& layout) {
  const std::size_t slot = layout.shard_layout(0).slot_offset(layout.worker_index(1));
  const std::size_t capacity = layout.shard_layout(0).payload_capacity();
  auto header = std::make_shared<train::PushHeader>();
  auto send = [&window = transport.window(), slot, capacity, header](
                  const train::PushHeader& h, std::span<const std::uint8_t> payload) {
    *header = h;
    window.put(payload.data(), std::min(payload.size(), capacity), 0, slot + train::kLineBytes);
    window.put(&header->format, 3 * sizeof(std::uint64_t), 0, slot + 8);
    window.flush(0);
    window.put(&header->seq, sizeof header->seq, 0, slot);
    window.flush(0);
  };
  return {send, [] {}, [] {}, {}};
}

// Two-sided: one push message from worker 1, whatever its bytes (MPI_Isend: a large message
// moves only once the server polls); the ack is received here.
RawPusher message_sender(train::MessageDownpourTransport& transport) {
  const MPI_Comm comm = transport.comm();
  struct InFlight {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<std::uint8_t> bytes;
  };
  auto in_flight = std::make_shared<InFlight>();
  auto send_message = [comm, in_flight](std::span<const std::uint8_t> bytes) {
    in_flight->bytes.assign(bytes.begin(), bytes.end());
    MPI_Isend(in_flight->bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, 0,
              train::DownpourTag::kPush, comm, &in_flight->request);
  };
  auto settle = [in_flight] { MPI_Wait(&in_flight->request, MPI_STATUS_IGNORE); };
  auto send = [send_message](const train::PushHeader& header,
                             std::span<const std::uint8_t> payload) {
    const auto* head = reinterpret_cast<const std::uint8_t*>(&header);
    std::vector<std::uint8_t> message(head, head + sizeof header);
    message.insert(message.end(), payload.begin(), payload.end());
    send_message(message);
  };
  auto acknowledged = [comm] {
    std::uint64_t word = 0;
    MPI_Recv(&word, sizeof word, MPI_BYTE, 0, train::DownpourTag::kAck, comm, MPI_STATUS_IGNORE);
  };
  return {send, settle, acknowledged, send_message};
}

// Phase 3: worker 1 hands the server malformed pushes; each one must be rejected with a message
// naming it and must leave the shard as it was; a good push then still applies.
void malformed_pushes(int rank, bool two_sided, const train::DownpourLayout& layout,
                      const RawPusher& pusher, train::ShardServer* server,
                      mpi_testing::Checker& check) {
  struct Case {
    const char* name;
    train::PushHeader header;
    std::size_t payload_bytes;
    float value;
    const char* expected;
    bool headerless = false;  // two-sided: the payload bytes alone, no header
  };
  const std::uint64_t next = 3;  // worker 1 pushed twice in phase 1
  const std::uint64_t dense = kParameters * sizeof(float);
  const std::uint64_t capacity = layout.shard_layout(0).payload_capacity();
  std::vector<Case> cases = {
      {"unknown format", {next, 99, dense, 0}, dense, 1.0f, "unknown push format 99"},
      {"short dense push", {next, 1, 12, 0}, 12, 1.0f, "dense push of 12 bytes"},
      {"oversized push", {next, 1, capacity + 1, 0}, capacity + 1, 1.0f, "push capacity"},
      {"garbage encoded push", {next, 2, 4096, 0}, 4096, 1.0f, "malformed encoded push"},
      {"NaN", {next, 1, dense, 0}, dense, NAN, "non-finite update"},
      {"base from the future", {next, 1, dense, 1000000}, dense, 1.0f, "newer than the shard"},
      {"seq jump", {next + 2, 1, dense, 0}, dense, 1.0f, "seq jumped from 2 to 5"},
  };
  if (two_sided) {
    cases.push_back({"header and payload disagree", {next, 1, dense, 0}, dense - 4, 1.0f,
                     "the header announces"});
    cases.push_back({"no header", {}, 8, 1.0f, "a message of 8 bytes is shorter", true});
  }
  std::vector<float> before;
  if (rank == 0) before.assign(server->parameters().begin(), server->parameters().end());
  std::vector<float> values((capacity + 1) / sizeof(float) + 1);
  // The server may still be polling in the previous phase's serve_to_barrier after worker 1
  // left that barrier: no bad push may go out before the server is past it.
  MPI_Barrier(MPI_COMM_WORLD);
  for (const Case& c : cases) {
    if (rank == 1) {
      std::fill(values.begin(), values.end(), c.value);
      const auto* bytes = reinterpret_cast<const std::uint8_t*>(values.data());
      if (c.headerless)
        pusher.send_message({bytes, c.payload_bytes});
      else
        pusher.send(c.header, {bytes, c.payload_bytes});
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      // A message may still be on its way: poll until the server rejects it.
      core::Deadline deadline(kTimeout);
      bool rejected = false;
      while (!rejected && !deadline.expired()) {
        try {
          if (server->poll() > 0) break;
        } catch (const core::RuntimeError& error) {
          rejected = true;
          check.expect_contains(error.what(), c.expected);
          check.expect_contains(error.what(), "worker rank 1");
        }
      }
      check.expect(rejected, std::string(c.name) + " was not rejected");
      check.expect(std::equal(before.begin(), before.end(), server->parameters().begin()),
                   std::string(c.name) + " changed the shard");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) pusher.settle();
  }
  if (rank == 1) {
    std::fill(values.begin(), values.end(), 0.5f);
    pusher.send({next, 1, dense, 0}, {reinterpret_cast<const std::uint8_t*>(values.data()), dense});
  }
  MPI_Barrier(MPI_COMM_WORLD);  // RMA: the slot still holds the last bad seq until the push lands
  if (rank == 1) {
    pusher.acknowledged();
    pusher.settle();
  }
  if (rank == 0) {
    core::Deadline deadline(kTimeout);
    std::size_t applied = 0;
    while (applied == 0 && !deadline.expired()) applied = server->poll();
    check.expect(applied == 1, "a good push after the bad ones applies");
    check.expect(server->parameters()[0] == before[0] - 0.5f, "and lands");
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Two-sided: after everything, nothing is left on the transport's communicator.
void nothing_left(train::MessageDownpourTransport& transport, mpi_testing::Checker& check) {
  MPI_Barrier(MPI_COMM_WORLD);
  int found = 0;
  MPI_Status status{};
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, transport.comm(), &found, &status);
  check.expect(!found, "a message with tag " + std::to_string(status.MPI_TAG) + " from rank " +
                           std::to_string(status.MPI_SOURCE) + " was never received");
}

int run(const std::string& kind) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  mpi_testing::Checker check(rank);
  if (size != 3 || (kind != "rma" && kind != "two_sided")) {
    if (rank == 0) std::fprintf(stderr, "run with 3 ranks and rma or two_sided\n");
    return 2;
  }
  const bool two_sided = kind == "two_sided";
  config::ExperimentConfig config;
  config.training.strategy = "downpour";
  config.downpour.servers = 1;
  config.downpour.encode = true;
  config.downpour.combine = "sum";  // the server applies pushes exactly as sent,
  config.downpour.stale_pushes = "full";  // whatever their age (the age rule: unit tests)
  config.downpour.server_optimizer = "sgd";
  config.downpour.server_learning_rate = 1.0;
  const train::DownpourLayout layout(config, kParameters, size);
  std::unique_ptr<train::DownpourTransport> transport;
  RawPusher pusher;
  // Every worker at its world rank.
  train::WorkerRanks worker_ranks;
  for (int w = 0; w < layout.workers(); ++w) worker_ranks.push_back(layout.worker_rank(w));
  if (two_sided) {
    auto messages =
        std::make_unique<train::MessageDownpourTransport>(MPI_COMM_WORLD, layout, worker_ranks);
    pusher = message_sender(*messages);
    transport = std::move(messages);
  } else {
    auto rma =
        std::make_unique<train::RmaDownpourTransport>(MPI_COMM_WORLD, rank, layout, worker_ranks);
    pusher = slot_writer(*rma, layout);
    transport = std::move(rma);
  }
  std::unique_ptr<train::ShardServer> server;
  std::unique_ptr<train::ShardLink> client;
  if (rank == 0)
    server = transport->serve(0, config, initial_parameters());
  else
    client = transport->link(0, layout.worker_index(rank), config);
  MPI_Barrier(MPI_COMM_WORLD);
  try {
    exact_pushes(rank, *transport, server.get(), client.get(), check);
    pulls_race_pushes(rank, server.get(), client.get(), check);
    malformed_pushes(rank, two_sided, layout, pusher, server.get(), check);
    if (two_sided) nothing_left(static_cast<train::MessageDownpourTransport&>(*transport), check);
  } catch (const std::exception& error) {
    check.expect(false, std::string("unexpected error: ") + error.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::printf("rank %d: %s transport\n", rank, kind.c_str());
  return check.finish(MPI_COMM_WORLD);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int code = run(argc > 1 ? argv[1] : "rma");
  MPI_Finalize();
  return code;
}

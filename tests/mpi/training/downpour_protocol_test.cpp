// downpour_protocol_test.cpp: Downpour's push/pull protocol on real ranks, without training
// (run with 3 ranks: rank 0 serves the only shard, ranks 1 and 2 are workers).
//   - encoded and dense pushes are applied exactly, acknowledged, their staleness reported
//   - pulls racing a stream of pushes only ever return one consistent version (seqlock)
//   - malformed pushes are rejected with an error naming the worker, leaving the shard intact
//   mpirun -n 3 mpi_downpour_protocol_test
#include "train/downpour_protocol.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "comm/window.h"
#include "core/errors.h"
#include "core/timer.h"
#include "mpi_check.h"
#include "train/downpour_client.h"
#include "train/downpour_server.h"

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

void wait_applied(train::ShardClient& client, DownpourReport& report) {
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
void exact_pushes(int rank, comm::Window& window, const train::DownpourLayout& layout,
                  const config::ExperimentConfig& config, train::ShardServer* server,
                  train::ShardClient* client, mpi_testing::Checker& check) {
  DownpourReport report;
  if (rank == 0) {
    serve_until(*server, 3, check);
  } else {
    std::vector<float> delta(kParameters, rank == 1 ? 0.5f : 0.25f);
    if (rank == 1) {
      client->push(delta, 1, report);
      wait_applied(*client, report);
      check.expect(delta[0] == 0.0f, "push zeroes the accumulator");
      check.expect(std::fabs(client->residual()[0] - 0.5f) < 1e-3f, "the encoder kept the rest");
    }
    client->push_all(delta, report);
    wait_applied(*client, report);
    check.expect(report.ages == report.pushes, "every push acknowledged with an age");
    if (rank == 1) check.expect(report.age_max >= 1, "worker 1's second push is at least one old");
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
    const auto pulled = client->finish_pull(report, kTimeout);
    check.expect(std::memcmp(pulled.data(), shard.data(), pulled.size_bytes()) == 0,
                 "a quiet server's pull is bit-exact");
    std::vector<float> out(kParameters);
    check.expect(train::read_shard(window, 0, out, kTimeout) == 3, "read_shard version");
    check.expect(out == shard, "read_shard contents");
  }
  (void)layout;
  (void)config;
  MPI_Barrier(MPI_COMM_WORLD);
}

// Phase 2: worker 2 pushes -1 (dense) 150 times while worker 1 keeps pulling: every pull must be
// one version v, with shard = base + v exactly (the values stay small integers + quarters).
void pulls_race_pushes(int rank, train::ShardServer* server, train::ShardClient* client,
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
      const auto shard = client->finish_pull(report, kTimeout);
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
  MPI_Barrier(MPI_COMM_WORLD);
}

// Phase 3: worker 1 writes malformed pushes straight into its slot; each one must be rejected
// with a message naming it and must leave the shard as it was; a good push then still applies.
void malformed_pushes(int rank, comm::Window& window, const train::DownpourLayout& layout,
                      train::ShardServer* server, mpi_testing::Checker& check) {
  const train::ShardLayout& shard = layout.shard_layout(0);
  const std::size_t slot = shard.slot_offset(layout.worker_index(1));
  struct Case {
    const char* name;
    std::uint64_t seq, format, bytes, base;
    float value;
    const char* expected;
  };
  const std::uint64_t next = 3;  // worker 1 pushed twice in phase 1
  const std::uint64_t dense = kParameters * sizeof(float);
  const Case cases[] = {
      {"unknown format", next, 99, dense, 0, 1.0f, "unknown push format 99"},
      {"short dense push", next, 1, 12, 0, 1.0f, "dense push of 12 bytes"},
      {"oversized push", next, 1, shard.payload_capacity() + 1, 0, 1.0f, "exceed the slot"},
      {"garbage encoded push", next, 2, 4096, 0, 1.0f, "malformed encoded push"},
      {"NaN", next, 1, dense, 0, NAN, "non-finite update"},
      {"base from the future", next, 1, dense, 1000000, 1.0f, "newer than the shard"},
      {"seq jump", next + 2, 1, dense, 0, 1.0f, "seq jumped from 2 to 5"},
  };
  std::vector<float> before;
  if (rank == 0) before.assign(server->parameters().begin(), server->parameters().end());
  std::vector<float> payload(kParameters);
  train::SlotHeader header;
  for (const Case& c : cases) {
    if (rank == 1) {
      std::fill(payload.begin(), payload.end(), c.value);
      header = {c.seq, c.format, c.bytes, c.base};
      window.put(payload.data(), payload.size() * sizeof(float), 0, slot + train::kLineBytes);
      window.put(&header.format, 3 * sizeof(std::uint64_t), 0, slot + 8);
      window.flush(0);
      window.put(&header.seq, sizeof header.seq, 0, slot);
      window.flush(0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      try {
        server->poll();
        check.expect(false, std::string(c.name) + " was accepted");
      } catch (const core::RuntimeError& error) {
        check.expect_contains(error.what(), c.expected);
        check.expect_contains(error.what(), "worker rank 1");
      }
      check.expect(std::equal(before.begin(), before.end(), server->parameters().begin()),
                   std::string(c.name) + " changed the shard");
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (rank == 1) {
    std::fill(payload.begin(), payload.end(), 0.5f);
    header = {next, 1, dense, 0};
    window.put(payload.data(), dense, 0, slot + train::kLineBytes);
    window.put(&header.format, 3 * sizeof(std::uint64_t), 0, slot + 8);
    window.flush(0);
    window.put(&header.seq, sizeof header.seq, 0, slot);
    window.flush(0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    check.expect(server->poll() == 1, "a good push after the bad ones applies");
    check.expect(server->parameters()[0] == before[0] - 0.5f, "and lands");
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

int run() {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  mpi_testing::Checker check(rank);
  if (size != 3) {
    if (rank == 0) std::fprintf(stderr, "run with 3 ranks\n");
    return 2;
  }
  config::ExperimentConfig config;
  config.training.strategy = "downpour";
  config.downpour.servers = 1;
  config.downpour.encode = true;
  config.downpour.combine = "sum";  // the server applies pushes exactly as sent
  config.downpour.server_optimizer = "sgd";
  config.downpour.server_learning_rate = 1.0;
  const train::DownpourLayout layout(config, kParameters, size);
  comm::Window window(MPI_COMM_WORLD, layout.window_bytes(rank));
  std::optional<train::ShardServer> server;
  std::optional<train::ShardClient> client;
  if (rank == 0)
    server.emplace(window, layout, 0, config, initial_parameters());
  else
    client.emplace(window, layout, 0, layout.worker_index(rank), config);
  MPI_Barrier(MPI_COMM_WORLD);
  try {
    exact_pushes(rank, window, layout, config, server ? &*server : nullptr,
                 client ? &*client : nullptr, check);
    pulls_race_pushes(rank, server ? &*server : nullptr, client ? &*client : nullptr, check);
    malformed_pushes(rank, window, layout, server ? &*server : nullptr, check);
  } catch (const std::exception& error) {
    check.expect(false, std::string("unexpected error: ") + error.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return check.finish(MPI_COMM_WORLD);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int code = run();
  MPI_Finalize();
  return code;
}

// heartbeat_test.cpp: the heartbeat thread beats every period while the training thread shows
// progress, not while paused, stops after a beat that failed until resumed, and stops once the
// training thread has shown no progress for the stall timeout (a stuck thread is found).
#include "ft/heartbeat.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace gradshare::ft {
namespace {

using namespace std::chrono_literals;

// Keeps reporting progress for `duration`.
void train_for(HeartbeatThread& heartbeat, std::chrono::milliseconds duration) {
  const auto end = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < end) {
    heartbeat.alive();
    std::this_thread::sleep_for(2ms);
  }
}

TEST(HeartbeatThread, BeatsEveryPeriodWhileTrainingGoesOn) {
  std::atomic<int> beats{0};
  HeartbeatThread heartbeat(0.01, 10.0, [&] { ++beats; });
  train_for(heartbeat, 300ms);
  // About 30 at 10 ms; a loaded machine delays some, never adds.
  EXPECT_GE(beats.load(), 5);
  EXPECT_LE(beats.load(), 31);
  EXPECT_EQ(heartbeat.beats(), beats.load());
}

TEST(HeartbeatThread, NoBeatWhilePaused) {
  std::atomic<int> beats{0};
  HeartbeatThread heartbeat(0.005, 10.0, [&] { ++beats; });
  heartbeat.pause();
  const int before = beats.load();
  train_for(heartbeat, 100ms);
  EXPECT_EQ(beats.load(), before);
  heartbeat.resume();
  train_for(heartbeat, 100ms);
  EXPECT_GT(beats.load(), before);
}

TEST(HeartbeatThread, FailedBeatStopsTheBeatsUntilResumed) {
  std::atomic<int> calls{0};
  HeartbeatThread heartbeat(0.005, 10.0, [&] {
    ++calls;
    throw std::runtime_error("peer failed");
  });
  train_for(heartbeat, 100ms);
  EXPECT_EQ(calls.load(), 1);
  heartbeat.resume();
  train_for(heartbeat, 100ms);
  EXPECT_EQ(calls.load(), 2);
}

TEST(HeartbeatThread, StuckTrainingThreadStopsTheBeats) {
  std::atomic<int> beats{0};
  HeartbeatThread heartbeat(0.005, 0.1, [&] { ++beats; });
  train_for(heartbeat, 50ms);
  EXPECT_GT(beats.load(), 0);
  std::this_thread::sleep_for(200ms);  // no progress: the beats stop after 0.1 s
  const int stuck = beats.load();
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(beats.load(), stuck);
  train_for(heartbeat, 100ms);  // progress again: beats again
  EXPECT_GT(beats.load(), stuck);
}

}  // namespace
}  // namespace gradshare::ft

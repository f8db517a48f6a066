// heartbeat_test.cpp: the heartbeat thread beats every period while the training thread shows
// progress, not while paused, stops after a beat that failed until resumed, and stops once the
// training thread has shown no progress for the stall timeout (a stuck thread is found).
#include "ft/heartbeat.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
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

// Keeps reporting progress until `done` holds; false if it still does not after 30 s (a loaded
// machine may keep the heartbeat thread waiting, never that long).
bool train_until(HeartbeatThread& heartbeat, const std::function<bool()>& done) {
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    train_for(heartbeat, 10ms);
  }
  return true;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(HeartbeatThread, BeatsEveryPeriodWhileTrainingGoesOn) {
  std::atomic<int> beats{0};
  const auto start = std::chrono::steady_clock::now();
  HeartbeatThread heartbeat(0.01, 10.0, [&] { ++beats; });
  EXPECT_TRUE(train_until(heartbeat, [&] { return beats.load() >= 5; }));
  heartbeat.pause();  // a beat under way is over once this returns
  // One beat a period at most: a loaded machine delays beats, never adds any.
  EXPECT_LE(beats.load(), seconds_since(start) / 0.01 + 1);
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
  EXPECT_TRUE(train_until(heartbeat, [&] { return beats.load() > before; }));
}

TEST(HeartbeatThread, FailedBeatStopsTheBeatsUntilResumed) {
  std::atomic<int> calls{0};
  HeartbeatThread heartbeat(0.005, 10.0, [&] {
    ++calls;
    throw std::runtime_error("peer failed");
  });
  EXPECT_TRUE(train_until(heartbeat, [&] { return calls.load() >= 1; }));
  train_for(heartbeat, 100ms);
  EXPECT_EQ(calls.load(), 1);
  heartbeat.resume();
  EXPECT_TRUE(train_until(heartbeat, [&] { return calls.load() >= 2; }));
  heartbeat.pause();
  EXPECT_EQ(calls.load(), 2);
}

TEST(HeartbeatThread, StuckTrainingThreadStopsTheBeats) {
  std::atomic<int> beats{0};
  HeartbeatThread heartbeat(0.005, 0.1, [&] { ++beats; });
  EXPECT_TRUE(train_until(heartbeat, [&] { return beats.load() > 0; }));
  // No progress: the beats stop once the heartbeat thread has seen none for 0.1 s (when, a
  // loaded machine decides), and stay stopped.
  int stuck = beats.load();
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  for (;;) {
    std::this_thread::sleep_for(300ms);
    if (beats.load() == stuck || std::chrono::steady_clock::now() > give_up) break;
    stuck = beats.load();
  }
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(beats.load(), stuck);
  EXPECT_TRUE(train_until(heartbeat, [&] { return beats.load() > stuck; }));  // progress again
}

}  // namespace
}  // namespace gradshare::ft

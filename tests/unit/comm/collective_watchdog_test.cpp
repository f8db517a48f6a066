// collective_watchdog_test.cpp: a collective that outlives its deadline ends the process with
// exit code 1 and a line naming it; one that returns in time leaves the process alone.
#include "comm/collective_watchdog.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace gradshare::comm {
namespace {

using namespace std::chrono_literals;

TEST(CollectiveWatchdog, CollectivesInTimeAreLeftAlone) {
  // 20 ms collectives under a 5 s deadline: in time however loaded the machine; idle time
  // between and after them, longer than the deadline, is no collective.
  CollectiveWatchdog dog(5.0);
  for (int i = 0; i < 5; ++i) {
    {
      const CollectiveWatchdog::Watch watch(dog, "a quick all-reduce");
      std::this_thread::sleep_for(20ms);
    }
    std::this_thread::sleep_for(1200ms);
  }
  SUCCEED();
}

TEST(CollectiveWatchdogDeathTest, AStuckCollectiveEndsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        CollectiveWatchdog dog(0.2);
        const CollectiveWatchdog::Watch watch(dog, "the workers' all-reduce");
        std::this_thread::sleep_for(10s);  // a member is gone: it never returns
      },
      ::testing::ExitedWithCode(1), "the workers' all-reduce did not complete within");
}

}  // namespace
}  // namespace gradshare::comm

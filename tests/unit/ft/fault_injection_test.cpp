// fault_injection_test.cpp: GRADSHARE_INJECT's entries (a step or a start-up point), and which
// injections fire where: a start-up point's only there, a step's never at start-up, nothing on
// a replacement.
#include "ft/fault_injection.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/errors.h"

namespace gradshare::ft {
namespace {

// What an injection ends the rank with, caught instead of ending the test.
struct Ended {
  std::string kind;
};

FaultInjector injector_for(const std::vector<config::FaultInjection>& inject, int rank,
                           bool replacement = false) {
  config::FaultToleranceConfig ft;
  ft.inject = inject;
  return FaultInjector(ft, rank, replacement, [](const std::string& kind) { throw Ended{kind}; });
}

config::FaultInjection at_startup(int rank, const std::string& point) {
  config::FaultInjection injection;
  injection.rank = rank;
  injection.at_startup = point;
  return injection;
}

TEST(ParseInjections, TakesAStepOrAStartupPoint) {
  const auto parsed = parse_injections("2:40:exit,3:data:sigkill,1:-1:hang,0:hosts:sigkill");
  ASSERT_EQ(parsed.size(), 4u);
  EXPECT_EQ(parsed[0].rank, 2);
  EXPECT_EQ(parsed[0].at_step, 40);
  EXPECT_EQ(parsed[0].at_startup, "none");
  EXPECT_EQ(parsed[0].kind, "exit");
  EXPECT_EQ(parsed[1].rank, 3);
  EXPECT_EQ(parsed[1].at_startup, "data");
  EXPECT_EQ(parsed[1].kind, "sigkill");
  EXPECT_EQ(parsed[2].at_step, -1);
  EXPECT_EQ(parsed[3].rank, 0);  // the master, at a start-up point only
  EXPECT_EQ(parsed[3].at_startup, "hosts");
}

TEST(ParseInjections, RejectsWhatCannotBeInjected) {
  for (const char* bad : {"2:data:exit", "2:setup:hang", "2:mpi_init:sigkill", "0:5:sigkill", "-1:data:sigkill",
                          "2:-2:sigkill", "2:5:segv", "2:5", "x:5:sigkill", "2:5x:sigkill"}) {
    try {
      parse_injections(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const core::UserError& error) {
      EXPECT_NE(std::string(error.what()).find(std::string("'") + bad + "'"), std::string::npos)
          << error.what();
    }
  }
}

TEST(FaultInjector, AStartupPointFiresOnlyThereOnItsRank) {
  const auto injector = injector_for({at_startup(2, "hosts")}, 2);
  EXPECT_NO_THROW(injector.at_startup("data"));
  EXPECT_NO_THROW(injector.at_step(0));
  EXPECT_NO_THROW(injector.at_hand_in());
  try {
    injector.at_startup("hosts");
    ADD_FAILURE() << "the injection did not fire";
  } catch (const Ended& ended) {
    EXPECT_EQ(ended.kind, "sigkill");
  }
  EXPECT_NO_THROW(injector_for({at_startup(2, "hosts")}, 3).at_startup("hosts"));
}

TEST(FaultInjector, AStepNeverFiresAtStartupNorOnAReplacement) {
  config::FaultInjection step;
  step.rank = 2;
  step.at_step = 7;
  const auto injector = injector_for({step}, 2);
  for (const char* point : {"config", "data", "run_directory", "hosts", "setup"})
    EXPECT_NO_THROW(injector.at_startup(point));
  EXPECT_THROW(injector.at_step(7), Ended);
  EXPECT_NO_THROW(injector_for({step}, 2, /*replacement=*/true).at_step(7));
  EXPECT_NO_THROW(injector_for({at_startup(2, "data")}, 2, /*replacement=*/true).at_startup("data"));
}

}  // namespace
}  // namespace gradshare::ft

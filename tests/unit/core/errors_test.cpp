#include <gtest/gtest.h>

#include "core/errors.h"

using namespace gradshare::core;

TEST(Errors, CheckNamesFileAndLine) {
  try {
    GS_CHECK(1 + 1 == 3, "arithmetic");
    FAIL() << "GS_CHECK did not throw";
  } catch (const RuntimeError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("errors_test.cpp:"), std::string::npos) << what;
    EXPECT_NE(what.find("1 + 1 == 3"), std::string::npos) << what;
    EXPECT_NE(what.find("arithmetic"), std::string::npos) << what;
  }
}

TEST(Errors, PassingCheckDoesNothing) { EXPECT_NO_THROW(GS_CHECK(true)); }

// Tests of `gradshare report` on a small made-up run: the page and PNGs are written, one <svg>
// per chart and one PNG each, nothing external; bad input writes nothing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/errors.h"
#include "report/report_command.h"

namespace gradshare::report {
namespace {

namespace fs = std::filesystem;

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class ReportCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gs-report-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    run_ = root_ / "run-a";
    fs::create_directories(run_);
    std::ofstream(run_ / "config.yaml") << "training:\n  strategy: gradient_sharing\n  epochs: 2\n";
    std::ofstream metrics(run_ / "metrics.jsonl");
    for (int i = 1; i <= 4; ++i)
      metrics << "{\"kind\":\"step\",\"step\":" << 10 * i << ",\"loss\":" << 1.0 / i
              << ",\"train_accuracy\":0.5,\"samples_per_second\":1000,\"tau_min\":1e-4,\"tau_max\":3e-4,"
                 "\"sparsity\":1e-3,\"bytes_per_worker_step\":800,\"backpressure\":0,\"capped_messages\":1,"
                 "\"staleness_mean\":0.5,\"staleness_max\":2,\"t\":" << i << "}\n";
    for (int rank = 1; rank <= 2; ++rank)
      metrics << "{\"kind\":\"encoding_debug\",\"rank\":" << rank << ",\"step\":20,\"steps\":10,\"tau_min\":1e-4,"
              << "\"tau_max\":2e-4,\"sparsity\":1e-3,\"messages\":10,\"sparse\":10,\"bitmap\":0,\"compressed\":0,"
                 "\"capped\":0,\"backpressure\":0,\"bytes\":8000,\"bytes_per_step\":800,\"residual_l2\":0.1,"
                 "\"residual_max_abs\":0.01,\"clipped_mass\":0,\"shake_ups\":0,\"staleness_mean\":0.5,"
                 "\"staleness_max\":1,\"t\":2.5}\n";
    metrics << "{\"kind\":\"epoch\",\"epoch\":1,\"step\":20,\"test_accuracy\":0.7,\"test_loss\":0.8,\"t\":2.2}\n"
               "{\"kind\":\"checkpoint\",\"step\":20,\"file\":\"ckpt-000000000020.h5\",\"bytes\":1000,"
               "\"seconds\":0.01,\"t\":2.3}\n"
               "{\"kind\":\"final\",\"test_accuracy\":0.75,\"t\":4.5}\n";
    for (int rank = 0; rank <= 2; ++rank) std::ofstream(run_ / ("rank-" + std::to_string(rank) + ".log")) << "x\n";
  }
  void TearDown() override { fs::remove_all(root_); }
  static std::string read(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  fs::path root_, run_;
};

TEST_F(ReportCommandTest, WritesThePageAndAPngPerChart) {
  const fs::path page = root_ / "out.html";
  testing::internal::CaptureStdout();
  ASSERT_EQ(report_command({run_.string(), "-o", page.string()}), 0);
  testing::internal::GetCapturedStdout();
  const std::string html = read(page);
  const std::size_t charts = occurrences(html, "<figure class=\"chart-figure\"");
  EXPECT_EQ(occurrences(html, "<svg "), charts);
  // loss and accuracy x2, samples, tau, sparsity, bytes, staleness, back-pressure; 8 per worker
  EXPECT_EQ(charts, 4u + 6u + 8u);
  std::size_t pngs = 0;
  for (const auto& entry : fs::directory_iterator(root_)) {
    if (entry.path().extension() != ".png") continue;
    ++pngs;
    EXPECT_NE(html.find("href=\"" + entry.path().filename().string() + "\""), std::string::npos);
  }
  EXPECT_EQ(pngs, charts);
  EXPECT_TRUE(fs::exists(root_ / "out-loss-time.png"));
  EXPECT_TRUE(fs::exists(root_ / "out-run1-enc-tau.png"));
  EXPECT_EQ(occurrences(html, "<tr class=\"worker\">"), 2u);
  EXPECT_NE(html.find("<pre class=\"config\">training:\n  strategy: gradient_sharing"), std::string::npos);
  EXPECT_NE(html.find("<td>checkpoint</td>"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  for (const auto& entry : fs::directory_iterator(root_))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
}

TEST_F(ReportCommandTest, DefaultsToReportHtmlInTheFirstRun) {
  testing::internal::CaptureStdout();
  ASSERT_EQ(report_command({run_.string(), run_.string()}), 0);  // a run overlaid on itself
  testing::internal::GetCapturedStdout();
  const std::string html = read(run_ / "report.html");
  EXPECT_NE(html.find("2 runs overlaid"), std::string::npos);
  EXPECT_TRUE(fs::exists(run_ / "report-run2-enc-tau.png"));
}

TEST_F(ReportCommandTest, BadInputWritesNothing) {
  const fs::path bad = root_ / "run-b";
  fs::create_directories(bad);
  std::ofstream(bad / "metrics.jsonl") << "{\"kind\":\"step\"}\noops\n";
  const fs::path page = root_ / "out.html";
  try {
    report_command({run_.string(), bad.string(), "-o", page.string()});
    FAIL() << "no error";
  } catch (const core::UserError& error) {
    EXPECT_EQ(std::string(error.what()),
              (bad / "metrics.jsonl").string() + ":2: malformed JSON at column 1: unexpected character 'o'");
  }
  EXPECT_THROW(report_command({}), core::UserError);
  EXPECT_THROW(report_command({run_.string(), "--colour"}), core::UserError);
  EXPECT_THROW(report_command({run_.string(), "-o", (root_ / "nowhere" / "x.html").string()}), core::UserError);
  for (const auto& entry : fs::directory_iterator(root_)) EXPECT_TRUE(entry.is_directory()) << entry.path();
}

}  // namespace
}  // namespace gradshare::report

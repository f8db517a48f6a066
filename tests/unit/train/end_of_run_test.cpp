// end_of_run_test.cpp: the end of a run when a process fails around it (train/job_session.h):
// the master's Shutdown flush ignores a process failure, and a rank that sees a failure finds
// the Shutdown that had already arrived (past the failure check that try_receive makes) instead
// of starting a repair the master would never join.
#include <gtest/gtest.h>

#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "comm/in_process_control.h"
#include "comm/transport_error.h"
#include "train/job_session.h"
#include "train/messages.h"

namespace gradshare::train {
namespace {

// A channel on which rank 2 has failed: try_receive, flush and a send to rank 2 throw what the
// MPI channel throws under ULFM; messages that have arrived can still be taken despite the
// failure.
class FailedJobChannel final : public comm::ControlChannel {
 public:
  explicit FailedJobChannel(bool process_failure) : process_failure_(process_failure) {}
  int rank() const override { return 1; }
  int size() const override { return 3; }
  double timeout_seconds() const override { return 1.0; }
  void send(int dest, comm::Tag tag, std::span<const std::uint8_t> payload) override {
    if (dest == 2) fail();
    sent.push_back({dest, tag, {payload.begin(), payload.end()}});
  }
  std::optional<comm::ControlMessage> try_receive(std::optional<comm::Tag>, int) override {
    fail();
  }
  std::optional<comm::ControlMessage> try_receive_despite_failures(comm::Tag tag,
                                                                   int source) override {
    for (auto it = arrived.begin(); it != arrived.end(); ++it) {
      if (it->tag != tag || it->source != source) continue;
      auto message = std::move(*it);
      arrived.erase(it);
      return message;
    }
    return std::nullopt;
  }
  void flush() override { fail(); }
  std::size_t pending_sends() override { return 0; }

  std::vector<comm::ControlMessage> sent;     // (source holds the destination)
  std::vector<comm::ControlMessage> arrived;  // waiting to be taken

 private:
  [[noreturn]] void fail() const {
    throw comm::TransportError("MPI_ERR_PROC_FAILED: rank 2 failed", process_failure_);
  }
  bool process_failure_;
};

comm::ControlMessage from_master(const auto& message) {
  return {0, std::remove_cvref_t<decltype(message)>::kTag, encode(message)};
}

TEST(EndOfRun, ARankTakesTheShutdownThatArrivedBeforeTheFailure) {
  FailedJobChannel channel(true);
  channel.arrived.push_back(from_master(Heartbeat{}));
  EXPECT_EQ(shutdown_before_repair(channel), std::nullopt);  // no Shutdown: repair
  channel.arrived.push_back(from_master(Shutdown{75}));
  EXPECT_EQ(shutdown_before_repair(channel), 75);
  ASSERT_EQ(channel.arrived.size(), 1u);  // only the Shutdown was taken
  EXPECT_EQ(channel.arrived[0].tag, comm::Tag::kHeartbeat);
}

TEST(EndOfRun, TheMastersShutdownOutlivesAProcessFailureButNothingElse) {
  FailedJobChannel failed(true);
  EXPECT_NO_THROW(send_shutdown(failed, {1, 2, 3}, 0));
  ASSERT_EQ(failed.sent.size(), 2u);  // the dead rank 2 could not be told; rank 3 still was
  EXPECT_EQ(failed.sent[1].source, 3);
  EXPECT_EQ(decode<Shutdown>(failed.sent[1]).exit_code, 0);
  EXPECT_NO_THROW(flush_at_end(failed));
  FailedJobChannel broken(false);  // another transport error is not the end's to swallow
  EXPECT_THROW(send_shutdown(broken, {1}, 0), comm::TransportError);
  EXPECT_THROW(flush_at_end(broken), comm::TransportError);
}

TEST(EndOfRun, InProcessChannelsHandTheShutdownOver) {
  comm::InProcessControlHub hub(2, 1.0);
  send_shutdown(hub.channel(0), {1}, 3);
  EXPECT_EQ(shutdown_before_repair(hub.channel(1)), 3);
  EXPECT_EQ(shutdown_before_repair(hub.channel(1)), std::nullopt);
}

}  // namespace
}  // namespace gradshare::train

// end_of_run_test.cpp: the end of a run when a process fails around it (train/job_session.h):
// the master's Shutdown flush ignores a process failure; a rank that sees a failure finds the
// Shutdown that had already arrived (past the failure check that try_receive makes) instead of
// starting a repair the master would never join; and a rank that has handed in its results
// leaves the failure to the master: it waits for a Shutdown still on its way, and repairs only
// once the master has begun a repair or failed.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <span>
#include <thread>
#include <type_traits>
#include <vector>

#include "comm/inproc/in_process_control.h"
#include "comm/inproc/in_process_job.h"
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

// A rank's session that is only its control channel (nothing here repairs).
class ChannelSession final : public JobSession {
 public:
  explicit ChannelSession(comm::ControlChannel& channel) : channel_(channel) {}
  comm::ControlChannel& control() override { return channel_; }
  std::vector<int> live_workers() const override { return {1, 2}; }
  bool fault_tolerant() const override { return true; }
  RepairOutcome repair(const std::vector<std::uint8_t>&) override {
    ADD_FAILURE() << "shutdown_before_repair must not repair";
    return {};
  }

 private:
  comm::ControlChannel& channel_;
};

comm::ControlMessage from_master(const auto& message) {
  return {0, std::remove_cvref_t<decltype(message)>::kTag, encode(message)};
}

TEST(EndOfRun, ARankTakesTheShutdownThatArrivedBeforeTheFailure) {
  FailedJobChannel channel(true);
  ChannelSession session(channel);
  channel.arrived.push_back(from_master(Heartbeat{}));
  EXPECT_EQ(shutdown_before_repair(session), std::nullopt);  // no Shutdown: repair
  channel.arrived.push_back(from_master(Shutdown{75}));
  EXPECT_EQ(shutdown_before_repair(session), 75);
  ASSERT_EQ(channel.arrived.size(), 1u);  // only the Shutdown was taken
  EXPECT_EQ(channel.arrived[0].tag, tags::kHeartbeat);
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
  ChannelSession session(hub.channel(1));
  send_shutdown(hub.channel(0), {1}, 3);
  EXPECT_EQ(shutdown_before_repair(session), 3);
  EXPECT_EQ(shutdown_before_repair(session), std::nullopt);
}

// Rank 2 has failed in a job of a master and workers 1 and 2; worker 1 saw it and asks
// shutdown_before_repair on its own thread while the master acts 100 ms later.
struct LateMaster {
  comm::InProcessJobHub hub{3, 10.0, {/*repairable=*/true, /*spares=*/0}};
  std::unique_ptr<comm::ControlChannel> worker_channel = hub.job(1).control_channel_of(1);
  std::unique_ptr<comm::ControlChannel> master_channel = hub.job(0).control_channel_of(0);
  ChannelSession worker{*worker_channel};

  LateMaster() { hub.fail(2); }

  // shutdown_before_repair on worker 1 while `master` runs 100 ms later on its own thread.
  std::optional<int> ask(const std::function<void()>& master) {
    std::thread late([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      master();
    });
    const auto code = shutdown_before_repair(worker);
    late.join();
    return code;
  }
};

TEST(EndOfRun, AHandedInRankWaitsForAShutdownStillOnItsWay) {
  LateMaster job;
  job.worker.hand_in_results();
  EXPECT_EQ(job.ask([&] { send_shutdown(*job.master_channel, {1, 2}, 0); }), 0);
  // Before its results are in, the same rank repairs at once: the master cannot have ended.
  LateMaster early;
  EXPECT_EQ(early.ask([&] { send_shutdown(*early.master_channel, {1, 2}, 0); }), std::nullopt);
}

TEST(EndOfRun, AHandedInRankJoinsTheRepairTheMasterBegins) {
  LateMaster job;
  job.worker.hand_in_results();
  std::thread repair;
  EXPECT_EQ(job.ask([&] {
    repair = std::thread([&] { job.hub.job(0).repair(0, false, [](const auto&) {}); });
  }),
            std::nullopt);
  EXPECT_FALSE(job.worker.results_handed_in());  // the repair may ask for them again
  job.hub.job(1).repair(1, false, [](const auto&) {});  // the repair needs every live rank
  repair.join();
}

TEST(EndOfRun, AHandedInRankRepairsWhenTheMasterFailed) {
  LateMaster job;
  job.worker.hand_in_results();
  // (the repair that follows finds the master lost and ends the job: comm/repair.h)
  EXPECT_EQ(job.ask([&] { job.hub.fail(0); }), std::nullopt);
}

}  // namespace
}  // namespace gradshare::train

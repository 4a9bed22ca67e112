// How the ranks of a training run stop together (engine/src/cli/run_control.h): the news of
// every rank folded into one, the --on-record-error policy, and RunControl over 4 devices.
#include "cli/run_control.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "shardscope/store/reader.h"

namespace shardscope::cli {
namespace {

TEST(DecideAfterStep, NoNewsGoesOn) {
  for (OnRecordError policy : {OnRecordError::kStop, OnRecordError::kContinue}) {
    const StepDecision d = DecideAfterStep(RunNews{}, policy);
    EXPECT_FALSE(d.fail || d.stop_recording || d.interrupt);
  }
}

TEST(DecideAfterStep, ASignalInterruptsWhateverThePolicy) {
  for (OnRecordError policy : {OnRecordError::kStop, OnRecordError::kContinue}) {
    const StepDecision d = DecideAfterStep(RunNews{SIGINT, -1, false}, policy);
    EXPECT_TRUE(d.interrupt);
    EXPECT_FALSE(d.fail || d.stop_recording);
  }
}

TEST(DecideAfterStep, StopPolicyFailsAndIsNeverReportedAsInterrupted) {
  const StepDecision d = DecideAfterStep(RunNews{SIGINT, 0, true}, OnRecordError::kStop);
  EXPECT_TRUE(d.fail);
  EXPECT_FALSE(d.interrupt);
  EXPECT_FALSE(d.stop_recording);
}

TEST(DecideAfterStep, ContinuePolicyStopsRecordingOnly) {
  StepDecision d = DecideAfterStep(RunNews{0, 0, true}, OnRecordError::kContinue);
  EXPECT_TRUE(d.stop_recording);
  EXPECT_FALSE(d.fail || d.interrupt);
  d = DecideAfterStep(RunNews{SIGTERM, 0, true}, OnRecordError::kContinue);
  EXPECT_TRUE(d.stop_recording && d.interrupt);
}

TEST(RunControl, PolicyNamesAndFailureTexts) {
  EXPECT_EQ(ParseOnRecordError("stop"), OnRecordError::kStop);
  EXPECT_EQ(ParseOnRecordError("continue"), OnRecordError::kContinue);
  EXPECT_EQ(RecordFailureText(0, true, ""), "rank 0: disk full");
  EXPECT_EQ(RecordFailureText(3, false, "a.db: locked"), "rank 3: recording failed: a.db: locked");
}

TEST(ShareNews, EveryRankLearnsTheSameFoldedNews) {
  std::mutex mu;
  std::vector<RunNews> seen(4);
  const Status st = RunOnDevices(4, [&](Communicator& comm) -> Status {
    RankNews mine;
    if (comm.rank() == 1) mine = {SIGINT, true, false};
    if (comm.rank() == 2) mine = {SIGTERM, false, false};
    if (comm.rank() == 3) mine = {0, true, true};
    SHARDSCOPE_ASSIGN_OR_RETURN(RunNews news, ShareNews(comm, mine));
    std::lock_guard<std::mutex> lock(mu);
    seen[comm.rank()] = news;
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.message();
  for (const RunNews& news : seen) {
    EXPECT_EQ(news.signal, SIGTERM);  // the largest
    EXPECT_EQ(news.failed_rank, 1);   // the lowest failing rank, with its own cause
    EXPECT_FALSE(news.disk_full);
  }
}

// Runs 4 devices for `steps` steps; on `fail_rank`, recording fails after step `fail_step`.
// Returns each rank's control afterwards.
std::vector<std::unique_ptr<RunControl>> RunSteps(OnRecordError policy, int fail_rank,
                                                  int64_t fail_step, int64_t steps,
                                                  std::vector<int64_t>* stopped) {
  std::vector<std::unique_ptr<RunControl>> controls;
  for (int r = 0; r < 4; ++r)
    controls.push_back(std::make_unique<RunControl>(r, nullptr, true, policy));
  stopped->assign(4, -1);
  const Status st = RunOnDevices(4, [&](Communicator& comm) -> Status {
    RunControl& c = *controls[comm.rank()];
    for (int64_t step = 1; step <= steps; ++step) {
      if (comm.rank() == fail_rank && step == fail_step) c.Recorded(Status::Io("x.db: disk I/O"));
      SHARDSCOPE_ASSIGN_OR_RETURN(const bool stop, c.AfterStep(comm, step));
      if (stop) {
        (*stopped)[comm.rank()] = step;
        return c.Outcome();
      }
    }
    return Status::Ok();
  });
  EXPECT_EQ(st.ok(), policy == OnRecordError::kContinue) << st.message();
  return controls;
}

TEST(RunControl, StopPolicyEndsEveryRankAfterTheSameStep) {
  std::vector<int64_t> stopped;
  const auto controls = RunSteps(OnRecordError::kStop, 2, 5, 20, &stopped);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(stopped[r], 5) << "rank " << r;
    EXPECT_TRUE(controls[r]->shared_failure());
    EXPECT_EQ(controls[r]->interrupted_by(), 0);
    const std::string text = controls[r]->Outcome().message();
    EXPECT_EQ(text.rfind("rank 2: recording failed", 0), 0u) << text;
    EXPECT_NE(text.find("training stopped after step 5"), std::string::npos) << text;
  }
  // Only the failing rank knows the detail.
  EXPECT_NE(controls[2]->Outcome().message().find("x.db: disk I/O"), std::string::npos);
}

TEST(RunControl, ContinuePolicyTrainsOnWithoutRecordingOnEveryRank) {
  std::vector<int64_t> stopped;
  const auto controls = RunSteps(OnRecordError::kContinue, 0, 3, 10, &stopped);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(stopped[r], -1) << "rank " << r;  // trained to the end
    EXPECT_FALSE(controls[r]->recording());
    EXPECT_EQ(controls[r]->recorder(), nullptr);
    EXPECT_EQ(controls[r]->recording_failure().rfind("rank 0: recording failed", 0), 0u);
    EXPECT_TRUE(controls[r]->Outcome().ok());
  }
}

TEST(RunControl, ContinuePolicyNamesTheLastRecordedStep) {
  const std::string path =
      (std::filesystem::path(::testing::TempDir()) / "run_control_continue.db").string();
  std::filesystem::remove(path);
  store::RunInfo info;
  info.name = "run_control_test";
  auto recorder = Recorder::Create(path, info);
  ASSERT_TRUE(recorder.ok()) << recorder.status().message();
  Recorder& rec = **recorder;
  const auto wait_for = [](const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return done();
  };
  const std::vector<store::RankStepRecord> ranks(1);
  ASSERT_TRUE(rec.RecordStep(1, 1, 2.0, ranks).ok());
  ASSERT_TRUE(wait_for([&] { return rec.last_recorded_step() == 1; }));
  (void)rec.RecordStep(1, 1, 2.0, ranks);  // a step recorded twice: the store refuses it
  ASSERT_TRUE(wait_for([&] { return !rec.failure().ok(); }));
  RunControl control(0, &rec, true, OnRecordError::kContinue);
  const Status st = RunOnDevices(1, [&](Communicator& comm) -> Status {
    SHARDSCOPE_ASSIGN_OR_RETURN(const bool stop, control.AfterStep(comm, 2));
    EXPECT_FALSE(stop);
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_FALSE(control.recording());
  EXPECT_EQ(control.recording_stopped_at(), 1);
  EXPECT_NE(control.recording_failure().find(path), std::string::npos);
  // Finish reports the run's first error, and still records the status and closes the file.
  EXPECT_FALSE(rec.Finish(store::RunStatus::kCompleted, "recording stopped at step 1").ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".lock"));
  auto reader = store::RunReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_EQ((*reader)->Run()->status, store::RunStatus::kCompleted);
  EXPECT_EQ((*reader)->Run()->status_message, "recording stopped at step 1");
  EXPECT_EQ((*reader)->Counts()->steps, 1);
}

}  // namespace
}  // namespace shardscope::cli

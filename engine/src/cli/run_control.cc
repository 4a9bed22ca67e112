#include "cli/run_control.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cli/stop_signal.h"

namespace shardscope::cli {

OnRecordError ParseOnRecordError(const std::string& text) {
  return text == "continue" ? OnRecordError::kContinue : OnRecordError::kStop;
}

Result<RunNews> ShareNews(Communicator& comm, const RankNews& mine) {
  constexpr size_t kFields = 3;  // small integers: exact as floats
  const std::vector<float> own = {static_cast<float>(mine.signal), mine.record_failed ? 1.0f : 0.0f,
                                  mine.disk_full ? 1.0f : 0.0f};
  std::vector<float> all(kFields * comm.size());
  SHARDSCOPE_RETURN_IF_ERROR(comm.AllGather(own, all));
  RunNews news;
  for (int r = 0; r < comm.size(); ++r) {
    const float* f = &all[r * kFields];
    news.signal = std::max(news.signal, static_cast<int>(f[0]));
    if (f[1] != 0.0f && news.failed_rank < 0) {
      news.failed_rank = r;
      news.disk_full = f[2] != 0.0f;
    }
  }
  return news;
}

StepDecision DecideAfterStep(const RunNews& news, OnRecordError policy) {
  StepDecision d;
  const bool record_failed = news.failed_rank >= 0;
  d.fail = record_failed && policy == OnRecordError::kStop;
  d.stop_recording = record_failed && policy == OnRecordError::kContinue;
  d.interrupt = !d.fail && news.signal != 0;  // a failure is never reported as interrupted
  return d;
}

std::string RecordFailureText(int rank, bool disk_full, const std::string& detail) {
  std::string text =
      "rank " + std::to_string(rank) + (disk_full ? ": disk full" : ": recording failed");
  return detail.empty() ? text : text + ": " + detail;
}

RunControl::RunControl(int rank, Recorder* recorder, bool recording, OnRecordError policy)
    : rank_(rank), recorder_(recorder), recording_(recording), policy_(policy) {}

void RunControl::Recorded(const Status& st) {
  if (!st.ok() && local_failure_.ok()) local_failure_ = st;
}

RankNews RunControl::MyNews() const {
  RankNews news;
  news.signal = PendingStopSignal();
  if (recording_) {
    news.record_failed =
        !local_failure_.ok() || (recorder_ != nullptr && !recorder_->failure().ok());
    news.disk_full = recorder_ != nullptr && recorder_->disk_full();
  }
  return news;
}

std::string RunControl::FailureText(const RunNews& news) const {
  std::string detail;
  if (rank_ == news.failed_rank) {
    detail = recorder_ != nullptr && !recorder_->failure().ok() ? recorder_->failure().message()
                                                                : local_failure_.message();
  }
  return RecordFailureText(news.failed_rank, news.disk_full, detail);
}

Result<bool> RunControl::AfterStep(Communicator& comm, int64_t step) {
  SHARDSCOPE_ASSIGN_OR_RETURN(RunNews news, ShareNews(comm, MyNews()));
  const StepDecision d = DecideAfterStep(news, policy_);
  const int64_t last = recorder_ != nullptr ? recorder_->last_recorded_step() : -1;
  const std::string held = last > 0 ? "the run file holds steps 1 to " + std::to_string(last)
                                    : "the run file holds no step";
  if (d.fail) {
    std::string text = FailureText(news) + "; training stopped after step " + std::to_string(step);
    if (recorder_ != nullptr) text += "; " + held;
    outcome_ = Status::Io(text + " (--on-record-error continue trains on without recording)");
    shared_failure_ = true;
    stopped_at_ = step;
    return true;
  }
  if (d.stop_recording) {
    recording_ = false;
    recording_stopped_at_ = std::max<int64_t>(last, 0);
    recording_failure_ = FailureText(news);
    if (rank_ == 0) {
      std::fprintf(stderr,
                   "\nwarning: recording stopped at step %lld: %s; training goes on without "
                   "recording (--on-record-error continue)\n",
                   static_cast<long long>(recording_stopped_at_), recording_failure_.c_str());
    }
  }
  if (d.interrupt) {
    signal_ = news.signal;
    stopped_at_ = step;
    return true;
  }
  return false;
}

Status RunControl::FailTogether(Status failure) {
  shared_failure_ = true;
  outcome_ = failure;
  return failure;
}

}  // namespace shardscope::cli

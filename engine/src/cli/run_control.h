// Internal: how the ranks of a training run stop together. After every step each rank adds
// its news (a stop signal it received, its recording failed) to one small collective, so
// every rank learns the same news after the same step and acts on it alike: no rank leaves
// while the others wait for it in a collective (docs/run-format.md, "Failure behaviour").
#pragma once

#include <cstdint>
#include <string>

#include "shardscope/communicator.h"
#include "shardscope/recorder.h"
#include "shardscope/status.h"

namespace shardscope::cli {

// `train --on-record-error`: stop the run, or train on without recording.
enum class OnRecordError { kStop, kContinue };
// "continue" -> kContinue; anything else (the CLI allows only "stop") -> kStop.
OnRecordError ParseOnRecordError(const std::string& text);

// One rank's news after a step.
struct RankNews {
  int signal = 0;              // the stop signal this rank received, 0: none
  bool record_failed = false;  // this rank's recording failed
  bool disk_full = false;      // ... because its disk is full
};

// Every rank's news folded into one: the same on every rank.
struct RunNews {
  int signal = 0;          // the largest stop signal any rank received, 0: none
  int failed_rank = -1;    // the lowest rank whose recording failed, -1: none
  bool disk_full = false;  // that rank's cause
};

// Collective: every rank's news to every rank (one AllGather of three numbers per rank).
Result<RunNews> ShareNews(Communicator& comm, const RankNews& mine);

// What every rank does after a step, from the shared news and the policy.
struct StepDecision {
  bool stop_recording = false;  // recording failed; training goes on without it
  bool fail = false;            // recording failed; the run stops, failed
  bool interrupt = false;       // a stop signal; the run stops, interrupted
};
StepDecision DecideAfterStep(const RunNews& news, OnRecordError policy);

// "rank R: disk full: <detail>" or "rank R: recording failed: <detail>" (no detail: none).
std::string RecordFailureText(int rank, bool disk_full, const std::string& detail);

// One rank's side of stopping together. Every rank of a run calls AfterStep after the same
// steps; rank 0 holds the recorder and prints.
class RunControl {
 public:
  RunControl(int rank, Recorder* recorder, bool recording, OnRecordError policy);

  // True while the ranks record (each step every rank sends its figures to rank 0).
  bool recording() const { return recording_; }
  // Rank 0's recorder while the ranks record, else null.
  Recorder* recorder() const { return recording_ ? recorder_ : nullptr; }
  // Takes the result of a call to recorder(): a failure is acted on by every rank at the
  // next AfterStep, never by this rank alone.
  void Recorded(const Status& st);

  // Collective, after step `step` (0: after the plan was recorded): shares this rank's news
  // and acts on every rank's. True when the run stops after this step; then Outcome() says
  // how (OK: interrupted).
  Result<bool> AfterStep(Communicator& comm, int64_t step);
  // For a failure every rank meets at the same step (a loss that is not finite): returns it,
  // marked as shared, so the ranks end together.
  Status FailTogether(Status failure);
  Status Outcome() const { return outcome_; }

  int interrupted_by() const { return signal_; }  // the stop signal, 0: none
  int64_t stopped_at() const { return stopped_at_; }
  bool shared_failure() const { return shared_failure_; }  // the ranks stopped together
  // When recording failed and training went on: the last step in the run file (else -1),
  // and the cause ("rank 0: disk full: ...").
  int64_t recording_stopped_at() const { return recording_stopped_at_; }
  const std::string& recording_failure() const { return recording_failure_; }

 private:
  RankNews MyNews() const;
  std::string FailureText(const RunNews& news) const;

  int rank_;
  Recorder* recorder_;
  bool recording_;
  OnRecordError policy_;
  Status local_failure_;  // the first failed recorder call on this rank
  int signal_ = 0;
  int64_t stopped_at_ = -1;
  bool shared_failure_ = false;
  Status outcome_;
  int64_t recording_stopped_at_ = -1;
  std::string recording_failure_;
};

}  // namespace shardscope::cli

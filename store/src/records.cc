#include "shardscope/store/records.h"

#include <cmath>

#include "shardscope/store/status.h"

namespace shardscope::store {
namespace {
bool SameDouble(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }
}  // namespace

bool IsBadInput(StatusCode code) {
  return code == StatusCode::kNotFound || code == StatusCode::kNotARunFile ||
         code == StatusCode::kCorrupt || code == StatusCode::kTooNew ||
         code == StatusCode::kInvalidInput;
}

const char* RunStatusName(RunStatus status) {
  switch (status) {
    case RunStatus::kRunning:
      return "running";
    case RunStatus::kCompleted:
      return "completed";
    case RunStatus::kFailed:
      return "failed";
    case RunStatus::kInterrupted:
      return "interrupted";
  }
  return "running";
}

bool ParseRunStatus(std::string_view name, RunStatus* status) {
  for (RunStatus s :
       {RunStatus::kRunning, RunStatus::kCompleted, RunStatus::kFailed, RunStatus::kInterrupted}) {
    if (name == RunStatusName(s)) {
      *status = s;
      return true;
    }
  }
  return false;
}

bool operator==(const CandidateRecord& a, const CandidateRecord& b) {
  return a.strategy == b.strategy && SameDouble(a.cost, b.cost) &&
         SameDouble(a.compute_seconds, b.compute_seconds) &&
         SameDouble(a.comm_seconds, b.comm_seconds) && a.memory_bytes == b.memory_bytes &&
         a.note == b.note;
}

bool operator==(const StepRecord& a, const StepRecord& b) {
  return a.step == b.step && a.epoch == b.epoch && SameDouble(a.loss, b.loss) &&
         SameDouble(a.seconds, b.seconds) && SameDouble(a.time, b.time) && a.ranks == b.ranks;
}

bool operator==(const EvaluationRecord& a, const EvaluationRecord& b) {
  return a.id == b.id && a.step == b.step && a.epoch == b.epoch && a.name == b.name &&
         SameDouble(a.loss, b.loss) && SameDouble(a.accuracy, b.accuracy) &&
         a.samples == b.samples && SameDouble(a.seconds, b.seconds) && SameDouble(a.time, b.time);
}

}  // namespace shardscope::store

// Internal: progress reporting for long work.
//
// On a terminal: one line rewritten in place (step, loss, rate, ETA). Otherwise: a plain
// line at most every `plain_every` steps, so logs stay readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace shardscope::cli {

class Progress {
 public:
  // `force_plain`: plain lines even on a terminal (e.g. --log-every).
  Progress(std::FILE* out, int64_t total_steps, int64_t plain_every, bool force_plain = false);
  // Reports that `step` (1-based, of total) finished with `loss`, `samples` examples since
  // the last call.
  void Update(int64_t step, const std::string& phase, float loss, int64_t samples);
  // Ends the in-place line (if any).
  void Finish();
  bool interactive() const { return interactive_; }

 private:
  std::FILE* out_;
  int64_t total_, plain_every_;
  bool interactive_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  int64_t samples_ = 0;
  bool drawn_ = false;
};

// "1:05" or "1:02:05".
std::string FormatDuration(double seconds);
// "512 B", "3.6 kB", "25.80 GB".
std::string HumanBytes(double bytes);

}  // namespace shardscope::cli

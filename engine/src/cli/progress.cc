#include "cli/progress.h"

#include <unistd.h>

namespace shardscope::cli {

std::string FormatDuration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  }
  return buf;
}

Progress::Progress(std::FILE* out, int64_t total_steps, int64_t plain_every, bool force_plain)
    : out_(out),
      total_(total_steps),
      plain_every_(plain_every < 1 ? 1 : plain_every),
      interactive_(!force_plain && isatty(fileno(out)) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

void Progress::Update(int64_t step, const std::string& phase, float loss, int64_t samples) {
  samples_ += samples;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const bool last = step == total_;
  if (interactive_) {
    // Redraw at most 10 times a second.
    if (!last && std::chrono::duration<double>(now - last_draw_).count() < 0.1) return;
  } else if (step % plain_every_ != 0 && !last && step != 1) {
    return;
  }
  last_draw_ = now;
  const double rate = elapsed > 0 ? samples_ / elapsed : 0.0;
  const double eta = step > 0 ? elapsed / step * (total_ - step) : 0.0;
  std::fprintf(out_, "%s%s step %lld/%lld  loss %.4f  %.0f samples/s  ETA %s%s",
               interactive_ ? "\r\033[K" : "", phase.c_str(), static_cast<long long>(step),
               static_cast<long long>(total_), loss, rate, FormatDuration(eta).c_str(),
               interactive_ ? "" : "\n");
  std::fflush(out_);
  drawn_ = true;
}

void Progress::Finish() {
  if (interactive_ && drawn_) std::fputc('\n', out_);
  drawn_ = false;
  std::fflush(out_);
}

std::string HumanBytes(double bytes) {
  char buf[32];
  if (bytes >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  } else if (bytes >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f MB", bytes / 1e6);
  } else if (bytes >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1f kB", bytes / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  }
  return buf;
}

}  // namespace shardscope::cli

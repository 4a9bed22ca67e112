// ScheduleGradientReductions: one communication stream beside the backward (gradient_overlap.h).
#include "shardscope/gradient_overlap.h"

#include <algorithm>

namespace shardscope {

GradientOverlap ScheduleGradientReductions(const std::vector<BackwardSegment>& backward,
                                           double bucket_bytes) {
  GradientOverlap o;
  o.critical.assign(backward.size(), 0);
  struct Launch {
    size_t first = 0, last = 0;  // the segments whose reductions it carries
    bool waited = false;         // started after the one before it, not when ready
  };
  std::vector<Launch> launches;
  double now = 0, free = 0;  // backward time; when the stream is next idle
  double open_bytes = 0, open_seconds = 0;
  size_t open_first = 0;
  bool open = false;
  const auto launch = [&](double seconds, size_t first, size_t last) {
    launches.push_back({first, last, free > now});
    free = std::max(free, now) + seconds;
  };
  for (size_t s = 0; s < backward.size(); ++s) {
    now += backward[s].seconds;
    for (const GradientReduction& r : backward[s].reductions) {
      o.reduction_seconds += r.seconds;
      if (!r.bucketed || bucket_bytes <= 0) {
        launch(r.seconds, s, s);
        continue;
      }
      if (!open) open_first = s;
      open = true;
      open_bytes += r.bytes;
      open_seconds += r.seconds;
      if (open_bytes >= bucket_bytes) {
        launch(open_seconds, open_first, s);
        open = false;
        open_bytes = open_seconds = 0;
      }
    }
  }
  if (open) launch(open_seconds, open_first, backward.empty() ? 0 : backward.size() - 1);
  o.backward_seconds = now;
  o.done_seconds = std::max(free, now);
  o.launches = static_cast<int>(launches.size());
  if (o.done_seconds > now) {
    for (size_t k = launches.size(); k-- > 0;) {
      for (size_t s = launches[k].first; s <= launches[k].last; ++s) o.critical[s] = 1;
      if (!launches[k].waited) break;
    }
  }
  return o;
}

}  // namespace shardscope

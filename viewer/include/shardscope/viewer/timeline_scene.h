// Pipeline timeline: one step of a placed run (place(), micro-batches) as a Gantt chart.
//
// One lane per worker (role "lane", id = worker), one box per pipeline span (role "span",
// id = micro-batch, key = phase): forward blue, backward orange, labelled with the
// micro-batch. A span is light where the worker waited for its input (idle_seconds, drawn
// first: a receive blocks before the kernels) and solid where it worked (role "work"). The
// lane behind is hatched grey (role "idle", id = worker): gaps between spans and the light
// parts together are the pipeline bubble. The optimizer update is not recorded as a span (it
// follows the last backward span on every worker), so the chart has no optimizer boxes.
//
// The bubble figures are computed from the spans (docs/run-format.md, pipeline_span):
//   makespan        the latest end_seconds of the step over all workers
//   busy(w)         Σ (end − start − idle) over worker w's spans: time it was working
//   measured bubble 1 − Σ_w busy(w) / (workers · makespan)
//   theoretical     (p − 1) / (m + p − 1), p = workers, m = micro-batches (equal stages)
#pragma once

#include <cstdint>
#include <vector>

#include "shardscope/store/records.h"
#include "shardscope/viewer/scene.h"

namespace shardscope::viewer {

// One worker's figures in one step.
struct TimelineWorker {
  int64_t worker = 0;
  double busy_seconds = 0;     // Σ (end − start − idle)
  double compute_seconds = 0;  // Σ compute_seconds (in kernels)
  double idle_seconds = 0;     // makespan − busy: waiting and the bubble
  double end_seconds = 0;      // its last span's end
};

struct TimelineSummary {
  int64_t step = 0;
  int64_t workers = 0;            // distinct ranks with spans in the step
  int64_t micro_batches = 0;      // distinct micro-batches in the step
  int64_t unplaceable_spans = 0;  // NaN, infinite or negative times, end < start: not in `spans`
  double makespan_seconds = 0;
  double measured_bubble = 0;                    // in [0, 1]
  double theoretical_bubble = 0;                 // (p − 1) / (m + p − 1)
  std::vector<TimelineWorker> per_worker;        // by worker
  std::vector<store::PipelineSpanRecord> spans;  // of this step, by (worker, start)
};

// The steps that have spans, ascending.
std::vector<int64_t> TimelineSteps(const std::vector<store::PipelineSpanRecord>& spans);

// The figures of `step` (an empty summary, workers == 0, when it has no spans).
TimelineSummary SummarizeTimeline(const std::vector<store::PipelineSpanRecord>& spans,
                                  int64_t step);

// The chart of `step`; "no pipeline timeline recorded" (role "label") when it has no spans.
// What it cannot draw (unplaceable spans, lanes beyond 256, items beyond kMaxSceneItems) is
// counted in a line of role "note".
Scene BuildTimelineScene(const std::vector<store::PipelineSpanRecord>& spans, int64_t step);

}  // namespace shardscope::viewer

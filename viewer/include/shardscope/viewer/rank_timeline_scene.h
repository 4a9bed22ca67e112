// Rank timeline: one timed step of one rank of an SPMD run (instruction_span, recorded by
// `train --timing-every N`), drawn like the pipeline timeline (timeline_scene.h): lanes over
// a time axis in ms.
//
// Lanes (role "lane", key = lane name): "compute" (one box per compute instruction, blue),
// "communication" (whole redistributions, orange; gradient buckets' all-reduces, red) and
// "collectives" (each redistribution step inside its redistribution, light orange). Boxes have
// role "span", key = instruction_span.kind, id = the instruction's ordinal, and are labelled
// with the operator or collective where they fit. The title gives compute against
// communication; a table under the lanes (`breakdown`) sums them per operator kind and per
// collective (the GUI shows that table beside the picture instead).
#pragma once

#include "shardscope/store/rank_summary.h"
#include "shardscope/viewer/scene.h"

namespace shardscope::viewer {

// "no per-instruction timing recorded ..." (role "label") when summary.timing has no spans.
Scene BuildRankTimelineScene(const store::RankSummary& summary, bool breakdown = true);

}  // namespace shardscope::viewer

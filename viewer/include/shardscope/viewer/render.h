// One view of a run as a Scene, chosen by name: what `shardscope render` draws.
//
//   graph                    the operator graph (GraphOptions)
//   mesh [ID|NAME]           a device matrix (default: the mesh with the most devices)
//   tensor NAME              a tensor's map at its producer
//   redistribution ID        frame `step` of a redistribution plan
//   timeline                 the pipeline timeline of training step `step` (< 0: the last)
//   loss, steptime, memory   charts of the training steps and of memory per rank
//
// Errors (kInvalidInput / kNotFound) name what was asked and what exists.
#pragma once

#include <string>

#include "shardscope/store/status.h"
#include "shardscope/viewer/graph_scene.h"
#include "shardscope/viewer/run_document.h"
#include "shardscope/viewer/scene.h"

namespace shardscope::viewer {

struct RenderRequest {
  std::string view;    // graph | mesh | tensor | redistribution | timeline | loss | ...
  std::string target;  // mesh id or name, tensor name, redistribution id
  int step = 0;        // redistribution frame; timeline: training step (< 0: the last)
  int rank = -1;       // tensor: one rank's view; mesh: the rank outlined
  std::string axis;    // mesh: highlight the rank groups along this axis (names, comma-separated)
  GraphOptions graph;
};

store::Result<Scene> RenderView(const RunData& run, const RenderRequest& request);

}  // namespace shardscope::viewer

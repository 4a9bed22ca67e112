#include "shardscope/viewer/render.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "shardscope/viewer/chart_scene.h"
#include "shardscope/viewer/layout_text.h"
#include "shardscope/viewer/mesh_scene.h"
#include "shardscope/viewer/rank_timeline_scene.h"
#include "shardscope/viewer/redistribution_scene.h"
#include "shardscope/viewer/tensor_scene.h"
#include "shardscope/viewer/timeline_scene.h"

namespace shardscope::viewer {
namespace {

store::Status Bad(store::StatusCode code, const std::string& message) {
  return store::Status(code, message);
}

bool ParseInt(const std::string& text, int64_t* value) {
  const char* end = text.data() + text.size();
  auto [at, error] = std::from_chars(text.data(), end, *value);
  return !text.empty() && error == std::errc() && at == end;
}

int64_t MeshSize(const store::MeshRecord& mesh) {
  int64_t size = 1;
  for (int64_t d : mesh.shape) size *= d;
  return size;
}

store::Result<Scene> RenderMesh(const RunData& run, const RenderRequest& request) {
  const store::MeshRecord* record = nullptr;
  int64_t id = 0;
  for (const auto& m : run.meshes) {
    if (request.target.empty()) {
      if (!record || MeshSize(m) > MeshSize(*record)) record = &m;
    } else if (m.name == request.target || (ParseInt(request.target, &id) && m.id == id)) {
      record = &m;
      break;
    }
  }
  if (!record) {
    std::string known;
    for (const auto& m : run.meshes) known += (known.empty() ? "" : ", ") + std::to_string(m.id);
    return Bad(store::StatusCode::kNotFound,
               "mesh '" + request.target +
                   "' is not in the run (meshes: " + (known.empty() ? "none" : known) + ")");
  }
  auto mesh = MeshFromRecord(*record);
  if (!mesh.ok()) return Bad(store::StatusCode::kCorrupt, mesh.status().message());
  MeshSceneOptions options;
  options.title = QString("mesh %1").arg(record->id);
  options.rank_offset = static_cast<int>(MeshRankOffset(*record));  // --rank: a world rank
  options.selected_rank = request.rank >= 0 ? request.rank - options.rank_offset : -1;
  if (!request.axis.empty()) {
    std::stringstream names(request.axis);
    std::string name;
    while (std::getline(names, name, ',')) {
      auto axis = mesh->axis_index(name);
      if (!axis.ok()) return Bad(store::StatusCode::kInvalidInput, axis.status().message());
      options.axes.push_back(*axis);
    }
  }
  return BuildMeshScene(*mesh, options);
}

store::Result<Scene> RenderTensor(const RunData& run, const RenderRequest& request) {
  const store::TensorRecord* tensor = run.TensorNamed(request.target);
  if (!tensor) {
    return Bad(store::StatusCode::kNotFound,
               "tensor '" + request.target + "' is not in the run (see `shardscope inspect`)");
  }
  const store::MeshRecord* record = run.Mesh(tensor->mesh_id);
  if (!record || tensor->layout.empty()) {
    return Bad(store::StatusCode::kNotFound,
               "tensor '" + request.target + "' has no recorded layout");
  }
  auto mesh = MeshFromRecord(*record);
  if (!mesh.ok()) return Bad(store::StatusCode::kCorrupt, mesh.status().message());
  auto layout = ParseStoredLayout(tensor->layout, *mesh, tensor->shape);
  if (!layout.ok()) {
    return Bad(store::StatusCode::kCorrupt,
               "tensor '" + tensor->name + "': " + layout.status().message());
  }
  const int offset = static_cast<int>(MeshRankOffset(*record));  // --rank: a world rank
  if (request.rank >= 0 && (request.rank < offset || request.rank - offset >= mesh->size())) {
    return Bad(store::StatusCode::kInvalidInput,
               "rank " + std::to_string(request.rank) + " is not on " + record->name);
  }
  TensorSceneOptions options;
  options.title = QString::fromStdString(tensor->name);
  options.rank = request.rank >= 0 ? request.rank - offset : -1;
  options.rank_offset = offset;
  return BuildTensorScene(*layout, options);
}

store::Result<Scene> RenderTimeline(const RunData& run, const RenderRequest& request) {
  if (request.rank >= 0) {  // SPMD: one rank's program (instruction_span)
    SHARDSCOPE_ASSIGN_OR_RETURN(
        store::RankSummary summary,
        run.RankSummaryOf(request.rank, request.step < 0 ? store::kNone : request.step));
    if (request.step >= 0 && summary.timing.step == store::kNone &&
        !summary.timing.timed_steps.empty()) {
      return Bad(store::StatusCode::kNotFound,
                 "timeline: step " + std::to_string(request.step) +
                     " was not timed (timed: " + std::to_string(summary.timing.timed_steps.size()) +
                     " steps, the last " + std::to_string(summary.timing.timed_steps.back()) + ")");
    }
    return BuildRankTimelineScene(summary);
  }
  const std::vector<int64_t> steps = TimelineSteps(run.pipeline_spans);
  // An empty table draws "no pipeline timeline recorded" rather than failing.
  if (steps.empty()) return BuildTimelineScene(run.pipeline_spans, request.step);
  const int64_t step = request.step < 0 ? steps.back() : request.step;
  if (!std::binary_search(steps.begin(), steps.end(), step)) {
    return Bad(store::StatusCode::kNotFound,
               "timeline: step " + std::to_string(step) + " has no pipeline spans (steps " +
                   std::to_string(steps.front()) + ".." + std::to_string(steps.back()) + ")");
  }
  return BuildTimelineScene(run.pipeline_spans, step);
}

}  // namespace

store::Result<Scene> RenderView(const RunData& run, const RenderRequest& request) {
  if (request.view == "graph") return BuildGraphScene(run, request.graph);
  if (request.view == "mesh") return RenderMesh(run, request);
  if (request.view == "tensor") return RenderTensor(run, request);
  if (request.view == "redistribution") {
    int64_t id = 0;
    if (!ParseInt(request.target, &id)) {
      return Bad(store::StatusCode::kInvalidInput,
                 "redistribution: expected an id (0, 1, ...), got '" + request.target + "'");
    }
    const store::RedistributionRecord* r = run.Redistribution(id);
    if (!r) {
      return Bad(store::StatusCode::kNotFound,
                 "redistribution " + request.target + " is not in the run (it has " +
                     std::to_string(run.redistributions.size()) + ")");
    }
    return BuildRedistributionFrame(run, *r, request.step);
  }
  if (request.view == "timeline") return RenderTimeline(run, request);
  if (request.view == "loss") return BuildLossChart(run);
  if (request.view == "steptime") return BuildStepTimeChart(run);
  if (request.view == "memory") return BuildMemoryChart(run);
  return Bad(store::StatusCode::kInvalidInput,
             "unknown view '" + request.view +
                 "': use graph, mesh, tensor, redistribution, timeline, loss, steptime or memory");
}

}  // namespace shardscope::viewer

// A run held in memory for GUI tests: one tensor "x" (id 1) of a shape, redistributed from a
// layout on mesh 0 through planned steps, each after-layout on its own mesh.
#pragma once

#include <string>
#include <vector>

#include "shardscope/viewer/run_document.h"

namespace shardscope_gui_test {

struct PlannedStep {
  std::string kind;          // "all-gather", ...
  std::string layout_after;  // stored layout text
  int64_t mesh_id = 0;
  shardscope::store::RankGroups groups = {};
};

inline shardscope::viewer::RunData InMemoryRun(std::vector<shardscope::store::MeshRecord> meshes,
                                               std::vector<int64_t> shape, const std::string& from,
                                               const std::vector<PlannedStep>& steps) {
  shardscope::viewer::RunData run;
  run.run.name = "memory";
  run.meshes = std::move(meshes);
  shardscope::store::TensorRecord t;
  t.id = 1;
  t.name = "x";
  t.shape = std::move(shape);
  t.layout = from;
  t.mesh_id = 0;
  run.tensors.push_back(t);
  shardscope::store::RedistributionRecord r;
  r.id = 0;
  r.tensor_id = 1;
  r.from_layout = from;
  r.from_mesh_id = r.plan_mesh_id = 0;
  r.to_layout = steps.back().layout_after;
  r.to_mesh_id = steps.back().mesh_id;
  for (const PlannedStep& p : steps) {
    shardscope::store::RedistStepRecord s;
    s.kind = p.kind;
    s.layout_after = p.layout_after;
    s.mesh_id = p.mesh_id;
    s.groups = p.groups;
    r.steps.push_back(s);
  }
  run.redistributions.push_back(r);
  return run;
}

}  // namespace shardscope_gui_test

// Internal: where the rows of a program cut into pipeline stages go (RecordSubMeshPlan):
// each operator, instruction and value on its stage, whose mesh is the stage's world ranks.
#pragma once

#include <string>
#include <vector>

#include "shardscope/layout/mesh.h"
#include "shardscope/store/records.h"

namespace shardscope {

struct PlanStages {
  int stages = 1;
  int stage_devices = 1;         // k: stage s holds world ranks s*k .. s*k+k-1
  std::vector<int> node_stage;   // per graph node (-1: on no stage)
  std::vector<int> instr_stage;  // per program instruction
  std::vector<int> value_stage;  // per DistValue: its producer's stage, else its first reader's

  int OfNode(size_t node) const { return node < node_stage.size() ? node_stage[node] : -1; }
  int OfValue(size_t value) const { return value < value_stage.size() ? value_stage[value] : -1; }
  // Per-rank figures of a stage's k ranks moved to their world ranks (zeros before them).
  std::vector<int64_t> WorldIndexed(const std::vector<int64_t>& local, int stage) const;
  // The mesh row of `mesh` on `stage`: its ranks the stage's world ranks, its name saying so.
  void OnStage(const DeviceMesh& mesh, int stage, store::MeshRecord* record) const;
};

}  // namespace shardscope

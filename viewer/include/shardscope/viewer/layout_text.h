// Meshes and layouts of a run file back as engine values (shardscope_layout), so the views
// use the engine's own layout math (blocks, owners, replica and partial groups).
#pragma once

#include <string>
#include <vector>

#include "shardscope/layout/layout.h"
#include "shardscope/layout/mesh.h"
#include "shardscope/store/records.h"

namespace shardscope::viewer {

// The mesh of a MeshRecord (shape, axis names, rank list) through DeviceMesh::Create. A
// pipeline stage's mesh lists world ranks first..first+N-1 (Recorder::RecordSubMeshPlan): the
// mesh numbers them from 0 (its layouts and steps are stage-local), MeshRankOffset adds first.
Result<DeviceMesh> MeshFromRecord(const store::MeshRecord& mesh);

// The first world rank of a stage's mesh (its ranks less it are 0..N-1, N > 0 ranks); else 0.
int64_t MeshRankOffset(const store::MeshRecord& mesh);

// A layout as the engine prints it ("[mp | sp.dp] P(dp)", "[-]", "[]") for a tensor of
// `shape` on `mesh`: rewritten to the spec form ("mp,sp.dp|P(dp)") and read by
// ParseLayoutSpec. Errors name the text and the reason.
Result<Layout> ParseStoredLayout(const std::string& text, const DeviceMesh& mesh,
                                 const std::vector<int64_t>& shape);

}  // namespace shardscope::viewer

// MeshSceneMemo: the device matrices the stepper shows step after step (the plan mesh with
// each step's axes), built once: at 4096 ranks a matrix is thousands of items (issue 21).
#pragma once

#include <list>
#include <utility>

#include "shardscope/viewer/mesh_scene.h"

namespace shardscope::gui {

class MeshSceneMemo {
 public:
  // BuildMeshScene(mesh, options) of mesh record `mesh_id`, from the last few kept.
  const viewer::Scene& Get(int64_t mesh_id, const DeviceMesh& mesh,
                           const viewer::MeshSceneOptions& options) {
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (it->first == Key{mesh_id, options}) {
        kept_.splice(kept_.begin(), kept_, it);  // most recent first
        return kept_.front().second;
      }
    }
    if (kept_.size() == kKept) kept_.pop_back();
    kept_.emplace_front(Key{mesh_id, options}, viewer::BuildMeshScene(mesh, options));
    return kept_.front().second;
  }
  // A new run: its mesh ids name other meshes.
  void Clear() { kept_.clear(); }

 private:
  struct Key {
    int64_t mesh_id;
    viewer::MeshSceneOptions options;
    bool operator==(const Key& o) const {
      return mesh_id == o.mesh_id && options.axes == o.options.axes &&
             options.selected_rank == o.options.selected_rank && options.title == o.options.title &&
             options.max_size == o.options.max_size;
    }
  };
  static constexpr size_t kKept = 8;
  std::list<std::pair<Key, viewer::Scene>> kept_;
};

}  // namespace shardscope::gui

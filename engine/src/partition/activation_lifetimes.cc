// Activations live from their writer to their last reader: every value an instruction writes
// is allocated only while live (DistProgram::transient), except what is read after the step.
#include "partition/partition_passes.h"

namespace shardscope {

void MarkActivationsTransient(DistProgram* p) {
  std::vector<bool> kept(p->values.size(), false);
  // Read after the step: the loss, and by the update the parameters and gradients (not a
  // reduce-scattered gradient: freed once its slice is taken, ZeRO 2/3).
  if (p->loss >= 0) kept[p->loss] = true;
  for (size_t i = 0; i < p->param_grads.size(); ++i) {
    const auto [param, grad] = p->param_grads[i];
    kept[param] = true;
    kept[grad] = i >= p->param_sharding.size() || !p->param_sharding[i].reduce_scatter;
  }
  for (const DistInstr& in : p->instrs) {
    for (int v : in.outputs)
      if (!kept[v]) p->transient[v] = true;
  }
}

}  // namespace shardscope

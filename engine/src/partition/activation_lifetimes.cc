// Activations live from their writer to their last reader: every value an instruction writes
// is allocated only while live (DistProgram::transient), except what is read after the step.
#include "partition/partition_passes.h"

namespace shardscope {

void MarkActivationsTransient(DistProgram* p) {
  std::vector<bool> kept(p->values.size(), false);
  if (p->loss >= 0) kept[p->loss] = true;  // read after the step (the loss) or by the
  for (size_t i = 0; i < p->param_grads.size(); ++i) {  // update; a reduce-scattered gradient
    const auto [param, grad] = p->param_grads[i];     // is freed once in its slice
    kept[param] = true;
    kept[grad] = i >= p->param_sharding.size() || !p->param_sharding[i].reduce_scatter;
  }
  for (const DistInstr& in : p->instrs) {
    for (int v : in.outputs)
      if (!kept[v]) p->transient[v] = true;
  }
}

}  // namespace shardscope

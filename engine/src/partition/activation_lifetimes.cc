// Activations live from their writer to their last reader: every value an instruction writes
// is allocated only while live (DistProgram::transient), except what is read after the step.
#include "partition/partition_passes.h"

namespace shardscope {

void MarkActivationsTransient(DistProgram* p) {
  std::vector<bool> kept(p->values.size(), false);
  if (p->loss >= 0) kept[p->loss] = true;  // read after the step (the loss) or by the
  for (const auto& [param, grad] : p->param_grads) kept[param] = kept[grad] = true;  // update
  for (const DistInstr& in : p->instrs) {
    for (int v : in.outputs)
      if (!kept[v]) p->transient[v] = true;
  }
}

}  // namespace shardscope

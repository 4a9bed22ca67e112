// The three writers behind ExportPlan (plan_export.h); internal to shardscope_export.
#pragma once

#include <string>
#include <vector>

#include "shardscope/plan_export.h"

namespace shardscope::export_detail {

Result<PlanExport> WriteDTensor(const std::vector<ExportedTensor>& tensors, int devices,
                                const std::string& model);
Result<PlanExport> WriteJax(const std::vector<ExportedTensor>& tensors, int devices,
                            const std::string& model);
Result<PlanExport> WriteMindSpore(const Graph& graph, const DistProgram& program,
                                  const std::vector<ExportedTensor>& tensors,
                                  const std::string& model);

}  // namespace shardscope::export_detail

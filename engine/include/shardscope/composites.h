// Operators built from others: graph fragments for operators that importers and model code
// need but that are better expressed through existing ones.
#pragma once

#include <string>

#include "shardscope/graph.h"

namespace shardscope {

// ONNX BatchNormalization with training_mode = 1: the batch mean and (population) variance
// of x [N, C, ...] over every axis but 1, by ReduceMean, then BatchNorm with them. Splitting
// the batch makes the statistics partial sums that the partitioner reduces (synchronised
// batch norm); autodiff differentiates through them. Nodes "<name>.mean", "<name>.var", ...,
// and "<name>" (the BatchNorm); returns its output.
Result<ValueId> AddBatchNormTraining(Graph& g, const std::string& name, ValueId x, ValueId scale,
                                     ValueId bias, float epsilon);

}  // namespace shardscope

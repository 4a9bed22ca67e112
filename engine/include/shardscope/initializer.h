// Seeded parameter initialisation.
//
// A parameter's values depend only on (seed, parameter name, shape, InitSpec): never on the
// device count or the order parameters are created in, so every strategy of a model starts
// from the same numbers (the correctness law needs this).
#pragma once

#include <cstdint>

#include "shardscope/graph.h"
#include "shardscope/tensor.h"

namespace shardscope {

// fan_in / fan_out: [in, out] for matrices, [O, C, KH, KW] for convolutions, [n] vectors
// count n as both.
void FanInOut(const Shape& shape, int64_t* fan_in, int64_t* fan_out);

Tensor InitializeValue(const Value& value, uint64_t seed);

}  // namespace shardscope

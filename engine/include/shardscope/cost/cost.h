// Module cost (engine/src/cost, library shardscope_cost): the cost model (cost_model.h), how
// calibrate combines its rounds (calibration.h) and what it measures (calibration_measure.h).
// Depends on layout; the redistribution planner and the searches price with it.
#pragma once

#include "shardscope/cost/calibration.h"
#include "shardscope/cost/calibration_measure.h"
#include "shardscope/cost/cluster.h"
#include "shardscope/cost/cost_model.h"
#include "shardscope/cost/dtype.h"
#include "shardscope/cost/profile_fields.h"

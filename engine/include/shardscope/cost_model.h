// Forwarding header, removed after the restructure merge.
#include "shardscope/cost/cost_model.h"

// Forwarding header, removed after the restructure merge.
#include "shardscope/cost/calibration.h"

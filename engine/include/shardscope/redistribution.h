// Forwarding header, removed after the restructure merge.
#include "shardscope/redistribution/redistribution.h"

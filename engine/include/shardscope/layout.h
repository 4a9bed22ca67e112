// Forwarding header, removed after the restructure merge.
#include "shardscope/layout/layout.h"

// Status and Result<T> (defined in shardscope_base, shared with the store and the viewer).
#pragma once

#include "shardscope/base/status.h"

// Internal: numeric option checks with plain messages ("--steps: must be at least 1, got 0").
// CLI11's PositiveNumber / NonNegativeNumber spell their range out (2.2e-308 to a 309-digit
// number); every numeric option of `shardscope` uses these instead.
#pragma once

#include <CLI/CLI.hpp>

namespace shardscope::cli {

CLI::Validator AtLeast(double minimum);        // counts, sizes, seeds (minimum 0 or 1)
CLI::Validator GreaterThan(double exclusive);  // rates, learning rates (> 0)

}  // namespace shardscope::cli

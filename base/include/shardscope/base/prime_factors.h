// Prime factorisation of device counts and axis sizes (mesh unification, search splits).
#pragma once

#include <cstdint>
#include <vector>

namespace shardscope {

// The prime factors of n with multiplicity, ascending (12 -> 2, 2, 3); empty for n < 2.
std::vector<int64_t> PrimeFactors(int64_t n);

}  // namespace shardscope

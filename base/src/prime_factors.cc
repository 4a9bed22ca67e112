#include "shardscope/base/prime_factors.h"

namespace shardscope {

std::vector<int64_t> PrimeFactors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t f = 2; f <= n / f; ++f) {
    while (n % f == 0) {
      out.push_back(f);
      n /= f;
    }
  }
  if (n > 1) out.push_back(n);
  return out;
}

}  // namespace shardscope

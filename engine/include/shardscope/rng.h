// Rng: a small, portable, seeded random generator (SplitMix64 + Box-Muller).
//
// Unlike std::normal_distribution, its sequence is fixed by this code alone, so the same
// seed gives the same numbers on every compiler, rank and device count.
#pragma once

#include <cstdint>
#include <string_view>

namespace shardscope {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t NextU64();
  // Uniform in [0, 1).
  double Uniform();
  // Standard normal.
  double Normal();
  // Uniform integer in [0, n).
  uint64_t Below(uint64_t n);

 private:
  uint64_t state_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// A stable 64-bit hash (FNV-1a) used to derive per-name seeds.
uint64_t StableHash(std::string_view text);
// The seed of a named stream: the same (seed, name) gives the same stream everywhere.
inline uint64_t DeriveSeed(uint64_t seed, std::string_view name) {
  return StableHash(name) ^ (seed * 0x9E3779B97F4A7C15ULL);
}

}  // namespace shardscope

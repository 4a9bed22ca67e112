#include "shardscope/initializer.h"

#include <cmath>

#include "shardscope/rng.h"

namespace shardscope {

void FanInOut(const Shape& shape, int64_t* fan_in, int64_t* fan_out) {
  if (shape.size() == 2) {
    *fan_in = shape[0];
    *fan_out = shape[1];
  } else if (shape.size() == 4) {
    const int64_t receptive = shape[2] * shape[3];
    *fan_in = shape[1] * receptive;
    *fan_out = shape[0] * receptive;
  } else {
    *fan_in = *fan_out = shape.empty() ? 1 : shape.back();
  }
}

Tensor InitializeValue(const Value& value, uint64_t seed) {
  if (value.init.kind == InitSpec::kData) return *value.init.data;
  Tensor t(value.shape);
  Rng rng(DeriveSeed(seed, value.name));
  int64_t fan_in = 1, fan_out = 1;
  FanInOut(value.shape, &fan_in, &fan_out);
  const InitSpec& init = value.init;
  auto uniform = [&](double bound) {
    for (int64_t i = 0; i < t.size(); ++i)
      t[i] = static_cast<float>((2.0 * rng.Uniform() - 1.0) * bound);
  };
  auto normal = [&](double stddev) {
    for (int64_t i = 0; i < t.size(); ++i) t[i] = static_cast<float>(rng.Normal() * stddev);
  };
  switch (init.kind) {
    case InitSpec::kZeros:
      break;
    case InitSpec::kOnes:
      t.Fill(1.0f);
      break;
    case InitSpec::kNormal:
      normal(init.scale);
      break;
    case InitSpec::kTruncatedNormal:
      for (int64_t i = 0; i < t.size(); ++i) {
        double z;
        do z = rng.Normal();
        while (std::abs(z) > 2.0);
        t[i] = static_cast<float>(z * init.scale);
      }
      break;
    case InitSpec::kXavierUniform:
      uniform(std::sqrt(6.0 / static_cast<double>(fan_in + fan_out)));
      break;
    case InitSpec::kHeNormal:
      normal(std::sqrt(2.0 / static_cast<double>(fan_in)));
      break;
    case InitSpec::kUniform:
      uniform(init.scale);
      break;
    case InitSpec::kFanInUniform:
      uniform(1.0 / std::sqrt(static_cast<double>(fan_in)));
      break;
    case InitSpec::kData:  // returned above
      break;
  }
  return t;
}

}  // namespace shardscope

// MakeSyntheticDataset: class prototypes plus Gaussian noise, from two seeded streams.

#include <cassert>
#include <vector>

#include "shardscope/data.h"
#include "shardscope/rng.h"

namespace shardscope {

namespace {
constexpr double kNoiseStddev = 0.5;
}  // namespace

Dataset MakeSyntheticDataset(int64_t n, Shape example_shape, int num_classes, uint64_t seed) {
  assert(n >= 0 && "MakeSyntheticDataset: negative example count");
  assert(num_classes >= 1 && "MakeSyntheticDataset: needs at least one class");
  for ([[maybe_unused]] int64_t d : example_shape) {
    assert(d >= 1 && "MakeSyntheticDataset: every example dimension must be >= 1");
  }
  const int64_t dim = NumElements(example_shape);

  // Prototypes come from their own stream so that they do not depend on n.
  Rng proto_rng(DeriveSeed(seed, "shardscope.data.synthetic.prototypes"));
  std::vector<float> prototypes(static_cast<size_t>(num_classes * dim));
  for (float& v : prototypes) v = static_cast<float>(proto_rng.Normal());

  // Examples one after another (label, then its elements): a prefix property in n.
  Rng rng(DeriveSeed(seed, "shardscope.data.synthetic.examples"));
  Shape shape = example_shape;
  shape.insert(shape.begin(), n);
  Dataset ds;
  ds.num_classes = num_classes;
  ds.images = Tensor(shape, DType::kF32);
  ds.labels = Tensor({n}, DType::kI32);
  float* x = ds.images.data();
  int32_t* y = ds.labels.ints();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t label = static_cast<int32_t>(rng.Below(static_cast<uint64_t>(num_classes)));
    y[i] = label;
    const float* proto = prototypes.data() + label * dim;
    float* row = x + i * dim;
    for (int64_t j = 0; j < dim; ++j) {
      row[j] = proto[j] + static_cast<float>(kNoiseStddev * rng.Normal());
    }
  }
  return ds;
}

}  // namespace shardscope

// A GPT-style stack of transformer blocks for the searches (issue 7): token embedding,
// `layers` pre-LayerNorm blocks (samples/cpp/models.h TransformerBlock), a final LayerNorm
// (as GPT-2's ln_f: it keeps the residual stream of a deep stack in scale), mean over tokens,
// a classifier head. Header-only, like models.h, so tests and benchmarks build the same model.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "models.h"
#include "shardscope/data.h"
#include "shardscope/rng.h"

namespace shardscope::samples {

class Gpt : public nn::Module {
 public:
  Gpt(int layers, int64_t vocab, int64_t tokens, int64_t dim, int64_t heads, int64_t classes)
      : nn::Module(""),
        embedding{"embedding", vocab, dim},
        ln_f{"ln_f", dim},
        head{"head", dim, classes} {
    for (int i = 0; i < layers; ++i) {
      blocks.push_back(
          std::make_unique<TransformerBlock>("layer" + std::to_string(i), tokens, dim, heads));
    }
  }
  nn::Embedding embedding;
  std::vector<std::unique_ptr<TransformerBlock>> blocks;
  nn::LayerNorm ln_f;
  nn::Dense head;

 protected:
  bool scoped() const override { return false; }
  ValueId Forward(Builder& b, ValueId tokens) override {
    ValueId x = embedding(b, tokens);
    for (auto& block : blocks) x = (*block)(b, x);
    OpAttrs mean;
    mean.axes = {1};
    return head(b, b.Op(OpKind::kReduceMean, "pool", {ln_f(b, x)}, mean));
  }
};

// `n` sequences of `tokens` ids uniform in [0, vocab) from `seed`, each labelled by
// `label(ids of the sequence)` in [0, classes).
inline Dataset MakeTokenDataset(int64_t n, int64_t tokens, int64_t vocab, int classes,
                                uint64_t seed,
                                const std::function<int32_t(std::span<const int32_t>)>& label) {
  Rng rng(seed);
  std::vector<int32_t> ids(n * tokens), labels(n, 0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t t = 0; t < tokens; ++t)
      ids[i * tokens + t] = static_cast<int32_t>(rng.Below(static_cast<uint64_t>(vocab)));
    labels[i] = label(std::span<const int32_t>(ids.data() + i * tokens, tokens));
  }
  Dataset d;
  d.images = Tensor::FromInts({n, tokens}, ids);
  d.labels = Tensor::FromInts({n}, labels);
  d.num_classes = classes;
  return d;
}

// Labelled by the sum of the ids modulo `classes` (something attention must look across
// tokens for).
inline Dataset MakeTokenSumDataset(int64_t n, int64_t tokens, int64_t vocab, int classes,
                                   uint64_t seed) {
  return MakeTokenDataset(n, tokens, vocab, classes, seed, [&](std::span<const int32_t> ids) {
    int64_t sum = 0;
    for (int32_t id : ids) sum += id;
    return static_cast<int32_t>(sum % classes);
  });
}

// Labelled by the most frequent id residue modulo `classes` (ties: the smallest residue):
// learnable from the bag of tokens within a few epochs, unlike the sum.
inline Dataset MakeTokenMajorityDataset(int64_t n, int64_t tokens, int64_t vocab, int classes,
                                        uint64_t seed) {
  return MakeTokenDataset(n, tokens, vocab, classes, seed, [&](std::span<const int32_t> ids) {
    std::vector<int> count(classes, 0);
    for (int32_t id : ids) ++count[id % classes];
    return static_cast<int32_t>(std::max_element(count.begin(), count.end()) - count.begin());
  });
}

}  // namespace shardscope::samples

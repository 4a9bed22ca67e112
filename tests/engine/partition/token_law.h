// Token models for the correctness law (in-process and under mpirun): samples/models/gpt.yaml
// on the GPL-3 as a character-level data set, and token ids that must cross a redistribution
// (an Identity before the Gather of a row-split embedding table: the i32 path of DistExecutor).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "law.h"
#include "shardscope/data.h"
#include "shardscope/model_file.h"
#include "shardscope/search.h"

namespace shardscope::testing_law {

inline constexpr char kTextFile[] = "/usr/share/common-licenses/GPL-3";

// `batch * 5` sequences of the text, for the model's positions and vocabulary.
inline Result<Dataset> TextData(const ModelFile& mf, int64_t batch) {
  SHARDSCOPE_ASSIGN_OR_RETURN(TextDataset text,
                              LoadTextDataset(kTextFile, mf.example_shape()[0], mf.num_classes()));
  Dataset d = std::move(text.train);
  const int64_t n = batch * 5, t = mf.example_shape()[0];
  d.images =
      Tensor::FromInts({n, t}, std::vector<int32_t>(d.images.ints(), d.images.ints() + n * t));
  d.labels =
      Tensor::FromInts({n, t}, std::vector<int32_t>(d.labels.ints(), d.labels.ints() + n * t));
  return d;
}

// A model file's graph with only `strategies` (operator -> in_strategy) set: the file's own
// are dropped, the other operators are data-parallel.
inline BuildFn WithStrategies(std::shared_ptr<const ModelFile> mf, int64_t batch,
                              std::map<std::string, std::string> strategies) {
  return [mf, batch, strategies]() -> Result<ModelGraph> {
    SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph m, mf->Build(batch));
    for (const Node& n : m.graph.nodes()) m.graph.mutable_node(n.id).annotations = {};
    for (const auto& [op, strategy] : strategies) {
      const NodeId n = m.graph.FindNode(op);
      if (n == kNoNode) return Status::NotFound("no operator " + op);
      m.graph.mutable_node(n).annotations.in_strategy = strategy;
    }
    return m;
  };
}

// The model file's own parallel section: its strategies, then its search for the rest.
inline BuildFn Searched(std::shared_ptr<const ModelFile> mf, int64_t batch, int devices) {
  return [mf, batch, devices]() -> Result<ModelGraph> {
    SHARDSCOPE_ASSIGN_OR_RETURN(ModelGraph m, mf->Build(batch));
    SearchOptions options;
    options.devices = devices;
    SHARDSCOPE_ASSIGN_OR_RETURN(options.mode, ParseSearchMode(mf->parallel().search));
    SHARDSCOPE_ASSIGN_OR_RETURN(SearchResult r, SearchStrategies(m.graph, options));
    SHARDSCOPE_RETURN_IF_ERROR(ApplySearchResult(r, &m.graph));
    return m;
  };
}

inline Result<std::shared_ptr<const ModelFile>> LoadGpt() {
  SHARDSCOPE_ASSIGN_OR_RETURN(
      ModelFile mf, LoadModelFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/gpt.yaml"));
  return std::make_shared<const ModelFile>(std::move(mf));
}

// Ids reach the Gather through an Identity, so a row-split table makes the partitioner
// gather them (an i32 redistribution) instead of slicing the batch input.
inline Result<std::shared_ptr<const ModelFile>> LoadIdsThroughIdentity() {
  SHARDSCOPE_ASSIGN_OR_RETURN(ModelFile mf, ParseModelText(R"(
input: {shape: [32], dtype: i32}
parameters:
  table: {shape: [80, 16], init: normal(0.5)}
  head: {shape: [16, 80], init: fan_in_uniform}
operators:
  - ids: {op: Identity, inputs: [x]}
  - gather: {op: Gather, inputs: [table, ids]}
  - flat: {op: Reshape, shape: [-1, 16]}
  - logits_rows: {op: MatMul, inputs: [flat, head]}
  - logits: {op: Reshape, shape: [-1, 32, 80]}
loss: sequence_cross_entropy
data: {dataset: text}
)",
                                                           "ids_through_identity.yaml"));
  return std::make_shared<const ModelFile>(std::move(mf));
}

}  // namespace shardscope::testing_law

// ONNX import: a .onnx file (ModelProto, opsets 7-17) as Shardscope's forward graph.
//
// LoadOnnxModel parses and checks the file once (ONNX's checker, the supported opsets and
// operators, ONNX's strict shape inference once the batch is fixed); ImportOnnxGraph then
// appends its nodes to a Builder for a given batch, any number of times. Every error names
// the file and the node (its ONNX name and op type); an operator outside SupportedOnnxOps()
// is refused, never dropped. Format and mapping: docs/model-format.md, "ONNX models".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shardscope/builder.h"
#include "shardscope/status.h"

namespace shardscope {

struct OnnxLoadOptions {
  // false (plan): initializer data is dropped after parsing and external data is never
  // opened; parameters then take the seeded initialisers.
  bool load_weights = true;
};

// The graph's data input: its element type and the shape of one example. A symbolic first
// dimension is the batch (fixed at import); a numeric one is a batch that cannot change.
struct OnnxInputInfo {
  std::string name;
  Shape example_shape;
  DType dtype = DType::kF32;  // integer inputs (token ids) become i32
  int64_t fixed_batch = 0;    // > 0: the file fixes the batch to this size
};

// A name scope of the imported graph ("layer.3.attn.q_proj") and the operators under it.
struct OnnxScope {
  std::string path;
  std::vector<NodeId> nodes;
  Shape input_shape, output_shape;  // of the scope's first outside input and last output
};

class OnnxModel;  // a parsed, checked ModelProto and its weights (onnx/onnx_model.h)

Result<std::shared_ptr<const OnnxModel>> LoadOnnxModel(const std::string& path,
                                                       const OnnxLoadOptions& options = {});
// The same from bytes; `path` names the file in messages and anchors external data.
Result<std::shared_ptr<const OnnxModel>> ParseOnnxModel(const std::string& bytes,
                                                        const std::string& path,
                                                        const OnnxLoadOptions& options = {});

const OnnxInputInfo& OnnxInput(const OnnxModel& model);
const std::string& OnnxPath(const OnnxModel& model);

// Appends the graph's nodes to `b`, reading `input` ([batch, example...]) as the data input,
// and returns the graph's output. Node names come from the exporter's: "/layer.3/attn/
// q_proj/MatMul" becomes operator "layer.3.attn.q_proj.MatMul"; `scopes` (may be null)
// receives every scope path and prefix with its operators, in first-use order.
Result<ValueId> ImportOnnxGraph(const OnnxModel& model, Builder& b, ValueId input,
                                std::vector<OnnxScope>* scopes);

// The operator an ONNX node name becomes: "/layer.3/attn/q_proj/MatMul" ->
// "layer.3.attn.q_proj.MatMul" (its scope, then its last part); "" for an empty name.
std::string OnnxOperatorName(const std::string& node_name);

// The ONNX operator types the importer maps, sorted.
std::vector<std::string> SupportedOnnxOps();

}  // namespace shardscope

// Graph: the IR every pass works on. Named values and operators in name scopes.
//
// A Graph owns its values and nodes; ids are dense indices and never reused, so iteration
// is in creation order (deterministic on every rank). Shapes are inferred and checked when
// a node is added: AddNode refuses a node whose inputs break the operator's shape rule and
// names the operator and the shapes. Nodes are appended in a valid topological order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "shardscope/ops.h"
#include "shardscope/status.h"
#include "shardscope/tensor.h"

namespace shardscope {

using ValueId = int32_t;
using NodeId = int32_t;
constexpr ValueId kNoValue = -1;
constexpr NodeId kNoNode = -1;

// kConstant values are filled once from their InitSpec (e.g. the loss seed dL/dL = 1).
enum class ValueKind : uint8_t { kInput, kLabel, kParameter, kConstant, kActivation };
const char* ValueKindName(ValueKind kind);

// How a parameter is initialised (runtime/initializer.h draws the numbers).
struct InitSpec {
  enum Kind : uint8_t {
    kZeros,
    kOnes,
    kNormal,           // N(0, scale²)
    kTruncatedNormal,  // N(0, scale²) redrawn beyond 2·scale
    kXavierUniform,    // U(±sqrt(6 / (fan_in + fan_out)))
    kHeNormal,         // N(0, 2 / fan_in)
    kUniform,          // U(±scale)
    kFanInUniform,     // U(±1/sqrt(fan_in)): PyTorch's and MindSpore's Dense default
    kData,             // the values in `data` (weights and constants of an imported model)
  };
  Kind kind = kZeros;
  float scale = 0.01f;
  std::shared_ptr<const Tensor> data = nullptr;  // kData only; shared by every build
  bool operator==(const InitSpec&) const = default;
};

struct ValueInfo {
  Shape shape;
  DType dtype = DType::kF32;
};

struct Value {
  ValueId id = kNoValue;
  std::string name;
  Shape shape;
  DType dtype = DType::kF32;
  ValueKind kind = ValueKind::kActivation;
  NodeId producer = kNoNode;  // kNoNode for inputs, labels and parameters
  int producer_output = 0;
  InitSpec init;  // parameters and constants only
};

// What the user asked for one operator: sharding strategy, layouts and placement, as
// written (seed notation). Parsed and applied by the parallel passes; the single-device
// runtime refuses them rather than ignoring them.
struct OpAnnotations {
  std::string in_strategy;   // "((2,4),(4,1))" or "(layout(\"mp\",(\"sp\",\"dp\")), ...)"
  std::string out_strategy;  // same notation, outputs
  int worker = -1;           // place("worker", rank); -1 = not placed
  bool empty() const { return in_strategy.empty() && out_strategy.empty() && worker < 0; }
  bool operator==(const OpAnnotations&) const = default;
};

// shard(block, in_strategy, out_strategy, level) of seed 000, on a name scope: the operators
// under `scope` are searched with objective `level`; the block's boundary layouts are fixed
// (each candidate inside must produce / read them); once any block is given, the operators
// outside every block are data-parallel. Set by nn::Module::shard or a model file's
// `shard:` section; read by the searches (search.h).
struct ShardBlockSpec {
  std::string scope;         // module scope, e.g. "block1"
  std::string in_strategy;   // "((1,8),)": per block input, split counts or None (data-parallel)
  std::string out_strategy;  // "(None,)": per block output; empty: not fixed
  int level = 2;       // 0: most computation per byte communicated, 1: least memory, 2: least time
  std::string source;  // where it was written, "model.yaml:40:5", for messages; C++: empty
  bool operator==(const ShardBlockSpec&) const = default;
};

struct Node {
  NodeId id = kNoNode;
  OpKind op = OpKind::kMatMul;
  std::string name;  // fully scoped: "dense1.matmul"
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  OpAttrs attrs;
  OpAnnotations annotations;
  bool is_backward = false;
  NodeId forward_node = kNoNode;  // for backward nodes: the forward node they differentiate
  // Where the operator (or its strategy) was written, "model.yaml:12:5"; empty when built in
  // C++. Errors about the operator start with it (LocatedAt).
  std::string source;
};

class Graph {
 public:
  ValueId AddInput(std::string name, Shape shape, DType dtype = DType::kF32);
  ValueId AddLabel(std::string name, Shape shape);
  ValueId AddParameter(std::string name, Shape shape, InitSpec init);
  ValueId AddConstant(std::string name, Shape shape, InitSpec init, DType dtype = DType::kF32);

  // Appends a node after checking arity, the operator's shape rule and the outputs' sizes
  // (CheckNewValue). Outputs are named "<name>" (one output) or "<name>:<k>".
  Result<NodeId> AddNode(OpKind op, std::string name, std::vector<ValueId> inputs,
                         OpAttrs attrs = {});

  // Ok when a value of `shape` may join the graph: its size fits (CheckTensorSize) and the
  // graph's values together stay within kMaxTensorBytes, so that every memory figure summed
  // from them fits in 63 bits. Builder checks inputs, labels and parameters with it.
  Status CheckNewValue(const Shape& shape, DType dtype, const std::string& what) const;
  // The bytes of all values together (at most kMaxTensorBytes once every value was checked).
  int64_t total_value_bytes() const { return total_value_bytes_; }

  const std::vector<Value>& values() const { return values_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const Value& value(ValueId id) const { return values_[id]; }
  const Node& node(NodeId id) const { return nodes_[id]; }
  // For passes that annotate nodes; the name must not change.
  Node& mutable_node(NodeId id) { return nodes_[id]; }
  int num_values() const { return static_cast<int>(values_.size()); }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }

  // Lookups by exact name; kNoNode / kNoValue when absent.
  NodeId FindNode(const std::string& name) const;
  ValueId FindValue(const std::string& name) const;
  std::vector<ValueId> Parameters() const;
  // For each value, the nodes reading it, in node order.
  std::vector<std::vector<NodeId>> Consumers() const;

  // Checks the invariants every pass relies on: ids dense, inputs defined before use,
  // producers consistent, arities and shape rules hold, names unique. Names the first
  // offending node.
  Status Verify() const;

  // One line per node: "dense1.matmul = MatMul(x [32, 784], dense1.weight [784, 512]) -> [32,
  // 512]".
  std::string ToText() const;
  // Graphviz DOT, name scopes as clusters.
  std::string ToDot() const;

 private:
  ValueId AddValue(Value v);
  std::vector<Value> values_;
  int64_t total_value_bytes_ = 0;
  std::vector<Node> nodes_;
  // Name lookups only; never iterated, so hashing cannot affect any order.
  std::unordered_map<std::string, NodeId> node_by_name_;
  std::unordered_map<std::string, ValueId> value_by_name_;
};

// `status` prefixed with "file:line:col: " of node `id` (of its forward node for a backward
// node) when the graph came from a model file; unchanged otherwise.
Status LocatedAt(const Graph& g, NodeId id, Status status);

// The nodes that computing `targets` needs, directly or through their inputs (indexed by
// NodeId; nodes are in topological order, so one backward sweep finds them).
std::vector<bool> NodesNeededFor(const Graph& g, const std::vector<ValueId>& targets);
// The values that depend on `sources` (themselves included), indexed by ValueId: one forward
// sweep, the dual of NodesNeededFor.
std::vector<bool> ValuesDependingOn(const Graph& g, const std::vector<ValueId>& sources);

}  // namespace shardscope

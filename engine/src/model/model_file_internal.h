// Internal: the pieces of the model-file parser (see docs/model-format.md).
//
//   model_file_yaml.cc      reading YAML with located errors: keys, scalars, shapes, inits
//   model_file_layers.cc    layers and blocks: parsing (ParseNetwork starts here)
//   model_file_operators.cc operators, parameters and constants: parsing
//   model_file_build.cc     building a parsed network into the graph (BuildNetwork)
//   model_file_op_attrs.cc  operator attributes: the keys each operator takes, reading them
//   model_file_parallel.cc  the parallel section, strategy syntax, resolving annotations
//   model_file_onnx.cc      `import: model.onnx` and .onnx files: the imported graph
//   model_file.cc           the public API: sections, defaults, Load/Parse/Build
//
// Inside the parser a failure is thrown as model_file::Error (a located Status) and caught at
// the public boundary together with YAML::Exception; no exception leaves the library.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "shardscope/base/names.h"
#include "shardscope/layout/mesh.h"
#include "shardscope/model_file.h"
#include "shardscope/nn.h"
#include "shardscope/onnx_import.h"

namespace shardscope::model_file {

// ---------------------------------------------------------------- errors and YAML reading

struct Error {
  Status status;
};

// "file:line:column: message" (or "file: message" when the position is unknown).
[[noreturn]] void FailAt(const SourceLocation& loc, const std::string& message);

// The file being parsed: its name (for messages) and text (to locate inside scalars).
class Source {
 public:
  Source(std::string path, const std::string& text) : path_(std::move(path)), text_(text) {}
  const std::string& path() const { return path_; }
  SourceLocation At(const YAML::Node& node) const;
  SourceLocation At(const YAML::Mark& mark) const;
  // The position of byte `offset` of scalar `node`'s value: exact for a one-line plain or
  // quoted scalar without escapes, the scalar's start otherwise.
  SourceLocation AtOffset(const YAML::Node& node, size_t offset) const;
  [[noreturn]] void Fail(const YAML::Node& node, const std::string& message) const {
    FailAt(At(node), message);
  }

 private:
  std::string path_;
  const std::string& text_;
};

// One key: value of a mapping.
struct Field {
  std::string key;
  YAML::Node key_node;
  YAML::Node value;
};

// A YAML mapping whose keys were checked: it is a mapping, no key appears twice, and every
// key is one of `allowed` (the message lists them, with the closest as a suggestion).
class Map {
 public:
  // `what` names the mapping in messages: "the top level", "layer 'dense1' (Dense)", ...
  // An empty `allowed` accepts any key (for mappings keyed by user names).
  Map(const Source& src, const YAML::Node& node, std::string what,
      const std::vector<std::string>& allowed);
  const std::vector<Field>& fields() const { return fields_; }
  const Field* Find(const std::string& key) const;
  bool Has(const std::string& key) const { return Find(key) != nullptr; }
  // The value of a required key; fails "missing required key" at the mapping.
  const YAML::Node& Require(const std::string& key) const;
  const YAML::Node& node() const { return node_; }
  const std::string& what() const { return what_; }
  SourceLocation location() const { return src_.At(node_); }

 private:
  const Source& src_;
  YAML::Node node_;
  std::string what_;
  std::vector<std::string> allowed_;
  std::vector<Field> fields_;
};

// Scalars. `what` names the value in messages, e.g. "'in_channels' of layer 'dense1'".
std::string ReadString(const Source& src, const YAML::Node& node, const std::string& what);
// An integer, or a product of integers such as 16 * 5 * 5 (the seeds write 28*28).
int64_t ReadInt(const Source& src, const YAML::Node& node, const std::string& what);
int64_t ReadPositive(const Source& src, const YAML::Node& node, const std::string& what);
int64_t ReadNonNegative(const Source& src, const YAML::Node& node, const std::string& what);
double ReadFloat(const Source& src, const YAML::Node& node, const std::string& what);
// true/false (also Python's True/False, and yes/no).
bool ReadBool(const Source& src, const YAML::Node& node, const std::string& what);
// A sequence of positive integers; with `allow_infer`, one entry may be -1.
Shape ReadShape(const Source& src, const YAML::Node& node, const std::string& what,
                bool allow_infer = false);
// An integer or a sequence of `n` integers (kernel sizes, strides): all positive.
std::vector<int64_t> ReadIntOrPair(const Source& src, const YAML::Node& node,
                                   const std::string& what);
// "normal", "truncated_normal(0.02)", "TruncatedNormal(0.02)", "zeros", ...
InitSpec ReadInit(const Source& src, const YAML::Node& node, const std::string& what);
// "valid" or "same" (any case).
Padding ReadPadMode(const Source& src, const YAML::Node& node, const std::string& what);

// Names: identifiers (letters, digits, '_', not starting with a digit).
bool IsIdentifier(const std::string& s);
// Did-you-mean suggestions (shared with the profile readers: shardscope/base/names.h).
using ::shardscope::CloseNames;
using ::shardscope::DidYouMean;
std::string Join(const std::vector<std::string>& names, const std::string& sep = ", ");

// ---------------------------------------------------------------- operator attributes

// The attribute keys operator `op` takes in a model file.
std::vector<std::string> OpAttrKeys(OpKind op);
// Every operator's name, in OpKind order.
std::vector<std::string> OpNames();
// An operator kind by exact name; fails listing the known ones.
OpKind ReadOpKind(const Source& src, const YAML::Node& node, const std::string& what);
// Dropout's rate from p (drop probability) or keep_prob; 0.5 when neither is given.
float ReadDropoutRate(const Source& src, const Map& m, const std::string& what);
uint64_t ReadSeed(const Source& src, const Map& m, const std::string& what);
// The attributes of `op` from the keys of m (checked against OpAttrKeys by the caller).
OpAttrs ReadOpAttrs(const Source& src, const Map& m, OpKind op, const std::string& what);

// ---------------------------------------------------------------- strategies

using MeshTable = std::vector<std::pair<std::string, DeviceMesh>>;

// One entry of a strategy tuple: the strategy of one input (or output).
struct StrategyItem {
  enum Kind { kTuple, kNone, kLayout } kind = kTuple;
  int rank = 0;      // dimensions it describes (kTuple, kLayout)
  std::string mesh;  // kLayout: the mesh it is called on
  SourceLocation location;
};

// A strategy as written, checked for syntax: "((2, 4), (4, 1))", "(layout(...), ...)".
struct Strategy {
  std::string text;  // as written (trimmed), or the seed notation of a YAML sequence
  std::vector<StrategyItem> items;
  SourceLocation location;
  bool empty() const { return text.empty(); }
};

// Reads a strategy: a scalar in seed notation, or a YAML sequence of sequences
// ([[2, 4], [4, 1]]). `allow_none` admits None entries (shard blocks).
Strategy ReadStrategy(const Source& src, const YAML::Node& node, const std::string& what,
                      const MeshTable& meshes, bool allow_none);

// A strategy as written for an operator or single-operator module (before it is resolved).
struct WrittenStrategy {
  std::string target;  // as written: "dense1.matmul", "relu"
  Strategy in, out;
  SourceLocation location;  // of the key
  std::string origin;       // "parallel.strategies" or "the shard key of layer 'relu'"
};

// Reads the value of one strategies entry: a strategy, or {in: ..., out: ...}.
WrittenStrategy ReadWrittenStrategy(const Source& src, const std::string& target,
                                    const YAML::Node& key, const YAML::Node& value,
                                    const MeshTable& meshes, const std::string& origin);

struct WrittenPlace {
  std::string target;
  int worker = -1;
  SourceLocation location;
};

// ---------------------------------------------------------------- the network

struct BlockBody;

// One entry of a layer list.
struct LayerEntry {
  enum Kind { kModule, kBlock, kReuse } kind = kModule;
  std::string name;  // local name (the instance name for a repeated entry)
  std::string type;  // for messages: "Dense", "ReLU", "MatMul" (raw op), "BasicBlock"
  SourceLocation location;
  bool has_parameters = false;  // Dense, Conv2d, Embedding, LayerNorm and blocks
  // kModule: makes the module (named `name`).
  std::function<std::unique_ptr<nn::Module>(const std::string& name)> make;
  // kBlock: an inline body, or (when null) the block type `type` from NetworkDef::blocks.
  std::shared_ptr<const BlockBody> body;
  // The entry's own `shard:` key (its target is the local name; every instance gets it).
  std::shared_ptr<const WrittenStrategy> shard;
};

struct BlockBody {
  std::vector<LayerEntry> layers;
  SourceLocation location;
};

struct ParamDef {
  std::string name;
  Shape shape;
  InitSpec init;
  SourceLocation location;
};

struct InputRef {
  std::string name;  // "x", a parameter, or an earlier operator
  int output = 0;    // "op:1" -> 1
  SourceLocation location;
};

struct OpDef {
  std::string name;
  OpKind op = OpKind::kMatMul;
  OpAttrs attrs;
  std::vector<InputRef> inputs;
  SourceLocation location;
  std::shared_ptr<const WrittenStrategy> shard;
};

struct NetworkDef {
  bool operators_style = false;
  SourceLocation location;  // the layers: / operators: key
  // layers style
  std::map<std::string, std::shared_ptr<const BlockBody>> blocks;
  std::vector<LayerEntry> layers;
  // operators style
  std::vector<ParamDef> params;
  std::vector<ParamDef> constants;  // constants: (never trained)
  std::vector<OpDef> ops;
  std::string output;
  SourceLocation output_location;
};

// What building recorded: which operators each module made, and where building failed.
struct BuildTrace {
  struct ModuleRecord {
    std::string type;
    SourceLocation location;
    std::vector<int> ops_per_call;
    std::vector<NodeId> nodes;
    Shape input_shape, output_shape;  // of the first call
  };
  std::map<std::string, ModuleRecord> modules;  // by scoped path: "block1.dense1", "relu"
  bool failed = false;
  SourceLocation fail_location;
  std::string fail_what;         // "layer 'dense2' (Dense)"
  SourceLocation last_location;  // the last layer / the output operator
  std::string last_what;
  // The `shard:` keys of layers and operators, targeted at every instance's scoped path.
  std::vector<WrittenStrategy> inline_strategies;
};

// Names no layer, operator or parameter may take: x, label, loss.
const std::set<std::string>& ReservedNames();
// Operator and parameter names in operators: networks: identifiers, optionally dotted.
bool IsName(const std::string& s);
// "'a', 'b'": the keys of a mapping, for messages.
std::string KeysOf(const YAML::Node& node);

// [positions, positions]: 0 where a position may attend (itself and earlier), -1e9 above the
// diagonal, added to attention scores before Softmax (`init: causal_mask` of a constant).
InitSpec CausalMask(int64_t positions);

// Parses operators: with parameters:, constants: and output: (called by ParseNetwork).
void ParseOperators(const Source& src, const Map& top, const MeshTable& meshes, NetworkDef* net,
                    std::vector<WrittenStrategy>* inline_strategies);

// Parses the network sections of the top-level mapping (layers, blocks, operators,
// parameters, output); inline `shard:` keys become WrittenStrategy entries.
void ParseNetwork(const Source& src, const Map& top, const MeshTable& meshes, NetworkDef* net,
                  std::vector<WrittenStrategy>* inline_strategies);

// Builds the classifier graph (input "x", labels "label", logits, loss "loss"). A failure
// is thrown located at the layer or operator that broke.
// With `sequence`, the labels and loss are per position (nn::BuildClassifier).
ModelGraph BuildNetwork(const NetworkDef& net, const Shape& example_shape, DType input_dtype,
                        bool sequence, int64_t batch, BuildTrace* trace);

// ---------------------------------------------------------------- the parallel section

struct ParallelDraft {
  ParallelConfig config;
  bool mode_given = false;
  SourceLocation mode_location, search_location;
  MeshTable meshes;
  std::vector<WrittenStrategy> strategies;  // parallel.strategies (inline ones are added)
  std::vector<WrittenPlace> places;
  std::vector<std::pair<Strategy, Strategy>> shard_strategies;  // per shard block: in, out
};

// Reads parallel: {mode, search, devices, meshes, strategies, place, shard}.
void ParseParallel(const Source& src, const YAML::Node& node, ParallelDraft* draft);

// Decides the mode when not given and checks it against what the file asks for
// (`inline_strategies`: the layers' and operators' own shard keys).
void FinishParallel(ParallelDraft* draft, const std::vector<WrittenStrategy>& inline_strategies);

// Resolves the written strategies (parallel.strategies and trace.inline_strategies) and
// places against a built graph: every name must be an
// operator or a module of the network; module places spread to all their operators (the
// most specific place wins); strategies are checked against the operators' arities and
// input ranks. Returns one entry per annotated operator, in graph order. Also checks the
// shard blocks.
std::vector<AnnotationEntry> ResolveAnnotations(const ModelGraph& model, const BuildTrace& trace,
                                                const ParallelDraft& draft);

// ---------------------------------------------------------------- imported ONNX graphs

// Loads `import` (relative to the model file's directory); a failure is thrown at
// `location` (line 0: the ONNX file's own message alone).
std::shared_ptr<const OnnxModel> LoadImport(const std::string& model_path,
                                            const std::string& import,
                                            const SourceLocation& location, bool weights);
// Builds the classifier graph around the imported graph; its name scopes become the
// trace's modules (for strategies, place and shard blocks by scope). With `sequence`, the
// labels and loss are per position (nn::BuildClassifier).
ModelGraph BuildImport(const OnnxModel& onnx, const Shape& example_shape, bool sequence,
                       int64_t batch, const SourceLocation& location, BuildTrace* trace);
// A target written as an ONNX node name ("/fc1/Gemm") as the operator's name ("fc1.Gemm").
std::string OnnxTargetName(const std::string& written);

}  // namespace shardscope::model_file

// Model files: a network, its training and its parallel configuration, written by hand.
//
// The format (YAML, with comments) is documented in docs/model-format.md with the seeds'
// networks as examples. Every error names file:line:column and the rule broken. Parallel
// annotations are kept as written (seed notation) on the operators they name; the passes
// that implement them parse and check them, and what is not implemented yet is reported
// as such by the command that would need it, never silently ignored.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shardscope/cost/dtype.h"
#include "shardscope/graph.h"
#include "shardscope/optimizer.h"
#include "shardscope/status.h"
#include "shardscope/trainer.h"

namespace shardscope {

struct SourceLocation {
  std::string file;
  int line = 0;                  // 1-based; 0 = unknown
  int column = 0;                // 1-based
  std::string ToString() const;  // "model.yaml:12:5"
};

struct DataConfig {
  std::string dataset = "mnist";    // mnist | fashion-mnist | synthetic | text
  SourceLocation dataset_location;  // line 0: the default
  std::string dir;                  // empty: --data, $SHARDSCOPE_DATA, the search path
  std::string file;                 // text: the text file (relative to the model file), or
                                    //   --data text:FILE
  int pad_to = 0;                   // 32 pads MNIST 28x28 to LeNet's 32x32
  bool normalize = true;
  int64_t synthetic_size = 0;  // examples, for dataset: synthetic
  SourceLocation synthetic_size_location;
};

struct TrainingConfig {
  int64_t batch = 32;
  SourceLocation batch_location;  // line 0: the default
  int64_t epochs = 1;
  int64_t steps = 0;  // > 0: stop after this many steps
  uint64_t seed = 1;
  // The element type `plan` prices bytes at (f32, bf16, fp16; cost/dtype.h); training runs
  // in f32 whatever it says. --dtype overrides it.
  Precision dtype = Precision::kF32;
  OptimizerConfig optimizer;
};

// One operator's annotations from the file, and where they were written.
// One entry per annotated operator, in graph order. A strategy or place written for a module
// (a single-operator module such as the seeds' shared `relu`, or any module for place) is
// spread to the operators it builds, so `op` is always an operator of the graph.
struct AnnotationEntry {
  std::string op;  // fully scoped operator name, e.g. "dense1.matmul"
  OpAnnotations annotations;
  SourceLocation location;        // of the strategy when there is one, else of the place
  SourceLocation place_location;  // of the place entry that set `worker` (line 0: none)
};

// shard(block, in_strategy, out_strategy, level) of seed 000.
struct ShardBlockEntry {
  std::string block;  // module scope, e.g. "block1"
  std::string in_strategy, out_strategy;
  int level = 0;
  SourceLocation location;
};

struct ParallelConfig {
  std::string mode = "stand_alone";  // stand_alone | data_parallel | semi_auto | auto
  std::string search;                // for auto: sharding_propagation | recursive_programming |
                                     // dynamic_programming
  int devices = 0;                   // 0: not given in the file
  SourceLocation devices_location;
  std::vector<std::pair<std::string, std::string>> meshes;  // name -> "Layout((2,2,2),(...))"
  std::vector<AnnotationEntry> annotations;
  std::vector<ShardBlockEntry> shard_blocks;
  int optimizer_sharding = 0;          // ZeRO stage 0-2 (PartitionOptions::optimizer_sharding)
  std::vector<std::string> recompute;  // name scopes; {"*"}: every layer (`recompute: true`)
  std::string pipeline;  // "auto" | "N": stages chosen by the planner (one device each); "": none
  SourceLocation pipeline_location;
  SourceLocation location;
  bool empty() const { return annotations.empty() && shard_blocks.empty(); }
};

struct ModelLoadOptions {
  // false (plan): an imported ONNX graph's weights are not read; parameters take the
  // seeded initialisers.
  bool weights = true;
  // A .onnx path given directly: train it with loss: sequence_cross_entropy (a next-token
  // model on --data text:FILE); ignored for model files, whose loss: key says.
  bool sequence_loss = false;
};

class ModelFile {
 public:
  ~ModelFile();
  ModelFile(ModelFile&&) noexcept;
  ModelFile& operator=(ModelFile&&) noexcept;

  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }  // the file as read, for run records
  const std::string& name() const { return name_; }
  const Shape& example_shape() const { return example_shape_; }  // input without the batch
  DType input_dtype() const { return input_dtype_; }             // i32: token ids (input.dtype)
  // loss: sequence_cross_entropy: one label per input position (next-token models).
  bool sequence_loss() const { return sequence_; }
  int num_classes() const { return num_classes_; }
  const TrainingConfig& training() const { return training_; }
  const DataConfig& data() const { return data_; }
  const ParallelConfig& parallel() const { return parallel_; }
  // The ONNX file the network comes from (`import:`, or the .onnx file itself); "" if none.
  const std::string& import_path() const { return import_path_; }

  // Builds the forward graph (input "x", labels "label", logits, loss) for a batch size,
  // with every annotation attached to its operator. An annotation naming an operator the
  // network does not have is an error at its file:line:column.
  Result<ModelGraph> Build(int64_t batch) const;

 private:
  friend Result<ModelFile> ParseModelText(const std::string&, const std::string&,
                                          const ModelLoadOptions&);
  struct Network;  // the parsed layers/operators
  ModelFile();
  std::string path_, text_, name_, import_path_;
  Shape example_shape_;
  DType input_dtype_ = DType::kF32;
  bool sequence_ = false;
  int num_classes_ = 10;
  TrainingConfig training_;
  DataConfig data_;
  ParallelConfig parallel_;
  std::unique_ptr<Network> network_;
};

// A .onnx path is read as a model file holding only `import: <that file>` (training,
// data and parallel settings at their defaults).
Result<ModelFile> LoadModelFile(const std::string& path, const ModelLoadOptions& options = {});
// Parses text; `path` is used in error messages and to find an imported ONNX file.
Result<ModelFile> ParseModelText(const std::string& text, const std::string& path,
                                 const ModelLoadOptions& options = {});

}  // namespace shardscope

// Builder: appends operators to a Graph under nested name scopes.
//
// Errors are sticky: the first failure (a shape rule broken, a name reused) is kept in
// status(), and every later call returns kNoValue and does nothing, so model code can be
// written straight through and checked once at the end. The builder does not own the graph.
#pragma once

#include <string>
#include <vector>

#include "shardscope/graph.h"

namespace shardscope {

class Builder {
 public:
  explicit Builder(Graph* graph) : graph_(graph) {}

  Graph& graph() { return *graph_; }
  const Status& status() const { return status_; }
  bool ok() const { return status_.ok(); }

  // Scopes nest: PushScope("block1"); PushScope("dense1") names ops "block1.dense1.<op>".
  void PushScope(const std::string& name) { scopes_.push_back(name); }
  void PopScope() { scopes_.pop_back(); }
  // "block1.dense1.<local>"
  std::string ScopedName(const std::string& local) const;

  ValueId Input(const std::string& name, Shape shape, DType dtype = DType::kF32);
  ValueId Label(const std::string& name, Shape shape);
  ValueId Parameter(const std::string& local_name, Shape shape, InitSpec init);

  // Adds one operator named ScopedName(local_name); when that name is taken (a module
  // called twice), "_1", "_2", ... is appended. Returns its first output.
  ValueId Op(OpKind op, const std::string& local_name, std::vector<ValueId> inputs,
             OpAttrs attrs = {}, const OpAnnotations& annotations = {});
  // All outputs of a multi-output operator.
  std::vector<ValueId> OpAll(OpKind op, const std::string& local_name, std::vector<ValueId> inputs,
                             OpAttrs attrs = {}, const OpAnnotations& annotations = {});

  // Records a failure found by model code (kept only if it is the first).
  void Fail(Status status);

  // shard() blocks met while building (Module::shard), in the order their modules ran.
  void AddShardBlock(ShardBlockSpec block) { shard_blocks_.push_back(std::move(block)); }
  const std::vector<ShardBlockSpec>& shard_blocks() const { return shard_blocks_; }

  // The worker that operators without their own place() go to (set by Module::place).
  int default_worker() const { return default_worker_; }
  void set_default_worker(int worker) { default_worker_ = worker; }

 private:
  std::string UniqueName(const std::string& base) const;
  Graph* graph_;
  std::vector<std::string> scopes_;
  Status status_;
  int default_worker_ = -1;
  std::vector<ShardBlockSpec> shard_blocks_;
};

}  // namespace shardscope

// Checkpoints: the global (unsharded) parameters and optimizer state of a training run, its
// step and data position, in a directory (format in docs/checkpoints.md):
//
//   DIR/manifest.json        what is saved: step, epoch, seed, optimizer, one entry per tensor
//                            (name, role, shape, file, bytes, sha256)
//   DIR/tensors/NNNN.f32     one file per tensor: little-endian f32, row-major, no header
//
// Tensors are saved whole, not as shards, so a checkpoint saved under one strategy or
// device count resumes under any other. Writing is atomic: the files go to a temporary
// sibling directory which replaces DIR in one rename, so a failed save leaves DIR as it was.
// Reading checks every file's size and SHA-256 against the manifest.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shardscope/communicator.h"
#include "shardscope/status.h"
#include "shardscope/tensor.h"

namespace shardscope {

class DistTrainer;
class PipelineTrainer;

// A tensor of a checkpoint: a parameter ("parameter") or one of its optimizer states
// ("velocity" for momentum, "adam_m" and "adam_v" for Adam), by the parameter's name.
struct CheckpointTensor {
  std::string name;
  std::string role;
  Tensor value;  // global shape, f32
};

struct Checkpoint {
  std::string model;            // the model's name (informative)
  int64_t step = 0;             // optimizer steps taken: the next step is step + 1
  int64_t batch = 0;            // global batch: the data position is step * batch examples
  uint64_t seed = 0;            // parameters, shuffling and dropout
  std::string optimizer;        // OptimizerKindName
  int64_t optimizer_steps = 0;  // the optimizer's own count (Adam's bias correction)
  std::string saved_under;      // e.g. "4 devices, in-process, data_parallel" (informative)
  std::vector<CheckpointTensor> tensors;

  // The tensor of `name` and `role`, or null.
  const CheckpointTensor* Find(const std::string& name, const std::string& role) const;
};

// Names of the optimizer state tensors of `optimizer` (OptimizerKindName), in the order of
// OptimizerStateView: none (sgd), velocity (momentum), adam_m and adam_v (adam).
std::vector<std::string> OptimizerStateRoles(const std::string& optimizer);

// Writes `checkpoint` to `dir` atomically (see top); an existing checkpoint there is
// replaced only once the new one is complete. Returns the manifest's SHA-256 through
// `manifest_sha256` and the bytes written through `bytes` (either may be null).
Status WriteCheckpoint(const std::string& dir, const Checkpoint& checkpoint,
                       std::string* manifest_sha256 = nullptr, int64_t* bytes = nullptr);

// Reads and verifies the checkpoint in `dir`. kCorrupt, naming the file and both checksums,
// when a tensor file does not match its manifest entry; kInvalidInput for a directory that
// holds no checkpoint.
Result<Checkpoint> ReadCheckpoint(const std::string& dir);

// Collective over `comm` (every rank of the trainer): the global parameters and optimizer
// state of `trainer`, assembled on every rank from the shards by redistribution.
Result<Checkpoint> GatherCheckpoint(Communicator& comm, DistTrainer& trainer);

// Local: sets this rank's parameter shards, optimizer state and step from `checkpoint`,
// whatever strategy or device count saved it. kInvalidInput naming the tensor when one is
// missing or has another shape, or when the optimizer differs.
Status RestoreCheckpoint(const Checkpoint& checkpoint, DistTrainer& trainer);

// The same for a placed run (pipeline.h): each parameter is saved whole from the worker that
// owns it, in the same format, so placed and SPMD runs resume each other's checkpoints.
Result<Checkpoint> GatherCheckpoint(Communicator& comm, PipelineTrainer& trainer);
Status RestoreCheckpoint(const Checkpoint& checkpoint, PipelineTrainer& trainer);

}  // namespace shardscope

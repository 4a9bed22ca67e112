// RunReader: a run file read back as plain structs (DESIGN.md §5, docs/run-format.md).
//
// Open() refuses, with a message naming the file and the reason, anything that is not a run
// file this build can read: a missing file, a file that is not an SQLite database, an SQLite
// database without the Shardscope application id, a newer schema version (kTooNew), a file
// whose tables are missing or damaged (kCorrupt). A file of an older schema version is read
// through a private in-memory copy upgraded by the same migrations a writer would apply; the
// file itself is never modified.
//
// The reader never writes the file and can read it while a run writes it: each accessor runs
// its own read transaction and sees every commit made before it started. Damage found later
// (a truncated or corrupted page deep in the file) is reported by the accessor that meets it
// (kCorrupt); no input makes the reader crash.
//
// Status: a run whose file says "running" but whose writer is gone (killed, crashed, the
// machine rebooted) is reported as kInterrupted. The writer is gone when nobody holds the
// flock of `<path>.lock` (or the file is missing); when the lock file cannot be opened, when
// the pid it names is dead on this host.
//
// Accessors are const and thread-safe (they serialise on an internal mutex); queries that
// look up one operator, one tensor or one step use the file's indices.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardscope/store/records.h"
#include "shardscope/store/status.h"

namespace shardscope::store {

class RunReader {
 public:
  // Opens `path` read-only. Errors: kNotFound, kNotARunFile, kTooNew, kCorrupt, kIoError.
  static Result<std::unique_ptr<RunReader>> Open(const std::string& path);
  ~RunReader();
  RunReader(const RunReader&) = delete;
  RunReader& operator=(const RunReader&) = delete;

  const std::string& path() const;
  int schema_version() const;  // the file's; below kSchemaVersion when read through a copy
  bool migrated() const;       // read through an upgraded in-memory copy

  // The run, with `status` kInterrupted when it says running but its writer is gone.
  Result<RunInfo> Run() const;
  // Whether a writer holds the file's lock now (the run is being recorded).
  bool IsLive() const;
  Result<RunCounts> Counts() const;

  Result<std::vector<MeshRecord>> Meshes() const;

  // Operators in id order, with their candidates.
  Result<std::vector<OperatorRecord>> Operators(bool with_candidates = true) const;
  Result<OperatorRecord> Operator(int64_t id) const;  // kNotFound
  Result<std::vector<OperatorRecord>> OperatorsNamed(std::string_view name) const;
  // Operators whose scope is `scope` or lies under it ("dense1" matches "dense1.attn").
  Result<std::vector<OperatorRecord>> OperatorsInScope(std::string_view scope) const;

  Result<std::vector<TensorRecord>> Tensors() const;
  Result<TensorRecord> Tensor(int64_t id) const;  // kNotFound
  Result<std::vector<EdgeRecord>> Edges() const;  // by (dst_op, dst_input)
  Result<std::vector<EdgeRecord>> EdgesInto(int64_t op) const;
  Result<std::vector<EdgeRecord>> EdgesFrom(int64_t op) const;
  Result<std::vector<EdgeRecord>> EdgesOfTensor(int64_t tensor) const;  // its consumers

  // Redistributions in id order, with their steps. per_rank false leaves out what grows with
  // the ranks (lower_bound_per_rank, bytes_sent, bytes_recv, transfers: left empty), ~100 MB
  // of a 4096-rank plan; Redistribution(id) reads one in full.
  Result<std::vector<RedistributionRecord>> Redistributions(bool with_steps = true,
                                                            bool per_rank = true) const;
  Result<RedistributionRecord> Redistribution(int64_t id) const;  // kNotFound
  Result<std::vector<RedistributionRecord>> RedistributionsForOperator(int64_t op) const;
  Result<std::vector<RedistributionRecord>> RedistributionsOfTensor(int64_t tensor) const;

  Result<std::vector<ProgramRecord>> Programs(bool with_instructions = true) const;
  Result<std::vector<SendRecvRecord>> SendRecvs() const;

  // Steps first..last (inclusive) in step order; with_ranks fills StepRecord::ranks.
  Result<std::vector<StepRecord>> Steps(int64_t first = std::numeric_limits<int64_t>::min(),
                                        int64_t last = std::numeric_limits<int64_t>::max(),
                                        bool with_ranks = false) const;
  // One rank's figures at every step: (step, figures), in step order.
  Result<std::vector<std::pair<int64_t, RankStepRecord>>> RankSeries(int64_t rank) const;
  Result<std::vector<RankTotalsRecord>> RankTotals() const;  // by rank
  Result<std::vector<EvaluationRecord>> Evaluations() const;
  // The pipeline timeline of steps first..last, by (step, rank, start).
  Result<std::vector<PipelineSpanRecord>> PipelineSpans(
      int64_t first = std::numeric_limits<int64_t>::min(),
      int64_t last = std::numeric_limits<int64_t>::max()) const;
  // The per-instruction timing of steps first..last (one rank, or every rank for kNone), by
  // (step, rank, ordinal, part); empty when none was recorded.
  Result<std::vector<InstructionSpanRecord>> InstructionSpans(
      int64_t first = std::numeric_limits<int64_t>::min(),
      int64_t last = std::numeric_limits<int64_t>::max(), int64_t rank = kNone) const;
  // The steps that have per-instruction timing, in order.
  Result<std::vector<int64_t>> TimedSteps() const;
  // Events with id > after_id in id order, at most `limit` (< 0: all).
  Result<std::vector<EventRecord>> Events(int64_t after_id = 0, int64_t limit = -1) const;

  // PRAGMA quick_check over the whole file (reads every page): Ok or kCorrupt.
  Status Check() const;

 private:
  struct Impl;
  explicit RunReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardscope::store

// RunDocument: one opened run file, read once into plain records for the views.
//
// Open() never throws and never crashes on a bad file: it returns the reader's error (naming
// the file and the reason: not a run file, damaged, written by a newer Shardscope) for the
// caller to show. Reload() reads the file again (a run still being written); on failure the
// document keeps what it had.
//
// The file is connected only while it is read (Open, Reload, Summary): a connection kept
// open would stop the writer from switching a finished run back out of WAL mode.
//
// Lookups by id use sorted vectors or std::map (deterministic iteration).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "shardscope/store/rank_summary.h"
#include "shardscope/store/reader.h"

namespace shardscope::viewer {

// What LoadRunData leaves in the file: the rows that grow with the ranks (per-rank bytes and
// lower bounds, transfer lists: ~100 MB at 4096 ranks), read on first use and kept.
class RunDetails;

// Everything the views draw, as read from the file.
struct RunData {
  store::RunInfo run;
  store::RunCounts counts;
  std::vector<store::MeshRecord> meshes;
  std::vector<store::OperatorRecord> operators;  // id order, with candidates
  std::vector<store::TensorRecord> tensors;
  std::vector<store::EdgeRecord> edges;
  std::vector<store::RedistributionRecord> redistributions;  // with steps
  std::vector<store::SendRecvRecord> send_recvs;
  std::vector<store::StepRecord> steps;  // with per-rank figures
  std::vector<store::RankTotalsRecord> rank_totals;
  std::vector<store::PipelineSpanRecord> pipeline_spans;  // placed runs; by (step, rank, start)

  // nullptr when absent.
  const store::MeshRecord* Mesh(int64_t id) const;
  const store::OperatorRecord* Operator(int64_t id) const;
  const store::TensorRecord* Tensor(int64_t id) const;
  const store::RedistributionRecord* Redistribution(int64_t id) const;
  const store::OperatorRecord* OperatorNamed(const std::string& name) const;
  const store::TensorRecord* TensorNamed(const std::string& name) const;

  // The redistribution with its per-rank rows and transfers: `redistributions` holds them
  // only when built in memory (details == nullptr); otherwise read from the file on first
  // use. nullptr when absent or unreadable.
  std::shared_ptr<const store::RedistributionRecord> RedistributionInFull(int64_t id) const;
  // store::PlannedRecvBytesPerStep over the full records (reads them from the file once).
  int64_t PlannedRecvBytesPerStep() const;
  // What `rank` holds and does (store::ReadRankSummary, the same as inspect --rank), read
  // from the file now; timed_step kNone: its last timed step.
  store::Result<store::RankSummary> RankSummaryOf(int64_t rank,
                                                  int64_t timed_step = store::kNone) const;
  // The same read for another thread: the task keeps what it reads from alive, so it stays
  // valid when this RunData is reloaded or destroyed meanwhile.
  std::function<store::Result<store::RankSummary>()> RankSummaryTask(
      int64_t rank, int64_t timed_step = store::kNone) const;
  std::shared_ptr<RunDetails> details;
};

// Reads every table the views need; the per-rank rows of redistributions stay in the file
// (RunData::RedistributionInFull).
store::Result<RunData> LoadRunData(const store::RunReader& reader);
// The operators whose scope is `scope` or lies under it.
size_t CountOperatorsInScope(const RunData& run, const std::string& scope);

class RunDocument {
 public:
  static store::Result<std::unique_ptr<RunDocument>> Open(const std::string& path);

  const std::string& path() const { return path_; }
  const RunData& data() const { return data_; }
  // Whether a writer held the file at the last (re)load: the run was being recorded.
  bool live() const { return live_; }
  // Reads the file again; keeps the old data on failure.
  store::Status Reload();
  // The run's overview as text (config, meshes, strategies, redistributions, losses), read
  // from the file as it is now.
  std::string Summary() const;

 private:
  RunDocument() = default;
  std::string path_;
  RunData data_;
  bool live_ = false;
};

}  // namespace shardscope::viewer

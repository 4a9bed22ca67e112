// Recorder: what the engine decided and measured, written to a run file (store layer).
//
// Only rank 0 holds a Recorder; the other ranks send their per-step figures to it through
// the communicator (GatherRankStep). Every call returns the store's error, naming the file;
// the first error of any call (background writes included) stays readable as failure().
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "shardscope/communicator.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/placement.h"
#include "shardscope/search.h"
#include "shardscope/store/writer.h"
#include "shardscope/submesh_pipeline.h"

namespace shardscope {

struct PlanStages;  // record/plan_stages.h

class Recorder {
 public:
  // Creates the run file (refusing one that another run is writing, an unwritable
  // directory or a full disk) and records the run's description.
  // An existing file at `path` is refused unless `overwrite` (then it is replaced).
  static Result<std::unique_ptr<Recorder>> Create(const std::string& path,
                                                  const store::RunInfo& run,
                                                  bool overwrite = false);

  // The partitioned graph: meshes, operators with strategies and provenance, tensors with
  // their layouts, edges with the layouts consumers need, every redistribution with its
  // steps, and the per-rank program. One transaction.
  // With `search`: the forward operators' provenance, cost and candidates come from it.
  Status RecordPlan(const Graph& graph, const DistProgram& program,
                    const SearchResult* search = nullptr);

  // A placed model (placement.h): operators with their worker, tensors, edges, one program
  // per worker (rank = worker, role "worker") with its send/recv instructions (bytes per
  // message), and one send_recv row per cut edge with its bytes per training step
  // (message bytes times `micro_batches`). One transaction.
  Status RecordPlacement(const Graph& graph, const PlacedProgram& program, int micro_batches);

  // Pipeline stages sharded over sub-meshes (submesh_pipeline.h), recorded like RecordPlan:
  // every operator, tensor, edge and redistribution on its stage's mesh, whose mesh row lists
  // the stage's world ranks (steps' groups and transfers stay stage-local, 0..k-1; per-rank
  // figures are indexed by world rank); worker = stage; one send_recv row per stage cut
  // between the stages' first ranks (rank j sends to rank j), bytes per training step.
  Status RecordSubMeshPlan(const Graph& graph, const SubMeshPlan& plan);

  // One training step with every rank's figures (ranks[r] from GatherRankStep). Queued: a
  // background thread writes and commits it (one commit per step while it keeps up, fewer
  // and larger ones when it falls behind), so training does not wait for the disk. A write
  // error is returned by a later call and by Finish().
  // The step's time is the wall time of its slowest rank: the largest ranks[r].wall_seconds
  // (docs/run-format.md, "Figures").
  Status RecordStep(int64_t step, int64_t epoch, double loss,
                    const std::vector<store::RankStepRecord>& ranks);
  // One step's pipeline timeline (placed runs), queued and written like RecordStep.
  Status RecordPipelineSpans(const std::vector<store::PipelineSpanRecord>& spans);
  // One timed step's per-instruction timing (SPMD runs), queued and written like RecordStep.
  Status RecordInstructionSpans(std::vector<store::InstructionSpanRecord> spans);
  Status RecordEvaluation(int64_t step, int64_t epoch, const std::string& name, double accuracy,
                          int64_t samples, double seconds);
  Status RecordEvent(const std::string& level, const std::string& text);
  // A checkpoint saved or resumed from at `step`: an event row with source "checkpoint" and
  // `json` as its message (docs/run-format.md lists its keys).
  Status RecordCheckpoint(int64_t step, const std::string& json);
  // Writes what is queued and stops the background writer (RecordStep and
  // RecordPipelineSpans refuse later records); returns the first error of the run. Finish()
  // drains too.
  Status Drain();
  // Writes what is queued, then the final status (also after a failure: the store keeps
  // room for it); the file is complete and unlocked. Returns the first error of the run.
  Status Finish(store::RunStatus status, const std::string& message = "");
  ~Recorder();  // without Finish(): drains the queue; the store marks the run interrupted

  const std::string& path() const;
  // The first error of any call (OK while recording works), whether it was a full disk, and
  // the last step committed to the file (0: none).
  Status failure() const;
  bool disk_full() const;
  int64_t last_recorded_step() const;

 private:
  explicit Recorder(std::unique_ptr<store::RunWriter> writer);
  // RecordPlan's rows; `stages` (may be null) puts them on their pipeline stage's mesh.
  Status RecordProgramRows(const Graph& graph, const DistProgram& program,
                           const SearchResult* search, const PlanStages* stages);
  void WriteLoop();
  Status Check(const Status& st);  // keeps the first failure (and whether the disk was full)
  std::unique_ptr<store::RunWriter> writer_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<store::StepRecord> queue_;
  std::vector<store::PipelineSpanRecord> span_queue_;
  std::vector<store::InstructionSpanRecord> instr_queue_;
  bool stop_ = false;
  Status error_;  // the first error of any call
  bool disk_full_ = false;
  int64_t last_step_ = 0;
  std::thread thread_;
};

// Every rank calls this after a step with the figures of that step (deltas); rank 0 gets
// all ranks' records in rank order (other ranks get an empty vector). Exact: sent as bytes.
Result<std::vector<store::RankStepRecord>> GatherRankStep(Communicator& comm,
                                                          const store::RankStepRecord& mine);

// "runs/<name>-<yyyymmdd-hhmmss>.db", unique in the directory.
std::string DefaultRunPath(const std::string& name);

}  // namespace shardscope

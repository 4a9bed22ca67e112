// The records of a run file, as plain structs (DESIGN.md §5, docs/run-format.md).
//
// The writer takes them, the reader returns them; one struct per table (a few carry their
// child rows: an operator its candidates, a redistribution its steps, a program its
// instructions, a step its per-rank figures). They hold text and numbers only — layouts,
// strategies and meshes as the engine prints them — so the store needs nothing from the
// engine, and the viewer can show a run without it.
//
// Conventions:
//   - ids are the engine's (graph node id, graph value id, ...), chosen by the writer's
//     caller, unique per table; kNone (-1) in a reference means "none" (NULL in the file).
//   - Times are seconds: durations as measured, instants as Unix time (the reader converts
//     nothing; sqlite3 users write datetime(started_at, 'unixepoch')).
//   - Bytes are bytes. "max" figures are the maximum over ranks, vectors are indexed by rank.
//   - A float that may be missing (loss, accuracy) is NaN when missing (NULL in the file).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "shardscope/store/rank_patterns.h"

namespace shardscope::store {

// The run file's format: PRAGMA application_id and PRAGMA user_version.
inline constexpr int32_t kApplicationId = 0x53685363;  // "ShSc"
inline constexpr int kSchemaVersion = 4;
inline constexpr int64_t kNone = -1;
inline constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();

enum class RunStatus { kRunning, kCompleted, kFailed, kInterrupted };
const char* RunStatusName(RunStatus status);  // "running", "completed", "failed", "interrupted"
bool ParseRunStatus(std::string_view name, RunStatus* status);

// The run (one row). The writer fills the descriptive fields; status, times and the writer's
// identity are kept by the store.
struct RunInfo {
  std::string name;    // e.g. the model file's stem
  std::string mode;    // "train" | "plan"
  std::string search;  // "semi_auto", "sharding_propagation", ...
  int64_t devices = 1;
  std::string backend;  // "in-process" | "mpi" | "" (plan only)
  std::string model_path;
  std::string model_text;          // the model file's text, verbatim
  std::string config_json = "{}";  // every setting of the run, as a JSON object
  std::string command_line;
  std::string shardscope_version;
  std::string versions_json = "{}";  // other versions (compiler, Eigen, MPI, ...), JSON object

  // Kept by the store.
  RunStatus status = RunStatus::kRunning;         // reader: kInterrupted when the writer is gone
  RunStatus stored_status = RunStatus::kRunning;  // reader: as written in the file
  std::string status_message;                     // why it failed or was interrupted
  double started_at = 0;                          // Unix time
  double updated_at = 0;                          // last commit (to within a second)
  double ended_at = 0;                            // 0 while running
  int64_t writer_pid = 0;
  std::string writer_host;
  int schema_version = 0;  // reader: the file's PRAGMA user_version
  friend bool operator==(const RunInfo&, const RunInfo&) = default;
};

// A device mesh: shape, one name per axis, explicit rank list (empty = row-major default).
struct MeshRecord {
  int64_t id = 0;
  std::string name;
  std::vector<int64_t> shape;
  std::vector<std::string> axis_names;
  std::vector<int64_t> ranks;
  friend bool operator==(const MeshRecord&, const MeshRecord&) = default;
};

// A strategy the search considered for an operator, with the cost model's price.
struct CandidateRecord {
  std::string strategy;
  double cost = 0;                    // seconds, the figure the search compared
  double compute_seconds = kMissing;  // its parts: NaN / kNone when not recorded
  double comm_seconds = kMissing;
  int64_t memory_bytes = kNone;  // per device
  std::string note;              // e.g. "redistribution from dense1.matmul: 1.2 MB"
  bool has_breakdown() const { return !std::isnan(compute_seconds); }
  friend bool operator==(const CandidateRecord&, const CandidateRecord&);  // NaN equals NaN
};

// An operator of the forward or backward graph, its chosen strategy and why.
struct OperatorRecord {
  int64_t id = 0;
  std::string name;   // "dense1.matmul", "grad.dense1.matmul.lhs"
  std::string scope;  // "dense1"
  std::string kind;   // operator kind name: "MatMul"
  bool is_backward = false;
  int64_t forward_id = kNone;  // backward operators: their forward operator
  int64_t mesh_id = kNone;     // the mesh its strategy is on
  std::string strategy;        // as printed by the engine: "((2,4),(4,1))"
  // Why this strategy: "user", "propagated", "search", "default", "derived" (backward from
  // forward), ... — and the details: from which operator (provenance_op), in which round of
  // the search (search_round), in words (provenance_detail).
  std::string provenance;
  std::string provenance_detail;
  int64_t provenance_op = kNone;
  int64_t search_round = kNone;
  double cost = 0;                          // the chosen strategy's price, seconds
  int64_t worker = kNone;                   // place(): the worker (rank) it is pinned to
  std::string attrs;                        // operator attributes, free text or JSON
  std::vector<CandidateRecord> candidates;  // the chosen one included, best first
  friend bool operator==(const OperatorRecord&, const OperatorRecord&) = default;
};

// A tensor (graph value) and the layout its producer gives it.
struct TensorRecord {
  int64_t id = 0;
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype = "f32";
  std::string kind;  // "input", "label", "parameter", "activation", "gradient", "loss", ...
  int64_t producer_op = kNone;
  int64_t producer_output = 0;
  std::string layout;  // at the producer, as printed: "[dp | -]", "P(mp)"
  int64_t mesh_id = kNone;
  friend bool operator==(const TensorRecord&, const TensorRecord&) = default;
};

// A use of a tensor by an operator input, and the layout that consumer needs. The pair
// (dst_op, dst_input) identifies the edge. The layouts of a tensor at its consumers are the
// layouts of its edges (RunReader::Edges / EdgesOfTensor).
struct EdgeRecord {
  int64_t tensor_id = 0;
  int64_t src_op = kNone;
  int64_t src_output = 0;
  int64_t dst_op = 0;
  int64_t dst_input = 0;
  std::string layout;  // needed by the consumer
  int64_t mesh_id = kNone;
  friend bool operator==(const EdgeRecord&, const EdgeRecord&) = default;
};

// One step of a redistribution plan (engine RedistStep).
struct RedistStepRecord {
  int64_t ordinal = 0;        // 0, 1, ... in execution order
  std::string kind;           // "local slice", "all-gather", "all-to-all", "all-to-all-v", ...
  std::vector<int64_t> axes;  // axes of the plan mesh
  std::vector<std::string> axis_names;
  int64_t dim = -1;
  int64_t dim_to = -1;
  RankGroups groups;  // rank groups (a grid for collectives along mesh axes)
  int64_t bytes_sent_max = 0;
  int64_t bytes_recv_max = 0;
  std::vector<int64_t> bytes_sent;  // per rank
  std::vector<int64_t> bytes_recv;  // per rank
  int64_t messages = 0;
  double seconds = 0;        // predicted
  std::string layout_after;  // on mesh_id
  int64_t mesh_id = kNone;   // the mesh layout_after is on (kNone: older files; the plan mesh)
  std::string reason;
  TransferList transfers;  // irregular steps only
  std::vector<int64_t> zero_ranks;
  friend bool operator==(const RedistStepRecord&, const RedistStepRecord&) = default;
};

// A redistribution the partitioner inserted: which tensor, for which consumer, from which
// layout to which, why, and what it costs against the lower bound.
struct RedistributionRecord {
  int64_t id = 0;
  int64_t tensor_id = kNone;
  int64_t consumer_op = kNone;  // kNone: e.g. the gradient reduction before the optimizer
  int64_t consumer_input = kNone;
  bool is_backward = false;
  std::string from_layout;
  int64_t from_mesh_id = kNone;
  std::string to_layout;
  int64_t to_mesh_id = kNone;
  int64_t plan_mesh_id = kNone;  // the mesh the steps' axes refer to
  std::string reason;
  int64_t bytes = 0;              // planned, max over ranks of bytes received
  int64_t lower_bound_bytes = 0;  // max over ranks
  int64_t bytes_total = 0;        // sums over ranks
  int64_t lower_bound_total = 0;
  std::vector<int64_t> lower_bound_per_rank;
  bool byte_optimal = true;
  double predicted_seconds = 0;
  std::vector<RedistStepRecord> steps;
  friend bool operator==(const RedistributionRecord&, const RedistributionRecord&) = default;
};

// One instruction of a rank's (or worker's) program.
struct InstructionRecord {
  int64_t ordinal = 0;
  std::string kind;  // "compute", "redistribute", "send", "recv", ...
  int64_t op_id = kNone;
  int64_t redistribution_id = kNone;
  int64_t tensor_id = kNone;
  int64_t peer = kNone;  // send/recv: the other rank
  int64_t bytes = 0;
  std::string text;
  friend bool operator==(const InstructionRecord&, const InstructionRecord&) = default;
};

// The program of one rank (MPMD, place()) or the one program all ranks run (SPMD: rank kNone).
struct ProgramRecord {
  int64_t rank = kNone;
  std::string role;  // place() role, or "" for SPMD
  std::string text;  // the program as the engine prints it
  std::vector<InstructionRecord> instructions;
  friend bool operator==(const ProgramRecord&, const ProgramRecord&) = default;
};

// A send/receive pair joining two workers' programs (one per cut edge and direction).
struct SendRecvRecord {
  int64_t id = 0;  // assigned by the store
  int64_t tensor_id = kNone;
  int64_t src_rank = 0;
  int64_t dst_rank = 0;
  int64_t src_op = kNone;
  int64_t dst_op = kNone;
  int64_t bytes = 0;
  bool is_backward = false;
  friend bool operator==(const SendRecvRecord&, const SendRecvRecord&) = default;
};

// One rank's figures for one training step (docs/run-format.md, "Figures"). Trivially
// copyable: the engine sends it from rank to rank as bytes (keep strings and vectors out).
struct RankStepRecord {
  int64_t rank = 0;
  double compute_seconds = 0;  // in kernels and the optimizer
  double comm_seconds = 0;     // in collectives and sends/receives, waiting included
  int64_t bytes_sent = 0;
  int64_t bytes_recv = 0;
  int64_t param_bytes = 0;
  int64_t grad_bytes = 0;
  int64_t optimizer_bytes = 0;
  int64_t activation_bytes = 0;
  int64_t peak_bytes = 0;
  double wall_seconds = 0;  // this rank's wall time of the step (NaN: older files)
  friend bool operator==(const RankStepRecord&, const RankStepRecord&) = default;
};

static_assert(std::is_trivially_copyable_v<RankStepRecord>);

// One phase (forward or backward) of one micro-batch on one worker during one step of a
// pipelined placed run: the pipeline timeline. Times in seconds from the worker's start of
// the step (workers start a step together: the previous step ends with a collective).
struct PipelineSpanRecord {
  int64_t step = 0;
  int64_t rank = 0;  // the worker
  int64_t micro_batch = 0;
  std::string phase;  // "forward" or "backward"
  double start_seconds = 0;
  double end_seconds = 0;
  double compute_seconds = 0;  // in kernels
  double idle_seconds = 0;     // waiting for messages
  friend bool operator==(const PipelineSpanRecord&, const PipelineSpanRecord&) = default;
};

// When one instruction of an SPMD rank's program ran during a timed step (a sample of the
// steps: docs/run-format.md, instruction_span). Seconds from that rank's start of the step.
// `part` kNone: the whole instruction (kind "compute" or "redistribution"); k >= 0: step k
// of the instruction's redistribution (kind "collective"; its collective is redist_step.kind).
struct InstructionSpanRecord {
  int64_t step = 0;
  int64_t rank = 0;
  int64_t ordinal = 0;  // instruction.ordinal in the SPMD program
  int64_t part = kNone;
  std::string kind;  // "compute", "redistribution" or "collective"
  double start_seconds = 0;
  double end_seconds = 0;
  friend bool operator==(const InstructionSpanRecord&, const InstructionSpanRecord&) = default;
};

// One training step. A step number is unique in a run.
struct StepRecord {
  int64_t step = 0;
  int64_t epoch = 0;
  double loss = kMissing;             // NaN when missing or diverged
  double seconds = 0;                 // wall time of the step on the slowest rank
  double time = 0;                    // Unix time at its end (0: the writer takes now)
  std::vector<RankStepRecord> ranks;  // ordered by rank
};
bool operator==(const StepRecord& a, const StepRecord& b);  // NaN loss equals NaN loss

// An evaluation on a dataset split.
struct EvaluationRecord {
  int64_t id = 0;  // assigned by the store
  int64_t step = 0;
  int64_t epoch = 0;
  std::string name;  // "test", "validation"
  double loss = kMissing;
  double accuracy = kMissing;
  int64_t samples = 0;
  double seconds = 0;
  double time = 0;  // Unix time (0: the writer takes now)
};
bool operator==(const EvaluationRecord& a, const EvaluationRecord& b);

// Something that happened: a warning, a phase, an error.
struct EventRecord {
  int64_t id = 0;              // assigned by the store, increasing: tail a live run with Events(id)
  double time = 0;             // Unix time (0: the writer takes now)
  std::string level = "info";  // "debug", "info", "warning", "error"
  int64_t step = kNone;
  int64_t rank = kNone;
  std::string source;  // "search", "partition", "train", ...
  std::string text;
  friend bool operator==(const EventRecord&, const EventRecord&) = default;
};

// Sums over the training steps, per rank (RunReader::RankTotals).
struct RankTotalsRecord {
  int64_t rank = 0;
  int64_t steps = 0;
  double compute_seconds = 0;  // totals
  double comm_seconds = 0;
  int64_t bytes_sent = 0;
  int64_t bytes_recv = 0;
  int64_t peak_bytes = 0;  // memory: max over steps
  int64_t param_bytes = 0;
  int64_t grad_bytes = 0;
  int64_t optimizer_bytes = 0;
  int64_t activation_bytes = 0;
  friend bool operator==(const RankTotalsRecord&, const RankTotalsRecord&) = default;
};

// Row counts of every table (RunReader::Counts).
struct RunCounts {
  int64_t meshes = 0, operators = 0, backward_operators = 0, candidates = 0, tensors = 0, edges = 0,
          redistributions = 0, redist_steps = 0, programs = 0, instructions = 0, send_recvs = 0,
          steps = 0, rank_steps = 0, evaluations = 0, events = 0;
  friend bool operator==(const RunCounts&, const RunCounts&) = default;
};

}  // namespace shardscope::store

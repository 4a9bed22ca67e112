// Internal: the columns of each table of the current schema, in the order the writer binds
// them and the reader reads them. The one place that names them: INSERTs and SELECTs are
// built from it, and a test checks it against the tables the migrations create.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace shardscope::store::internal {

struct Table {
  std::string_view name;
  std::span<const std::string_view> columns;
  bool generated_id = false;  // columns[0] is "id", assigned by SQLite: INSERTs leave it out
};

namespace columns {
// The run's own fields (set at creation and by UpdateRun) come first, then its state; its
// one row has id 1.
inline constexpr int kRunFields = 11;
inline constexpr std::string_view kRun[] = {"name",
                                            "mode",
                                            "search",
                                            "devices",
                                            "backend",
                                            "model_path",
                                            "model_text",
                                            "config",
                                            "command_line",
                                            "shardscope_version",
                                            "versions",
                                            "status",
                                            "status_message",
                                            "started_at",
                                            "updated_at",
                                            "ended_at",
                                            "writer_pid",
                                            "writer_host",
                                            "id"};
inline constexpr std::string_view kMesh[] = {"id", "name", "shape", "axis_names", "ranks"};
inline constexpr std::string_view kOperator[] = {"id",
                                                 "name",
                                                 "scope",
                                                 "kind",
                                                 "is_backward",
                                                 "forward_id",
                                                 "mesh_id",
                                                 "strategy",
                                                 "provenance",
                                                 "provenance_detail",
                                                 "provenance_op",
                                                 "search_round",
                                                 "cost",
                                                 "worker",
                                                 "attrs"};
inline constexpr std::string_view kCandidate[] = {
    "op_id",           "ordinal",      "strategy",     "cost",
    "compute_seconds", "comm_seconds", "memory_bytes", "note"};
inline constexpr std::string_view kTensor[] = {
    "id", "name", "shape", "dtype", "kind", "producer_op", "producer_output", "layout", "mesh_id"};
inline constexpr std::string_view kEdge[] = {"dst_op",     "dst_input", "tensor_id", "src_op",
                                             "src_output", "layout",    "mesh_id"};
inline constexpr std::string_view kRedistribution[] = {"id",
                                                       "tensor_id",
                                                       "consumer_op",
                                                       "consumer_input",
                                                       "is_backward",
                                                       "from_layout",
                                                       "from_mesh_id",
                                                       "to_layout",
                                                       "to_mesh_id",
                                                       "plan_mesh_id",
                                                       "reason",
                                                       "bytes",
                                                       "lower_bound_bytes",
                                                       "bytes_total",
                                                       "lower_bound_total",
                                                       "lower_bound_per_rank",
                                                       "byte_optimal",
                                                       "predicted_seconds"};
inline constexpr std::string_view kRedistStep[] = {"redistribution_id",
                                                   "ordinal",
                                                   "kind",
                                                   "axes",
                                                   "axis_names",
                                                   "dim",
                                                   "dim_to",
                                                   "rank_groups",
                                                   "bytes_sent_max",
                                                   "bytes_recv_max",
                                                   "bytes_sent",
                                                   "bytes_recv",
                                                   "messages",
                                                   "seconds",
                                                   "layout_after",
                                                   "reason",
                                                   "transfers",
                                                   "zero_ranks",
                                                   "mesh_id"};
inline constexpr std::string_view kProgram[] = {"rank", "role", "listing"};
inline constexpr std::string_view kInstruction[] = {
    "rank", "ordinal", "kind", "op_id", "redistribution_id", "tensor_id", "peer", "bytes", "text"};
inline constexpr std::string_view kSendRecv[] = {"id",     "tensor_id", "src_rank", "dst_rank",
                                                 "src_op", "dst_op",    "bytes",    "is_backward"};
inline constexpr std::string_view kStep[] = {"step", "epoch", "loss", "seconds", "time"};
inline constexpr std::string_view kRankStep[] = {
    "step",       "rank",        "compute_seconds", "comm_seconds",    "bytes_sent",
    "bytes_recv", "param_bytes", "grad_bytes",      "optimizer_bytes", "activation_bytes",
    "peak_bytes", "wall_seconds"};
inline constexpr std::string_view kEvaluation[] = {"id",       "step",    "epoch",   "name", "loss",
                                                   "accuracy", "samples", "seconds", "time"};
inline constexpr std::string_view kEvent[] = {"id",   "time",   "level",  "step",
                                              "rank", "source", "message"};
inline constexpr std::string_view kPipelineSpan[] = {
    "step",          "rank",        "micro_batch",     "phase",
    "start_seconds", "end_seconds", "compute_seconds", "idle_seconds"};
inline constexpr std::string_view kInstructionSpan[] = {
    "step", "rank", "ordinal", "part", "kind", "start_seconds", "end_seconds"};
}  // namespace columns

inline constexpr Table kRunTable{"run", columns::kRun};
inline constexpr Table kMeshTable{"mesh", columns::kMesh};
inline constexpr Table kOperatorTable{"operator", columns::kOperator};
inline constexpr Table kCandidateTable{"candidate", columns::kCandidate};
inline constexpr Table kTensorTable{"tensor", columns::kTensor};
inline constexpr Table kEdgeTable{"edge", columns::kEdge};
inline constexpr Table kRedistributionTable{"redistribution", columns::kRedistribution};
inline constexpr Table kRedistStepTable{"redist_step", columns::kRedistStep};
inline constexpr Table kProgramTable{"program", columns::kProgram};
inline constexpr Table kInstructionTable{"instruction", columns::kInstruction};
inline constexpr Table kSendRecvTable{"send_recv", columns::kSendRecv, true};
inline constexpr Table kStepTable{"step", columns::kStep};
inline constexpr Table kRankStepTable{"rank_step", columns::kRankStep};
inline constexpr Table kEvaluationTable{"evaluation", columns::kEvaluation, true};
inline constexpr Table kEventTable{"event", columns::kEvent, true};
inline constexpr Table kPipelineSpanTable{"pipeline_span", columns::kPipelineSpan};
inline constexpr Table kInstructionSpanTable{"instruction_span", columns::kInstructionSpan};

// Every table of a run file of the current version (the reader checks they exist).
inline constexpr Table kTables[] = {
    kRunTable,          kMeshTable,           kOperatorTable,   kCandidateTable,  kTensorTable,
    kEdgeTable,         kRedistributionTable, kRedistStepTable, kProgramTable,    kInstructionTable,
    kSendRecvTable,     kStepTable,           kRankStepTable,   kEvaluationTable, kEventTable,
    kPipelineSpanTable, kInstructionSpanTable};

// "a, b, c" of `columns`.
std::string ColumnList(std::span<const std::string_view> columns);
// "?1, ?2, ..., ?n".
std::string Placeholders(size_t n);
// "INSERT INTO t (a, b) VALUES (?1, ?2)", without a generated id.
std::string InsertSql(const Table& table);
// "SELECT a, b FROM t " followed by `rest` (WHERE / ORDER BY).
std::string SelectSql(const Table& table, std::string_view rest);
// "a = ?1, b = ?2" of `columns` (an UPDATE's SET list).
std::string AssignmentList(std::span<const std::string_view> columns);

}  // namespace shardscope::store::internal

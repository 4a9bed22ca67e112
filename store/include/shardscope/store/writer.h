// RunWriter: records a run into its SQLite file (DESIGN.md §5, docs/run-format.md).
//
// One writer per run file, on rank 0 (the other ranks send it their records). Create() takes
// the file's lock (a `<path>.lock` file held with flock, naming the writer's pid and host),
// checks that the directory is writable and has space, and creates the file with the whole
// schema atomically (written to `<path>.creating`, then renamed), so a run that cannot be
// recorded fails before training starts and a reader never sees half a schema.
//
// Transactions: every Add* joins the current transaction, which the first Add* (or Begin())
// opens; Commit() commits it. Commit at least once per training step: a crash (even SIGKILL)
// loses only what was not committed, and readers see each commit as it happens (WAL).
// Commits append to the write-ahead log without fsync (PRAGMA synchronous=NORMAL: nothing
// committed is lost when the process dies, and the file is never corrupt after a power
// failure, which may lose the last commits; RunWriterOptions::durable adds an fsync per
// commit). Checkpoints (copying the log into the file, with fsyncs) run on a background
// thread; a call made while it copies the last few pages of the log waits for it (once per
// 1000 pages of log; docs/run-format.md).
//
// Every statement is prepared once in Create(). References between records (operator ->
// mesh, edge -> tensor, ...) are foreign keys checked at Commit(), so records may be added
// in any order within a transaction; a Commit() that would leave a dangling reference fails,
// names the first offending rows, and rolls the transaction back.
//
// Finish() records the final status and end time, checkpoints, turns the file back into a
// single self-contained file (journal_mode=DELETE, when no reader holds it open) and releases
// the lock; it first gives back the space Create() set aside (reserve_bytes), so this works
// after a full disk too. A writer destroyed without Finish() records "interrupted".
//
// Errors: every method returns a Status whose message names the file and the reason
// ("runs/a.db: disk full while committing: ..."). A failed Add* leaves the transaction open
// without that record; a failed Commit() rolls it back. Thread safety: methods may be called
// from several threads (they serialise on an internal mutex).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "shardscope/store/records.h"
#include "shardscope/store/status.h"

namespace shardscope::store {

struct RunWriterOptions {
  // Replace an existing run file (never one another run is writing). Without it, Create()
  // refuses an existing file (kAlreadyExists) so a finished run is never lost by accident.
  bool overwrite = false;
  // Create() refuses to start when the file system has less free space (kDiskFull).
  int64_t min_free_bytes = int64_t{16} << 20;
  // Disk space held back during the run (in the lock file) and given back at Finish(), so a
  // run that fills its disk still records its final status and copies its log into the file.
  int64_t reserve_bytes = int64_t{4} << 20;
  // fsync the log at every commit (PRAGMA synchronous=FULL): survives power loss too.
  bool durable = false;
  // Checkpoint the log into the main file on a background thread (else: in Commit()).
  bool background_checkpoint = true;
  // How long Create() retries a lock that is busy (a reader checking liveness holds it for
  // microseconds) before reporting kLocked.
  double lock_wait_seconds = 1.0;
  // SQLite page size in bytes (a power of two, 512..65536); 0 keeps SQLite's default (4096).
  int page_size = 0;
};

class RunWriter {
 public:
  // Creates the run file at `path` with `run`'s descriptive fields, status "running".
  // Errors: kInvalidInput (empty path), kNotFound (no such directory), kReadOnly,
  // kDiskFull, kLocked (another run writes it), kAlreadyExists, kIoError.
  static Result<std::unique_ptr<RunWriter>> Create(const std::string& path, const RunInfo& run,
                                                   const RunWriterOptions& options = {});
  ~RunWriter();  // Finish(kInterrupted, ...) unless Finish() was called
  RunWriter(const RunWriter&) = delete;
  RunWriter& operator=(const RunWriter&) = delete;

  const std::string& path() const;

  // Updates the descriptive fields of the run (not status, times or writer).
  Status UpdateRun(const RunInfo& run);

  // The plan. Ids are the caller's and unique per table (kInvalidInput when repeated).
  Status AddMesh(const MeshRecord& mesh);
  Status AddOperator(const OperatorRecord& op);  // with its candidates
  Status AddTensor(const TensorRecord& tensor);
  Status AddEdge(const EdgeRecord& edge);
  Status AddRedistribution(const RedistributionRecord& redistribution);  // with its steps
  Status AddProgram(const ProgramRecord& program);                       // with its instructions
  Status AddSendRecv(const SendRecvRecord& pair);                        // id assigned by the store

  // Training. A step number may be recorded once. A `time` of 0 is taken as now.
  Status AddStep(const StepRecord& step);                    // with its per-rank figures
  Status AddEvaluation(const EvaluationRecord& evaluation);  // id assigned by the store
  Status AddPipelineSpan(const PipelineSpanRecord& span);
  Status AddInstructionSpan(const InstructionSpanRecord& span);
  Status AddEvent(const EventRecord& event);  // id assigned by the store
  // An event now: time = now, no step or rank unless given.
  Status AddEvent(std::string_view level, std::string_view source, std::string_view text,
                  int64_t step = kNone, int64_t rank = kNone);

  // Opens a transaction (Add* opens one when none is open). No-op when one is open.
  Status Begin();
  // Commits the open transaction (no-op when none is) and stamps the run's updated_at.
  Status Commit();
  bool in_transaction() const;

  // Commits, records the final status (kCompleted, kFailed or kInterrupted) with a message,
  // closes the file and releases the lock. Later calls to any method fail.
  Status Finish(RunStatus status, std::string_view message = {});
  bool finished() const;

 private:
  struct Impl;
  explicit RunWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A finished run left in WAL mode (a reader stayed connected for the whole of Finish's retry)
// becomes one self-contained file again: its log copied in, back to a rollback journal.
// Writer-side: `shardscope inspect` calls it before reading. Ok when there is nothing to
// do or it succeeded; kLocked while a writer is alive or another connection holds the file;
// kReadOnly/kIo when the file cannot be opened for writing. Never waits.
Status SettleRunFile(const std::string& path);

}  // namespace shardscope::store

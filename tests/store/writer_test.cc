// RunWriter: the lock, refusals before a run starts (existing file, no space, read-only or
// missing directory), transactions and their failures, reading while writing, reopening,
// and the status a reader reports when the writer is gone.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "in_child.h"
#include "sample_run.h"
#include "shardscope/store/reader.h"
#include "shardscope/store/writer.h"
#include "temp_dir.h"

namespace shardscope::store {
namespace {

using testing::InChild;
using testing::MakeSampleRun;
using testing::SampleRunInfo;
using testing::Say;
using testing::TempDir;

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

StepRecord Step(int64_t n, int ranks = 2) {
  StepRecord s;
  s.step = n;
  s.loss = 1.0 / (1 + n);
  s.seconds = 0.01;
  for (int k = 0; k < ranks; ++k) s.ranks.push_back({k, 0.004, 0.001, 10, 20, 1, 2, 3, 4, 10});
  return s;
}

CandidateRecord Candidate(const std::string& strategy, double cost) {
  CandidateRecord c;
  c.strategy = strategy;
  c.cost = cost;
  return c;
}

TEST(RunWriter, SecondWriterIsRefusedWithTheHolder) {
  TempDir dir;
  const std::string path = dir.File("run.db");
  auto first = RunWriter::Create(path, SampleRunInfo());
  ASSERT_TRUE(first.ok()) << first.status().message();
  RunWriterOptions options;
  options.lock_wait_seconds = 0.05;
  options.overwrite = true;  // even with overwrite: a file being written is never replaced
  auto second = RunWriter::Create(path, SampleRunInfo(), options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kLocked);
  const std::string& message = second.status().message();
  EXPECT_TRUE(Contains(message, path)) << message;
  EXPECT_TRUE(Contains(message, "another run is writing this file")) << message;
  EXPECT_TRUE(Contains(message, "pid " + std::to_string(getpid()))) << message;
  // The first writer is unharmed.
  ASSERT_TRUE((*first)->AddStep(Step(0)).ok());
  ASSERT_TRUE((*first)->Finish(RunStatus::kCompleted).ok());
  EXPECT_FALSE(Exists(path + ".lock"));
}

TEST(RunWriter, ExistingFileNeedsOverwrite) {
  TempDir dir;
  const std::string path = dir.File("run.db");
  {
    auto w = RunWriter::Create(path, SampleRunInfo());
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->AddStep(Step(0)).ok());
    ASSERT_TRUE((*w)->Finish(RunStatus::kCompleted).ok());
  }
  auto again = RunWriter::Create(path, SampleRunInfo());
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(Contains(again.status().message(), path));
  RunWriterOptions options;
  options.overwrite = true;
  auto replaced = RunWriter::Create(path, SampleRunInfo(), options);
  ASSERT_TRUE(replaced.ok()) << replaced.status().message();
  ASSERT_TRUE((*replaced)->Finish(RunStatus::kCompleted).ok());
  auto reader = RunReader::Open(path);
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE((*reader)->Steps()->empty());  // the old run is gone
}

TEST(RunWriter, RefusesToStartWithoutSpace) {
  TempDir dir;
  RunWriterOptions options;
  options.min_free_bytes = int64_t{1} << 62;
  auto w = RunWriter::Create(dir.File("run.db"), SampleRunInfo(), options);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kDiskFull);
  EXPECT_TRUE(Contains(w.status().message(), "free on the file system")) << w.status().message();
  EXPECT_FALSE(Exists(dir.File("run.db")));
  EXPECT_FALSE(Exists(dir.File("run.db.lock")));
}

TEST(RunWriter, RefusesMissingDirectory) {
  TempDir dir;
  auto w = RunWriter::Create(dir.File("no/such/dir/run.db"), SampleRunInfo());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(w.status().message(), "does not exist")) << w.status().message();
  auto empty = RunWriter::Create("", SampleRunInfo());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidInput);
}

// /proc exists but answers ENOENT to a new file: the message must not claim it is missing.
TEST(RunWriter, DirectoryThatRefusesNewFilesIsNotCalledMissing) {
  struct stat st {};
  if (stat("/proc/self", &st) != 0) GTEST_SKIP() << "no /proc here";
  auto w = RunWriter::Create("/proc/run.db", SampleRunInfo());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kReadOnly) << w.status().message();
  EXPECT_TRUE(Contains(w.status().message(), "directory '/proc' does not accept new files"))
      << w.status().message();
}

TEST(RunWriter, RefusesReadOnlyDirectory) {
  TempDir dir;
  const std::string ro = dir.File("ro");
  ASSERT_EQ(mkdir(ro.c_str(), 0555), 0);
  chmod(dir.path().c_str(), 0755);
  // root ignores permissions: try as an unprivileged user in a child process.
  const std::string out = InChild([&](int fd) {
    if (geteuid() == 0 && setuid(65534) != 0) {
      Say(fd, "setuid failed");
      return;
    }
    auto w = RunWriter::Create(ro + "/run.db", SampleRunInfo());
    Say(fd, w.ok()
                ? std::string("created")
                : std::to_string(static_cast<int>(w.status().code())) + "|" + w.status().message());
  });
  if (out == "setuid failed") GTEST_SKIP() << "cannot drop root privileges here";
  ASSERT_NE(out, "created");
  EXPECT_EQ(out.substr(0, out.find('|')), std::to_string(static_cast<int>(StatusCode::kReadOnly)))
      << out;
  EXPECT_TRUE(Contains(out, "is not writable")) << out;
  EXPECT_TRUE(Contains(out, ro + "/run.db")) << out;
  chmod(ro.c_str(), 0755);
}

TEST(RunWriter, DanglingReferenceFailsTheCommitAndRollsBack) {
  TempDir dir;
  const std::string path = dir.File("run.db");
  auto w = RunWriter::Create(path, SampleRunInfo());
  ASSERT_TRUE(w.ok());
  OperatorRecord op;
  op.id = 1;
  op.name = "a";
  op.mesh_id = 99;                          // no such mesh
  ASSERT_TRUE((*w)->AddOperator(op).ok());  // checked at commit: records may come in any order
  Status st = (*w)->Commit();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidInput);
  EXPECT_TRUE(Contains(st.message(), "1 row of 'operator' refers to a missing 'mesh'"))
      << st.message();
  EXPECT_FALSE((*w)->in_transaction());
  // Out of order but complete: fine.
  op.mesh_id = 5;
  ASSERT_TRUE((*w)->AddOperator(op).ok());
  ASSERT_TRUE((*w)->AddMesh({5, "m", {2}, {"dp"}, {}}).ok());
  ASSERT_TRUE((*w)->Commit().ok());
  ASSERT_TRUE((*w)->Finish(RunStatus::kCompleted).ok());
  auto reader = RunReader::Open(path);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->Operators()->size(), 1u);
}

TEST(RunWriter, FailedRecordLeavesNothingBehind) {
  TempDir dir;
  const std::string path = dir.File("run.db");
  auto w = RunWriter::Create(path, SampleRunInfo());
  ASSERT_TRUE(w.ok());
  OperatorRecord op;
  op.id = 0;
  op.name = "first";
  op.candidates = {Candidate("a", 1), Candidate("b", 2)};
  ASSERT_TRUE((*w)->AddOperator(op).ok());
  op.name = "second";
  op.candidates = {Candidate("c", 1), Candidate("d", 2), Candidate("e", 3)};
  Status dup = (*w)->AddOperator(op);
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.code(), StatusCode::kInvalidInput);
  EXPECT_TRUE(Contains(dup.message(), "operator 0 'second'")) << dup.message();
  EXPECT_TRUE((*w)->in_transaction());  // the transaction goes on without that record
  ASSERT_TRUE((*w)->AddStep(Step(3)).ok());
  EXPECT_FALSE((*w)->AddStep(Step(3)).ok());  // a step is recorded once
  OperatorRecord negative;
  negative.id = -5;
  EXPECT_EQ((*w)->AddOperator(negative).code(), StatusCode::kInvalidInput);
  // A child row fails: the rows of the record already added go too.
  StepRecord twice = Step(4);
  twice.ranks[1].rank = 0;
  EXPECT_FALSE((*w)->AddStep(twice).ok());
  RedistributionRecord r;
  r.id = 9;
  r.steps.resize(2);  // two steps with ordinal 0
  Status bad_steps = (*w)->AddRedistribution(r);
  EXPECT_FALSE(bad_steps.ok());
  EXPECT_TRUE(Contains(bad_steps.message(), "redistribution 9 step 0")) << bad_steps.message();
  ProgramRecord p;
  p.rank = 0;
  p.instructions.resize(3);  // three with ordinal 0
  EXPECT_FALSE((*w)->AddProgram(p).ok());
  ASSERT_TRUE((*w)->Commit().ok());
  ASSERT_TRUE((*w)->Finish(RunStatus::kCompleted).ok());
  auto reader = RunReader::Open(path);
  ASSERT_TRUE(reader.ok());
  auto ops = (*reader)->Operators();
  ASSERT_TRUE(ops.ok());
  ASSERT_EQ(ops->size(), 1u);
  EXPECT_EQ((*ops)[0].name, "first");
  EXPECT_EQ((*ops)[0].candidates.size(), 2u);
  auto steps = (*reader)->Steps(0, 10, true);
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_EQ((*steps)[0].ranks.size(), 2u);
  auto counts = (*reader)->Counts();
  EXPECT_EQ(counts->rank_steps, 2);
  EXPECT_EQ(counts->redistributions, 0);
  EXPECT_EQ(counts->redist_steps, 0);
  EXPECT_EQ(counts->programs, 0);
  EXPECT_EQ(counts->instructions, 0);
}

TEST(RunWriter, FinishIsFinal) {
  TempDir dir;
  auto w = RunWriter::Create(dir.File("run.db"), SampleRunInfo());
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->Finish(RunStatus::kRunning).code(), StatusCode::kInvalidInput);
  ASSERT_TRUE((*w)->AddStep(Step(0)).ok());  // uncommitted: Finish commits it
  ASSERT_TRUE((*w)->Finish(RunStatus::kFailed, "loss is NaN").ok());
  EXPECT_TRUE((*w)->finished());
  EXPECT_FALSE((*w)->AddStep(Step(1)).ok());
  EXPECT_FALSE((*w)->Commit().ok());
  EXPECT_FALSE((*w)->Finish(RunStatus::kCompleted).ok());
  // One self-contained file: no log, no lock left.
  EXPECT_FALSE(Exists(dir.File("run.db-wal")));
  EXPECT_FALSE(Exists(dir.File("run.db-shm")));
  EXPECT_FALSE(Exists(dir.File("run.db.lock")));
  auto reader = RunReader::Open(dir.File("run.db"));
  ASSERT_TRUE(reader.ok());
  auto run = (*reader)->Run();
  EXPECT_EQ(run->status, RunStatus::kFailed);
  EXPECT_EQ(run->status_message, "loss is NaN");
  EXPECT_EQ((*reader)->Steps()->size(), 1u);
  // A finished file opened read-only leaves no side files behind.
  reader->reset();
  EXPECT_FALSE(Exists(dir.File("run.db-wal")));
}

TEST(RunWriter, DestroyedWithoutFinishIsInterrupted) {
  TempDir dir;
  {
    auto w = RunWriter::Create(dir.File("run.db"), SampleRunInfo());
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->AddStep(Step(0)).ok());
    ASSERT_TRUE((*w)->Commit().ok());
  }
  auto reader = RunReader::Open(dir.File("run.db"));
  ASSERT_TRUE(reader.ok());
  auto run = (*reader)->Run();
  EXPECT_EQ(run->stored_status, RunStatus::kInterrupted);
  EXPECT_TRUE(Contains(run->status_message, "without a final status"));
}

TEST(RunWriter, ReaderSeesEveryCommitWhileWriting) {
  TempDir dir;
  const std::string path = dir.File("run.db");
  auto w = RunWriter::Create(path, SampleRunInfo());
  ASSERT_TRUE(w.ok());
  auto reader = RunReader::Open(path);  // open before anything is recorded
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_TRUE((*reader)->IsLive());
  EXPECT_EQ((*reader)->Run()->status, RunStatus::kRunning);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE((*w)->AddStep(Step(i)).ok());
    EXPECT_EQ((*reader)->Steps()->size(), static_cast<size_t>(i));  // not committed yet
    ASSERT_TRUE((*w)->Commit().ok());
    EXPECT_EQ((*reader)->Steps()->size(), static_cast<size_t>(i + 1));
  }
  // A second reader opened mid-run, and a writer finishing while readers are open.
  auto second = RunReader::Open(path);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ((*second)->Steps(0, 100, true)->size(), 20u);
  ASSERT_TRUE((*w)->Finish(RunStatus::kCompleted).ok());
  EXPECT_EQ((*reader)->Run()->status, RunStatus::kCompleted);
  EXPECT_FALSE((*reader)->IsLive());
  EXPECT_EQ((*second)->Steps()->size(), 20u);
}

TEST(RunWriter, ReopenGivesTheSameRun) {
  TempDir dir;
  const std::string path = dir.File("run.db");
  testing::SampleRun sample = MakeSampleRun(12);
  {
    auto w = RunWriter::Create(path, sample.run);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(testing::WriteSample(**w, sample).ok());
    ASSERT_TRUE((*w)->Finish(RunStatus::kCompleted).ok());
  }
  std::string first;
  for (int i = 0; i < 3; ++i) {
    auto reader = RunReader::Open(path);
    ASSERT_TRUE(reader.ok());
    auto json = RunSummaryJson(**reader);
    ASSERT_TRUE(json.ok());
    if (i == 0) first = *json;
    EXPECT_EQ(*json, first);
    EXPECT_EQ((*reader)->Steps(0, 100, true).value(), sample.steps);
  }
}

TEST(RunWriter, ConcurrentCallersAreSerialised) {
  TempDir dir;
  auto w = RunWriter::Create(dir.File("run.db"), SampleRunInfo());
  ASSERT_TRUE(w.ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        EXPECT_TRUE(
            (*w)->AddEvent("info", "rank" + std::to_string(t), "e" + std::to_string(i)).ok());
        if (i % 10 == 0) {
          EXPECT_TRUE((*w)->Commit().ok());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE((*w)->Finish(RunStatus::kCompleted).ok());
  auto reader = RunReader::Open(dir.File("run.db"));
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->Events()->size(), 200u);
}

TEST(RunWriter, LogStaysBoundedOverManySteps) {
  TempDir dir;
  const std::string path = dir.File("run.db");
  auto w = RunWriter::Create(path, SampleRunInfo());
  ASSERT_TRUE(w.ok());
  for (int i = 0; i < 8000; ++i) {
    ASSERT_TRUE((*w)->AddStep(Step(i, 8)).ok());
    ASSERT_TRUE((*w)->Commit().ok());
  }
  // Without checkpoints the log would hold every commit (8000 x about 4 pages of 4 KiB, some
  // 130 MiB). Checkpoints restart it; even with a writer this fast (no training between
  // commits) on a busy machine it stays near the hard cap of 8000 pages (33 MiB), where the
  // writer checkpoints itself.
  EXPECT_LT(std::filesystem::file_size(path + "-wal"), uintmax_t{64} << 20);
  ASSERT_TRUE((*w)->Finish(RunStatus::kCompleted).ok());
  auto reader = RunReader::Open(path);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->Counts()->rank_steps, 64000);
  EXPECT_TRUE((*reader)->Check().ok());
}

TEST(RunWriter, CrashedWriterReadsAsInterrupted) {
  TempDir dir;
  const std::string path = dir.File("run.db");
  const std::string out = InChild([&](int fd) {
    auto w = RunWriter::Create(path, SampleRunInfo());
    if (!w.ok()) {
      Say(fd, w.status().message());
      return;
    }
    for (int i = 0; i < 3; ++i) {
      if (!(*w)->AddStep(Step(i)).ok() || !(*w)->Commit().ok()) Say(fd, "write failed");
    }
    (void)(*w)->AddStep(Step(3));  // in flight: lost
    Say(fd, "ok");
    w->release();  // leak it: the process ends without Finish()
  });
  ASSERT_EQ(out, "ok");
  EXPECT_TRUE(Exists(path + ".lock"));  // left behind, naming a dead pid, flock free
  for (int pass = 0; pass < 2; ++pass) {
    auto reader = RunReader::Open(path);
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    auto run = (*reader)->Run();
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->stored_status, RunStatus::kRunning);
    EXPECT_EQ(run->status, RunStatus::kInterrupted);
    EXPECT_FALSE((*reader)->IsLive());
    EXPECT_EQ((*reader)->Steps()->size(), 3u);
    EXPECT_TRUE((*reader)->Check().ok());
    std::filesystem::remove(path + ".lock");  // second pass: no lock file at all
  }
  // A new writer may replace the interrupted run.
  RunWriterOptions options;
  options.overwrite = true;
  auto w = RunWriter::Create(path, SampleRunInfo(), options);
  ASSERT_TRUE(w.ok()) << w.status().message();
  ASSERT_TRUE((*w)->Finish(RunStatus::kCompleted).ok());
}

// The lock file holds disk space for the final status (its text and size stay small): a
// run that fills its disk gives it back in Finish() (diskfull_test.sh fills a real disk).
TEST(RunWriter, KeepsDiskSpaceAsideUntilFinish) {
  TempDir dir;
  const std::string path = dir.File("run.db");
  RunWriterOptions options;
  options.reserve_bytes = int64_t{2} << 20;
  auto w = RunWriter::Create(path, SampleRunInfo(), options);
  ASSERT_TRUE(w.ok()) << w.status().message();
  struct stat lock {};
  ASSERT_EQ(stat((path + ".lock").c_str(), &lock), 0);
  EXPECT_LT(lock.st_size, 512);
  const int probe = open(dir.File("probe").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  const bool can_reserve = fallocate(probe, FALLOC_FL_KEEP_SIZE, 4096, 4096) == 0;
  close(probe);
  if (!can_reserve) GTEST_SKIP() << "this file system cannot allocate beyond a file's end";
  EXPECT_GE(lock.st_blocks * 512, options.reserve_bytes);
  ASSERT_TRUE((*w)->Finish(RunStatus::kCompleted).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".lock"));
}

TEST(RunWriter, DiskFullDuringARunIsAClearErrorAndLosesNoCommit) {
  TempDir dir;
  const std::string path = dir.File("run.db");
  const std::string out = InChild([&](int fd) {
    auto w = RunWriter::Create(path, SampleRunInfo());
    if (!w.ok()) {
      Say(fd, "create failed: " + w.status().message());
      return;
    }
    if (!testing::WriteSample(**w, MakeSampleRun(0)).ok()) return;
    // Files may grow by 1 MiB more: then writes fail as on a full disk.
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit {};
    const auto wal = std::filesystem::file_size(path + "-wal");
    const auto db = std::filesystem::file_size(path);
    limit.rlim_cur = limit.rlim_max = std::max(wal, db) + (1 << 20);
    setrlimit(RLIMIT_FSIZE, &limit);
    int64_t committed = -1;
    const std::string filler(4000, 'x');
    for (int i = 0; i < 100000; ++i) {
      Status st = (*w)->AddStep(Step(i, 8));
      if (st.ok()) st = (*w)->AddEvent("info", "test", filler, i);
      if (st.ok()) st = (*w)->Commit();
      if (!st.ok()) {
        Say(fd, std::to_string(committed) + "|" + std::to_string(static_cast<int>(st.code())) +
                    "|" + st.message());
        return;
      }
      committed = i;
    }
    Say(fd, "never failed");
  });
  const size_t bar = out.find('|');
  ASSERT_NE(bar, std::string::npos) << out;
  const int64_t committed = std::stoll(out.substr(0, bar));
  const std::string rest = out.substr(bar + 1);
  const int code = std::stoi(rest.substr(0, rest.find('|')));
  const std::string message = rest.substr(rest.find('|') + 1);
  EXPECT_TRUE(code == static_cast<int>(StatusCode::kDiskFull) ||
              code == static_cast<int>(StatusCode::kIoError))
      << message;
  EXPECT_TRUE(Contains(message, path)) << message;
  EXPECT_GT(committed, 10);
  auto reader = RunReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto steps = (*reader)->Steps();
  ASSERT_TRUE(steps.ok()) << steps.status().message();
  EXPECT_GE(static_cast<int64_t>(steps->size()), committed + 1);
  EXPECT_EQ((*reader)->Run()->status, RunStatus::kInterrupted);
}

}  // namespace
}  // namespace shardscope::store

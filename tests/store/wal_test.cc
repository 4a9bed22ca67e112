// The run file and its write-ahead log around readers: the writer's switch back to a rollback
// journal when a run ends while a reader is connected, and readers of a file left in WAL mode
// where they cannot create `-shm` (a read-only directory or file).
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
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

using testing::SampleRunInfo;
using testing::TempDir;

// Byte 18 of an SQLite header: 2 in WAL mode, 1 with a rollback journal.
int JournalByte(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char header[20] = {};
  in.read(header, sizeof(header));
  return header[18];
}

StepRecord Step(int64_t n) {
  StepRecord s;
  s.step = n;
  s.loss = 1.0;
  s.seconds = 0.01;
  s.ranks.push_back({0, 0.004, 0.001, 10, 20, 1, 2, 3, 4, 10});
  return s;
}

TEST(RunFileWal, RunEndingWhileAReaderIsConnectedLeavesWalModeWhenItDisconnects) {
  TempDir dir;
  const std::string path = dir.File("run.db");
  auto w = RunWriter::Create(path, SampleRunInfo());
  ASSERT_TRUE(w.ok()) << w.status().message();
  ASSERT_TRUE((*w)->AddStep(Step(0)).ok());
  ASSERT_TRUE((*w)->Commit().ok());
  auto reader = RunReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  ASSERT_TRUE((*reader)->Steps().ok());
  // The reader goes away a little after the run ends (a viewer between two refreshes).
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    reader->reset();
  });
  const Status finished = (*w)->Finish(RunStatus::kCompleted);
  closer.join();
  ASSERT_TRUE(finished.ok()) << finished.message();
  EXPECT_EQ(JournalByte(path), 1) << "still in WAL mode";
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

// Runs `body` as user nobody when this test runs as root (root ignores the permission bits
// the cases depend on); returns what it returned.
std::string AsUnprivileged(const std::function<std::string()>& body) {
  return testing::InChild([&](int fd) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) {
      testing::Say(fd, "cannot become nobody");
      return;
    }
    testing::Say(fd, body());
  });
}

// A finished run, switched to WAL mode by hand (as a run that ended while a reader was open).
void MakeWalModeRun(const std::string& path) {
  auto w = RunWriter::Create(path, SampleRunInfo());
  ASSERT_TRUE(w.ok()) << w.status().message();
  ASSERT_TRUE((*w)->AddStep(Step(0)).ok());
  ASSERT_TRUE((*w)->Finish(RunStatus::kCompleted).ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  ASSERT_EQ(JournalByte(path), 2);
}

std::string OpenAndCountSteps(const std::string& path) {
  auto reader = RunReader::Open(path);
  if (!reader.ok()) return "error: " + reader.status().message();
  auto steps = (*reader)->Steps();
  return steps.ok() ? "steps " + std::to_string(steps->size())
                    : "error: " + steps.status().message();
}

// A run that ended while a reader stayed connected is settled later, writer-side (`shardscope
// inspect`): once no connection is open, never under a writer or a connection.
TEST(RunFileWal, FinishedRunLeftInWalModeIsSettledOnceNoConnectionIsOpen) {
  TempDir dir;
  const std::string path = dir.File("run.db");
  MakeWalModeRun(path);
  sqlite3* reader = nullptr;  // a reader inside a read transaction
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &reader, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM step", nullptr, nullptr, nullptr),
            SQLITE_OK);
  EXPECT_EQ(SettleRunFile(path).code(), StatusCode::kLocked);
  EXPECT_EQ(JournalByte(path), 2);
  sqlite3_close(reader);
  {  // a writer's lock file: not settled behind a (live or dead) writer's back
    std::ofstream(path + ".lock") << "1 elsewhere\n";
    EXPECT_EQ(SettleRunFile(path).code(), StatusCode::kLocked);
    EXPECT_EQ(JournalByte(path), 2);
    std::filesystem::remove(path + ".lock");
  }
  const Status settled = SettleRunFile(path);
  ASSERT_TRUE(settled.ok()) << settled.message();
  EXPECT_EQ(JournalByte(path), 1) << "still in WAL mode";
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(path + "-shm"));
  EXPECT_EQ(OpenAndCountSteps(path), "steps 1");
  EXPECT_TRUE(SettleRunFile(path).ok());  // nothing left to do
}

TEST(RunFileWal, WalModeFileInAReadOnlyDirectoryIsReadAsImmutable) {
  TempDir dir;
  const std::string sub = dir.File("shared");
  std::filesystem::create_directory(sub);
  const std::string path = sub + "/run.db";
  MakeWalModeRun(path);
  chmod(path.c_str(), 0444);
  chmod(sub.c_str(), 0555);
  chmod(dir.path().c_str(), 0755);
  EXPECT_EQ(AsUnprivileged([&] { return OpenAndCountSteps(path); }), "steps 1");
  EXPECT_FALSE(std::filesystem::exists(path + "-shm"));
  chmod(sub.c_str(), 0755);
}

TEST(RunFileWal, UncopiedLogInAReadOnlyDirectorySaysWhatToDo) {
  TempDir dir;
  const std::string sub = dir.File("shared");
  std::filesystem::create_directory(sub);
  const std::string source = dir.File("run.db");
  MakeWalModeRun(source);
  // A commit left in the log: copy the file and its log while a connection holds them.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(source.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "PRAGMA wal_autocheckpoint = 0; "
                         "UPDATE run SET status_message = 'edited' WHERE id = 1",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  const std::string path = sub + "/run.db";
  std::filesystem::copy_file(source, path);
  std::filesystem::copy_file(source + "-wal", path + "-wal");
  sqlite3_close(db);
  chmod(path.c_str(), 0444);
  chmod((path + "-wal").c_str(), 0444);
  chmod(sub.c_str(), 0555);
  chmod(dir.path().c_str(), 0755);
  const std::string out = AsUnprivileged([&] { return OpenAndCountSteps(path); });
  EXPECT_NE(out.find("holds commits not yet copied"), std::string::npos) << out;
  EXPECT_NE(out.find("copy the run file with its -wal"), std::string::npos) << out;
  chmod(sub.c_str(), 0755);
}

}  // namespace
}  // namespace shardscope::store

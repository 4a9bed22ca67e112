// RunDocument on a run being recorded: its refreshes leave the log free (no read transaction
// or connection kept between them), so the writer checkpoints and, when the run ends, switches
// the file back out of WAL mode while the document is open.
#include "shardscope/viewer/run_document.h"

#include <sqlite3.h>

#include <gtest/gtest.h>

#include <fstream>

#include "shardscope/store/writer.h"
#include "temp_file.h"

namespace shardscope::viewer {
namespace {

int JournalByte(const std::string& path) {  // SQLite header byte 18: 2 = WAL, 1 = rollback
  std::ifstream in(path, std::ios::binary);
  char header[20] = {};
  in.read(header, sizeof(header));
  return header[18];
}

store::StepRecord Step(int64_t n) {
  store::StepRecord s;
  s.step = n;
  s.loss = 1.0 / static_cast<double>(n + 1);
  s.seconds = 0.01;
  for (int64_t r = 0; r < 64; ++r) s.ranks.push_back({r, 0.004, 0.001, 10, 20, 1, 2, 3, 4, 10});
  return s;
}

// A checkpoint from another connection copies every committed frame of the log into the
// file only when no reader holds an older snapshot of it.
bool LogCanBeCopied(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return false;
  int log = -1, copied = -2;
  const int rc = sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_PASSIVE, &log, &copied);
  sqlite3_close(db);
  return rc == SQLITE_OK && log == copied;
}

TEST(RunDocumentTest, LiveRefreshesKeepNoTransactionAndTheEndLeavesWalMode) {
  testing::TempPath path("live.db");
  store::RunInfo info;
  info.name = "live";
  info.devices = 64;
  auto writer = store::RunWriter::Create(path.path(), info);
  ASSERT_TRUE(writer.ok()) << writer.status().message();
  ASSERT_TRUE((*writer)->AddStep(Step(0)).ok());
  ASSERT_TRUE((*writer)->Commit().ok());
  auto doc = RunDocument::Open(path.path());
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_TRUE((*doc)->live());
  for (int64_t n = 1; n <= 20; ++n) {
    ASSERT_TRUE((*writer)->AddStep(Step(n)).ok());
    ASSERT_TRUE((*writer)->Commit().ok());
    ASSERT_TRUE((*doc)->Reload().ok());
    EXPECT_EQ((*doc)->data().steps.size(), static_cast<size_t>(n + 1));
    EXPECT_TRUE(LogCanBeCopied(path.path())) << "after refresh " << n;
  }
  EXPECT_NE((*doc)->Summary().find("live"), std::string::npos);
  ASSERT_TRUE((*writer)->Finish(store::RunStatus::kCompleted).ok());
  EXPECT_EQ(JournalByte(path.path()), 1) << "the finished run stayed in WAL mode";
  ASSERT_TRUE((*doc)->Reload().ok());
  EXPECT_FALSE((*doc)->live());
  EXPECT_EQ((*doc)->data().run.status, store::RunStatus::kCompleted);
}

}  // namespace
}  // namespace shardscope::viewer

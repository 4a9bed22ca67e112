// Files that are not run files, or damaged ones, are refused with a message naming the file
// and the reason; random byte flips and truncations never crash the reader.
#include <sqlite3.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "sample_run.h"
#include "shardscope/store/reader.h"
#include "shardscope/store/writer.h"
#include "temp_dir.h"

namespace shardscope::store {
namespace {

using testing::TempDir;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void RemoveSideFiles(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"-wal", "-shm", "-journal", ".lock"}) {
    std::filesystem::remove(path + suffix, ec);
  }
}

// A finished sample run; returns its bytes.
std::string MakeRunFile(const std::string& path, int page_size = 0) {
  RunWriterOptions options;
  options.page_size = page_size;
  options.overwrite = true;
  auto w = RunWriter::Create(path, testing::SampleRunInfo(), options);
  EXPECT_TRUE(w.ok()) << w.status().message();
  if (!w.ok()) return {};
  EXPECT_TRUE(testing::WriteSample(**w, testing::MakeSampleRun()).ok());
  EXPECT_TRUE((*w)->Finish(RunStatus::kCompleted).ok());
  return ReadFile(path);
}

// Runs SQL on a file with plain SQLite (to damage it on purpose).
void Sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

void ExpectRefused(const std::string& path, StatusCode code, const std::string& reason) {
  auto reader = RunReader::Open(path);
  ASSERT_FALSE(reader.ok()) << path;
  EXPECT_EQ(reader.status().code(), code) << reader.status().message();
  EXPECT_TRUE(Contains(reader.status().message(), path)) << reader.status().message();
  EXPECT_TRUE(Contains(reader.status().message(), reason)) << reader.status().message();
}

TEST(CorruptFile, NotRunFiles) {
  TempDir dir;
  ExpectRefused(dir.File("missing.db"), StatusCode::kNotFound, "no such run file");
  ExpectRefused(dir.path(), StatusCode::kNotARunFile, "a directory");
  WriteFile(dir.File("empty.db"), "");
  ExpectRefused(dir.File("empty.db"), StatusCode::kNotARunFile, "an empty file");
  WriteFile(dir.File("text.db"), std::string(5000, 'a') + "\nhello, this is text\n");
  ExpectRefused(dir.File("text.db"), StatusCode::kNotARunFile, "not an SQLite database");
  WriteFile(dir.File("short.db"), "SQLite format 3");
  ExpectRefused(dir.File("short.db"), StatusCode::kNotARunFile, "not a Shardscope run file");
  Sql(dir.File("other.db"), "CREATE TABLE t(x); INSERT INTO t VALUES (1);");
  ExpectRefused(dir.File("other.db"), StatusCode::kNotARunFile, "another application");
  Sql(dir.File("blank.db"), "PRAGMA user_version = 1; CREATE TABLE t(x); DROP TABLE t;");
  ExpectRefused(dir.File("blank.db"), StatusCode::kNotARunFile, "an empty SQLite database");
}

TEST(CorruptFile, NewerSchemaVersionIsRefused) {
  TempDir dir;
  const std::string path = dir.File("new.db");
  MakeRunFile(path);
  Sql(path, "PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  ExpectRefused(path, StatusCode::kTooNew, "written by a newer Shardscope");
  ExpectRefused(path, StatusCode::kTooNew, "schema version " + std::to_string(kSchemaVersion + 1));
  Sql(path, "PRAGMA user_version = 0");
  ExpectRefused(path, StatusCode::kCorrupt, "schema version 0");
}

TEST(CorruptFile, MissingOrChangedTables) {
  TempDir dir;
  const std::string path = dir.File("run.db");
  MakeRunFile(path);
  Sql(path, "DROP TABLE event");
  ExpectRefused(path, StatusCode::kCorrupt, "table 'event' is missing");
  Sql(path, "CREATE VIEW event AS SELECT 1 AS id");
  ExpectRefused(path, StatusCode::kCorrupt, "table 'event' is missing");  // a view is not it

  MakeRunFile(path);
  Sql(path, "DROP TABLE step; CREATE TABLE step (step INTEGER PRIMARY KEY)");
  ExpectRefused(path, StatusCode::kCorrupt,
                "do not match schema version " + std::to_string(kSchemaVersion));

  MakeRunFile(path);
  Sql(path, "DELETE FROM run");
  ExpectRefused(path, StatusCode::kCorrupt, "the run table is empty");
}

TEST(CorruptFile, DamagedValuesAreReportedByTheirAccessor) {
  TempDir dir;
  const std::string path = dir.File("run.db");
  MakeRunFile(path);
  Sql(path,
      "UPDATE mesh SET shape = '[2, 2' WHERE id = 0;"
      "UPDATE redist_step SET rank_groups = '[[0,1],[2,\"x\"]]' WHERE ordinal = 1;"
      "UPDATE tensor SET shape = '[99999999999999999999]' WHERE id = 2;"
      "UPDATE step SET loss = 'abc', epoch = 'zz' WHERE step = 0;");
  auto reader = RunReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto meshes = (*reader)->Meshes();
  ASSERT_FALSE(meshes.ok());
  EXPECT_EQ(meshes.status().code(), StatusCode::kCorrupt);
  EXPECT_TRUE(Contains(meshes.status().message(), "table 'mesh' row 0: column 'shape'"))
      << meshes.status().message();
  auto redists = (*reader)->Redistributions();
  ASSERT_FALSE(redists.ok());
  EXPECT_TRUE(Contains(redists.status().message(), "'rank_groups'"));
  EXPECT_FALSE((*reader)->Tensors().ok());   // integer overflow in the shape
  EXPECT_TRUE((*reader)->Operators().ok());  // the rest reads
  // Text in a number column: SQLite would read 0, a wrong figure; it is damage.
  auto steps = (*reader)->Steps();
  ASSERT_FALSE(steps.ok());
  EXPECT_EQ(steps.status().code(), StatusCode::kCorrupt);
  EXPECT_TRUE(Contains(steps.status().message(), "holds text where a number belongs"))
      << steps.status().message();
  EXPECT_FALSE(FormatRunSummary(**reader).ok());
  EXPECT_GT(testing::ReadEverything(**reader), 0);

  Sql(path, "PRAGMA ignore_check_constraints = 1; UPDATE run SET status = 'exploded'");
  reader = RunReader::Open(path);
  ASSERT_FALSE(reader.ok());
  EXPECT_TRUE(Contains(reader.status().message(), "unknown run status 'exploded'"));
}

// Opens `path`; when it opens, reads everything. Returns -1 when refused, else how many
// accessors reported an error.
int OpenAndReadAll(const std::string& path) {
  auto reader = RunReader::Open(path);
  if (!reader.ok()) {
    EXPECT_TRUE(Contains(reader.status().message(), path)) << reader.status().message();
    EXPECT_NE(reader.status().code(), StatusCode::kInternal) << reader.status().message();
    return -1;
  }
  return testing::ReadEverything(**reader);
}

TEST(CorruptFile, RandomByteFlipsNeverCrash) {
  TempDir dir;
  const std::string original = MakeRunFile(dir.File("good.db"), /*page_size=*/1024);
  ASSERT_FALSE(original.empty());
  const std::string path = dir.File("flipped.db");
  std::mt19937_64 rng(20240501);
  int opened = 0, refused = 0;
  for (int iteration = 0; iteration < 400; ++iteration) {
    std::string bytes = original;
    const int flips = 1 + static_cast<int>(rng() % 16);
    for (int f = 0; f < flips; ++f) {
      // Half the flips hit the first pages (header, schema, roots), where damage matters most.
      const size_t limit = (rng() % 2) ? std::min<size_t>(bytes.size(), 4096) : bytes.size();
      bytes[rng() % limit] ^= static_cast<char>(1 + rng() % 255);
    }
    RemoveSideFiles(path);
    WriteFile(path, bytes);
    (OpenAndReadAll(path) >= 0 ? opened : refused)++;
  }
  EXPECT_GT(opened, 0);
  EXPECT_GT(refused, 0);
}

TEST(CorruptFile, TruncationNeverCrashes) {
  TempDir dir;
  const std::string original = MakeRunFile(dir.File("good.db"), /*page_size=*/1024);
  ASSERT_FALSE(original.empty());
  const std::string path = dir.File("truncated.db");
  for (size_t length = 0; length < original.size(); length += 97) {
    RemoveSideFiles(path);
    WriteFile(path, original.substr(0, length));
    // Refused at open, or the damage is reported (by Check() at the latest: it reads every
    // page). Never silently incomplete, never a crash.
    const int result = OpenAndReadAll(path);
    EXPECT_TRUE(result == -1 || result > 0) << "truncated to " << length << " bytes";
    if (length < 100) {
      EXPECT_EQ(result, -1) << length;
    }
  }
}

TEST(CorruptFile, DamagedLogOfACrashedRun) {
  // A writer killed mid-run leaves its log (-wal); a torn or damaged log reads as a prefix of
  // the commits, never as garbage.
  TempDir dir;
  const std::string path = dir.File("run.db");
  {
    auto w = RunWriter::Create(path, testing::SampleRunInfo());
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(testing::WriteSample(**w, testing::MakeSampleRun(40)).ok());
    // Keep the log: copy the files while the writer is open.
    std::filesystem::copy_file(path, dir.File("crashed.db"));
    std::filesystem::copy_file(path + "-wal", dir.File("crashed.db-wal"));
    ASSERT_TRUE((*w)->Finish(RunStatus::kCompleted).ok());
  }
  const std::string db = ReadFile(dir.File("crashed.db"));
  const std::string wal = ReadFile(dir.File("crashed.db-wal"));
  ASSERT_GT(wal.size(), 1000u);
  const std::string copy = dir.File("copy.db");
  std::mt19937_64 rng(7);
  size_t previous_steps = 0;
  std::vector<size_t> lengths;
  for (size_t length = 0; length < wal.size(); length += wal.size() / 50 + 1) {
    lengths.push_back(length);
  }
  lengths.push_back(wal.size());
  for (size_t length : lengths) {
    RemoveSideFiles(copy);
    WriteFile(copy, db);
    WriteFile(copy + "-wal", wal.substr(0, length));
    auto reader = RunReader::Open(copy);
    if (!reader.ok()) continue;  // the log's first commit holds the schema
    auto steps = (*reader)->Steps();
    ASSERT_TRUE(steps.ok()) << steps.status().message();
    EXPECT_GE(steps->size(), previous_steps);  // a longer log never shows fewer commits
    previous_steps = steps->size();
    EXPECT_EQ((*reader)->Run()->status, RunStatus::kInterrupted);
  }
  EXPECT_EQ(previous_steps, 40u);
  for (int iteration = 0; iteration < 60; ++iteration) {
    RemoveSideFiles(copy);
    WriteFile(copy, db);
    std::string damaged = wal;
    for (int f = 0; f < 4; ++f) damaged[rng() % damaged.size()] ^= 0x5a;
    WriteFile(copy + "-wal", damaged);
    if (iteration % 2) WriteFile(copy + "-shm", std::string(32768, static_cast<char>(rng())));
    (void)OpenAndReadAll(copy);
  }
}

}  // namespace
}  // namespace shardscope::store

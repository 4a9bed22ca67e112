// The schema as a list of migrations: applied in order, each with its user_version, all or
// nothing; an older file is read through an upgraded in-memory copy and never modified.
#include <sqlite3.h>

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "columns.h"
#include "schema.h"
#include "shardscope/store/reader.h"
#include "shardscope/store/records.h"
#include "sqlite_util.h"
#include "temp_dir.h"

namespace shardscope::store {
namespace {

using internal::Migration;

int64_t UserVersion(sqlite3* db) {
  return internal::QueryInt(db, "PRAGMA user_version", "db", "test").value();
}

bool HasColumn(sqlite3* db, const std::string& table, const std::string& column) {
  internal::Stmt s;
  if (s.Prepare(db, "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2") != SQLITE_OK) {
    return false;
  }
  s.BindText(1, table);
  s.BindText(2, column);
  return s.Step() == SQLITE_ROW && s.Int(0) == 1;
}

constexpr Migration kTestMigrations[] = {
    {1, "create a", "CREATE TABLE a (x INTEGER); INSERT INTO a VALUES (1);"},
    {2, "add a.y", "ALTER TABLE a ADD COLUMN y TEXT NOT NULL DEFAULT 'new';"},
};

TEST(Migrations, ThisBuildHasOnePerVersion) {
  auto migrations = internal::Migrations();
  ASSERT_EQ(static_cast<int>(migrations.size()), kSchemaVersion);
  for (size_t i = 0; i < migrations.size(); ++i) {
    EXPECT_EQ(migrations[i].to_version, static_cast<int>(i) + 1);
    EXPECT_FALSE(migrations[i].summary.empty());
  }
}

TEST(Migrations, AppliedInOrderFromAnyVersion) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  ASSERT_TRUE(internal::ApplyMigrations(db, 0, std::span(kTestMigrations).first(1), "db").ok());
  EXPECT_EQ(UserVersion(db), 1);
  EXPECT_FALSE(HasColumn(db, "a", "y"));
  ASSERT_TRUE(internal::ApplyMigrations(db, 1, kTestMigrations, "db").ok());
  EXPECT_EQ(UserVersion(db), 2);
  EXPECT_TRUE(HasColumn(db, "a", "y"));
  EXPECT_EQ(internal::QueryInt(db, "SELECT count(*) FROM a WHERE y = 'new'", "db", "t").value(), 1);
  sqlite3_close(db);
}

TEST(Migrations, AFailingMigrationChangesNothing) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  ASSERT_TRUE(internal::ApplyMigrations(db, 0, kTestMigrations, "db").ok());
  constexpr Migration kBroken[] = {
      {3, "broken", "CREATE TABLE b (x); INSERT INTO nowhere VALUES (1);"}};
  Status st = internal::ApplyMigrations(db, 2, kBroken, "runs/x.db");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("runs/x.db: upgrading the schema to version 3"), std::string::npos)
      << st.message();
  EXPECT_EQ(UserVersion(db), 2);
  EXPECT_EQ(internal::QueryInt(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'b'", "db", "t")
                .value(),
            0);
  sqlite3_close(db);
}

TEST(Migrations, OlderFileIsUpgradedInACopy) {
  testing::TempDir dir;
  const std::string path = dir.File("old.db");
  sqlite3* file = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &file), SQLITE_OK);
  ASSERT_TRUE(internal::Exec(file, "PRAGMA journal_mode = WAL", path, "t").ok());
  ASSERT_TRUE(internal::ApplyMigrations(file, 0, std::span(kTestMigrations).first(1), path).ok());
  sqlite3_close(file);

  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &file, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto copy = internal::MigratedCopy(file, 1, kTestMigrations, path);
  ASSERT_TRUE(copy.ok()) << copy.status().message();
  EXPECT_EQ(UserVersion(*copy), 2);
  EXPECT_TRUE(HasColumn(*copy, "a", "y"));
  EXPECT_EQ(UserVersion(file), 1);  // the file is untouched
  EXPECT_FALSE(HasColumn(file, "a", "y"));
  sqlite3_close(*copy);
  sqlite3_close(file);
}

TEST(Migrations, CurrentSchemaHasEveryRequiredTable) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  ASSERT_TRUE(internal::ApplyMigrations(db, 0, internal::Migrations(), "db").ok());
  EXPECT_TRUE(internal::CheckTables(db, internal::RequiredTables(), "db").ok());
  EXPECT_EQ(UserVersion(db), kSchemaVersion);
  sqlite3_close(db);
}

// The column lists the writer inserts and the reader selects (columns.h) are exactly the
// columns the migrations create, table by table, and every table is listed.
TEST(Migrations, ColumnListsMatchTheMigratedSchema) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  ASSERT_TRUE(internal::ApplyMigrations(db, 0, internal::Migrations(), "db").ok());
  std::set<std::string> listed_tables;
  for (const internal::Table& t : internal::kTables) {
    const std::string name(t.name);
    listed_tables.insert(name);
    std::set<std::string> listed(t.columns.begin(), t.columns.end());
    EXPECT_EQ(listed.size(), t.columns.size()) << name << ": a column listed twice";
    internal::Stmt s;
    ASSERT_EQ(s.Prepare(db, "SELECT name FROM pragma_table_info(?1)"), SQLITE_OK);
    s.BindText(1, name);
    std::set<std::string> created;
    while (s.Step() == SQLITE_ROW) created.insert(s.Text(0));
    EXPECT_EQ(listed, created) << name;
    if (t.generated_id) {
      EXPECT_EQ(t.columns.front(), "id") << name;
    }
  }
  internal::Stmt tables;
  ASSERT_EQ(tables.Prepare(db, "SELECT name FROM sqlite_schema WHERE type = 'table'"), SQLITE_OK);
  std::set<std::string> created_tables;
  while (tables.Step() == SQLITE_ROW) created_tables.insert(tables.Text(0));
  EXPECT_EQ(listed_tables, created_tables);
  EXPECT_EQ(internal::InsertSql(internal::kEventTable),
            "INSERT INTO event (time, level, step, rank, source, message) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  EXPECT_EQ(internal::SelectSql(internal::kProgramTable, "ORDER BY rank"),
            "SELECT rank, role, listing FROM program ORDER BY rank");
  tables = internal::Stmt();
  sqlite3_close(db);
}

// A run file of version 2 (before the step meshes, the ranks' wall times and the runners-up's
// breakdowns) opens; what it never recorded reads as not recorded, not as zero.
TEST(Migrations, AVersion2FileReadsWithoutTheNewFigures) {
  testing::TempDir dir;
  const std::string path = dir.File("v2.db");
  sqlite3* file = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &file), SQLITE_OK);
  const std::string app = "PRAGMA application_id = " + std::to_string(kApplicationId);
  ASSERT_TRUE(internal::Exec(file, app, path, "t").ok());
  ASSERT_TRUE(internal::ApplyMigrations(file, 0, internal::Migrations().first(2), path).ok());
  ASSERT_TRUE(internal::Exec(file, R"sql(
    INSERT INTO run (id, name, status) VALUES (1, 'old', 'completed');
    INSERT INTO mesh (id, name, shape, axis_names) VALUES (0, 'mesh(a=2,b=4)', '[2,4]', '["a","b"]');
    INSERT INTO operator (id, name, mesh_id, strategy) VALUES (0, 'mm', 0, '((2,4),(4,1))');
    INSERT INTO candidate VALUES (0, 0, '((2,4),(4,1))', 1.0, 0.5, 0.5, 64, 'chosen');
    INSERT INTO candidate VALUES (0, 1, '((8,1),(1,1))', 2.0, 0, 0, 0, 'runner-up');
    INSERT INTO tensor (id, name, shape) VALUES (0, 't', '[8,8]');
    INSERT INTO redistribution (id, tensor_id, from_layout, from_mesh_id, to_layout, to_mesh_id,
                                plan_mesh_id) VALUES (0, 0, '[a | b]', 0, '[a.b | -]', 0, 0);
    INSERT INTO redist_step (redistribution_id, ordinal, kind, rank_groups, layout_after)
      VALUES (0, 0, 'all-to-all', '[[0,1,2,3],[4,5,6,7]]', '[a.b | -]');
    INSERT INTO step (step, seconds) VALUES (1, 0.01);
    INSERT INTO rank_step (step, rank, compute_seconds, comm_seconds) VALUES (1, 0, 0.004, 0.003);
  )sql",
                             path, "t")
                  .ok());
  sqlite3_close(file);

  auto reader = RunReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  EXPECT_TRUE((*reader)->migrated());
  auto ops = (*reader)->Operators();
  ASSERT_TRUE(ops.ok());
  ASSERT_EQ(ops->front().candidates.size(), 2u);
  EXPECT_TRUE(ops->front().candidates[0].has_breakdown());
  EXPECT_EQ(ops->front().candidates[0].memory_bytes, 64);
  EXPECT_FALSE(ops->front().candidates[1].has_breakdown());
  EXPECT_EQ(ops->front().candidates[1].memory_bytes, kNone);
  auto redists = (*reader)->Redistributions();
  ASSERT_TRUE(redists.ok());
  const RedistStepRecord& step = redists->front().steps.front();
  EXPECT_EQ(step.mesh_id, kNone);
  EXPECT_EQ(step.groups.Expand(), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  auto steps = (*reader)->Steps(1, 1, /*with_ranks=*/true);
  ASSERT_TRUE(steps.ok());
  EXPECT_TRUE(std::isnan(steps->front().ranks.front().wall_seconds));
  reader->reset();
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &file, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  EXPECT_EQ(UserVersion(file), 2);  // the file is untouched
  sqlite3_close(file);
}

}  // namespace
}  // namespace shardscope::store

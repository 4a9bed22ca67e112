#include "schema.h"

#include <cstdio>
#include <iterator>
#include <set>

#include "columns.h"
#include "shardscope/store/records.h"
#include "sqlite_util.h"

namespace shardscope::store::internal {
namespace {

// Version 1. docs/run-format.md documents every column; keep the two in step.
// REAL columns are nullable: NULL is how a NaN reads back. References to ids of other tables
// are foreign keys checked at commit (DEFERRABLE INITIALLY DEFERRED); every referencing
// column of a table with many rows has an index, so that a parent row added after its
// children is matched by an index lookup, not a scan.
constexpr std::string_view kSchemaV1 = R"sql(
CREATE TABLE run (
  id                 INTEGER PRIMARY KEY CHECK (id = 1),
  name               TEXT    NOT NULL DEFAULT '',
  mode               TEXT    NOT NULL DEFAULT '',
  search             TEXT    NOT NULL DEFAULT '',
  devices            INTEGER NOT NULL DEFAULT 1,
  backend            TEXT    NOT NULL DEFAULT '',
  model_path         TEXT    NOT NULL DEFAULT '',
  model_text         TEXT    NOT NULL DEFAULT '',
  config             TEXT    NOT NULL DEFAULT '{}',
  command_line       TEXT    NOT NULL DEFAULT '',
  shardscope_version TEXT    NOT NULL DEFAULT '',
  versions           TEXT    NOT NULL DEFAULT '{}',
  status             TEXT    NOT NULL DEFAULT 'running'
                     CHECK (status IN ('running', 'completed', 'failed', 'interrupted')),
  status_message     TEXT    NOT NULL DEFAULT '',
  started_at         REAL,
  updated_at         REAL,
  ended_at           REAL,
  writer_pid         INTEGER,
  writer_host        TEXT    NOT NULL DEFAULT ''
);

CREATE TABLE mesh (
  id         INTEGER PRIMARY KEY,
  name       TEXT NOT NULL DEFAULT '',
  shape      TEXT NOT NULL DEFAULT '[]',
  axis_names TEXT NOT NULL DEFAULT '[]',
  ranks      TEXT NOT NULL DEFAULT '[]'
);

CREATE TABLE operator (
  id                INTEGER PRIMARY KEY,
  name              TEXT    NOT NULL,
  scope             TEXT    NOT NULL DEFAULT '',
  kind              TEXT    NOT NULL DEFAULT '',
  is_backward       INTEGER NOT NULL DEFAULT 0,
  forward_id        INTEGER REFERENCES operator(id) DEFERRABLE INITIALLY DEFERRED,
  mesh_id           INTEGER REFERENCES mesh(id) DEFERRABLE INITIALLY DEFERRED,
  strategy          TEXT    NOT NULL DEFAULT '',
  provenance        TEXT    NOT NULL DEFAULT '',
  provenance_detail TEXT    NOT NULL DEFAULT '',
  provenance_op     INTEGER REFERENCES operator(id) DEFERRABLE INITIALLY DEFERRED,
  search_round      INTEGER,
  cost              REAL,
  worker            INTEGER,
  attrs             TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX operator_by_name ON operator(name);
CREATE INDEX operator_by_scope ON operator(scope);
CREATE INDEX operator_by_forward ON operator(forward_id);
CREATE INDEX operator_by_provenance ON operator(provenance_op);

CREATE TABLE candidate (
  op_id           INTEGER NOT NULL REFERENCES operator(id) DEFERRABLE INITIALLY DEFERRED,
  ordinal         INTEGER NOT NULL,
  strategy        TEXT    NOT NULL DEFAULT '',
  cost            REAL,
  compute_seconds REAL,
  comm_seconds    REAL,
  memory_bytes    INTEGER NOT NULL DEFAULT 0,
  note            TEXT    NOT NULL DEFAULT '',
  PRIMARY KEY (op_id, ordinal)
) WITHOUT ROWID;

CREATE TABLE tensor (
  id              INTEGER PRIMARY KEY,
  name            TEXT    NOT NULL DEFAULT '',
  shape           TEXT    NOT NULL DEFAULT '[]',
  dtype           TEXT    NOT NULL DEFAULT '',
  kind            TEXT    NOT NULL DEFAULT '',
  producer_op     INTEGER REFERENCES operator(id) DEFERRABLE INITIALLY DEFERRED,
  producer_output INTEGER NOT NULL DEFAULT 0,
  layout          TEXT    NOT NULL DEFAULT '',
  mesh_id         INTEGER REFERENCES mesh(id) DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX tensor_by_producer ON tensor(producer_op);

CREATE TABLE edge (
  dst_op     INTEGER NOT NULL REFERENCES operator(id) DEFERRABLE INITIALLY DEFERRED,
  dst_input  INTEGER NOT NULL,
  tensor_id  INTEGER NOT NULL REFERENCES tensor(id) DEFERRABLE INITIALLY DEFERRED,
  src_op     INTEGER REFERENCES operator(id) DEFERRABLE INITIALLY DEFERRED,
  src_output INTEGER NOT NULL DEFAULT 0,
  layout     TEXT    NOT NULL DEFAULT '',
  mesh_id    INTEGER REFERENCES mesh(id) DEFERRABLE INITIALLY DEFERRED,
  PRIMARY KEY (dst_op, dst_input)
) WITHOUT ROWID;
CREATE INDEX edge_by_src ON edge(src_op);
CREATE INDEX edge_by_tensor ON edge(tensor_id);

CREATE TABLE redistribution (
  id                   INTEGER PRIMARY KEY,
  tensor_id            INTEGER REFERENCES tensor(id) DEFERRABLE INITIALLY DEFERRED,
  consumer_op          INTEGER REFERENCES operator(id) DEFERRABLE INITIALLY DEFERRED,
  consumer_input       INTEGER,
  is_backward          INTEGER NOT NULL DEFAULT 0,
  from_layout          TEXT    NOT NULL DEFAULT '',
  from_mesh_id         INTEGER REFERENCES mesh(id) DEFERRABLE INITIALLY DEFERRED,
  to_layout            TEXT    NOT NULL DEFAULT '',
  to_mesh_id           INTEGER REFERENCES mesh(id) DEFERRABLE INITIALLY DEFERRED,
  plan_mesh_id         INTEGER REFERENCES mesh(id) DEFERRABLE INITIALLY DEFERRED,
  reason               TEXT    NOT NULL DEFAULT '',
  bytes                INTEGER NOT NULL DEFAULT 0,
  lower_bound_bytes    INTEGER NOT NULL DEFAULT 0,
  bytes_total          INTEGER NOT NULL DEFAULT 0,
  lower_bound_total    INTEGER NOT NULL DEFAULT 0,
  lower_bound_per_rank TEXT    NOT NULL DEFAULT '[]',
  byte_optimal         INTEGER NOT NULL DEFAULT 1,
  predicted_seconds    REAL
);
CREATE INDEX redistribution_by_consumer ON redistribution(consumer_op, consumer_input);
CREATE INDEX redistribution_by_tensor ON redistribution(tensor_id);

CREATE TABLE redist_step (
  redistribution_id INTEGER NOT NULL
                    REFERENCES redistribution(id) DEFERRABLE INITIALLY DEFERRED,
  ordinal           INTEGER NOT NULL,
  kind              TEXT    NOT NULL DEFAULT '',
  axes              TEXT    NOT NULL DEFAULT '[]',
  axis_names        TEXT    NOT NULL DEFAULT '[]',
  dim               INTEGER NOT NULL DEFAULT -1,
  dim_to            INTEGER NOT NULL DEFAULT -1,
  rank_groups       TEXT    NOT NULL DEFAULT '[]',
  bytes_sent_max    INTEGER NOT NULL DEFAULT 0,
  bytes_recv_max    INTEGER NOT NULL DEFAULT 0,
  bytes_sent        TEXT    NOT NULL DEFAULT '[]',
  bytes_recv        TEXT    NOT NULL DEFAULT '[]',
  messages          INTEGER NOT NULL DEFAULT 0,
  seconds           REAL,
  layout_after      TEXT    NOT NULL DEFAULT '',
  reason            TEXT    NOT NULL DEFAULT '',
  transfers         TEXT    NOT NULL DEFAULT '[]',
  zero_ranks        TEXT    NOT NULL DEFAULT '[]',
  PRIMARY KEY (redistribution_id, ordinal)
) WITHOUT ROWID;

CREATE TABLE program (
  rank    INTEGER PRIMARY KEY,
  role    TEXT NOT NULL DEFAULT '',
  listing TEXT NOT NULL DEFAULT ''
);

CREATE TABLE instruction (
  rank              INTEGER NOT NULL REFERENCES program(rank) DEFERRABLE INITIALLY DEFERRED,
  ordinal           INTEGER NOT NULL,
  kind              TEXT    NOT NULL DEFAULT '',
  op_id             INTEGER,
  redistribution_id INTEGER,
  tensor_id         INTEGER,
  peer              INTEGER,
  bytes             INTEGER NOT NULL DEFAULT 0,
  text              TEXT    NOT NULL DEFAULT '',
  PRIMARY KEY (rank, ordinal)
) WITHOUT ROWID;
CREATE INDEX instruction_by_op ON instruction(op_id);

CREATE TABLE send_recv (
  id          INTEGER PRIMARY KEY,
  tensor_id   INTEGER,
  src_rank    INTEGER NOT NULL DEFAULT 0,
  dst_rank    INTEGER NOT NULL DEFAULT 0,
  src_op      INTEGER,
  dst_op      INTEGER,
  bytes       INTEGER NOT NULL DEFAULT 0,
  is_backward INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE step (
  step    INTEGER PRIMARY KEY,
  epoch   INTEGER NOT NULL DEFAULT 0,
  loss    REAL,
  seconds REAL,
  time    REAL
);

CREATE TABLE rank_step (
  step             INTEGER NOT NULL REFERENCES step(step) DEFERRABLE INITIALLY DEFERRED,
  rank             INTEGER NOT NULL,
  compute_seconds  REAL,
  comm_seconds     REAL,
  bytes_sent       INTEGER NOT NULL DEFAULT 0,
  bytes_recv       INTEGER NOT NULL DEFAULT 0,
  param_bytes      INTEGER NOT NULL DEFAULT 0,
  grad_bytes       INTEGER NOT NULL DEFAULT 0,
  optimizer_bytes  INTEGER NOT NULL DEFAULT 0,
  activation_bytes INTEGER NOT NULL DEFAULT 0,
  peak_bytes       INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (step, rank)
) WITHOUT ROWID;

CREATE TABLE evaluation (
  id       INTEGER PRIMARY KEY,
  step     INTEGER NOT NULL DEFAULT 0,
  epoch    INTEGER NOT NULL DEFAULT 0,
  name     TEXT    NOT NULL DEFAULT '',
  loss     REAL,
  accuracy REAL,
  samples  INTEGER NOT NULL DEFAULT 0,
  seconds  REAL,
  time     REAL
);
CREATE INDEX evaluation_by_step ON evaluation(step);

CREATE TABLE event (
  id      INTEGER PRIMARY KEY,
  time    REAL,
  level   TEXT NOT NULL DEFAULT 'info',
  step    INTEGER,
  rank    INTEGER,
  source  TEXT NOT NULL DEFAULT '',
  message TEXT NOT NULL DEFAULT ''
);
CREATE INDEX event_by_step ON event(step);
)sql";

// Version 2: the pipeline timeline of placed runs (issue 8).
constexpr const char* kSchemaV2 = R"sql(
CREATE TABLE pipeline_span (
  step            INTEGER NOT NULL,
  rank            INTEGER NOT NULL,
  micro_batch     INTEGER NOT NULL,
  phase           TEXT    NOT NULL,
  start_seconds   REAL,
  end_seconds     REAL,
  compute_seconds REAL,
  idle_seconds    REAL,
  PRIMARY KEY (step, rank, micro_batch, phase)
) WITHOUT ROWID;
)sql";

// Version 3 (issue 17): the mesh of each redistribution step's layout; each rank's wall time
// of a training step (the step's time is the slowest rank's); runners-up whose breakdown was
// never recorded (older files wrote zeros) read as not recorded. Rank groups and transfers
// may be patterns (JSON objects) instead of lists: text either way, no column change.
constexpr const char* kSchemaV3 = R"sql(
ALTER TABLE redist_step ADD COLUMN mesh_id INTEGER
  REFERENCES mesh(id) DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE rank_step ADD COLUMN wall_seconds REAL;
UPDATE candidate SET compute_seconds = NULL, comm_seconds = NULL, memory_bytes = -1
  WHERE note = 'runner-up' AND compute_seconds = 0 AND comm_seconds = 0 AND memory_bytes = 0;
)sql";

// Version 4 (issue 21): per-instruction timing of SPMD runs for a sample of steps.
constexpr const char* kSchemaV4 = R"sql(
CREATE TABLE instruction_span (
  step          INTEGER NOT NULL,
  rank          INTEGER NOT NULL,
  ordinal       INTEGER NOT NULL,
  part          INTEGER NOT NULL,
  kind          TEXT    NOT NULL,
  start_seconds REAL,
  end_seconds   REAL,
  PRIMARY KEY (step, rank, ordinal, part)
) WITHOUT ROWID;
)sql";

constexpr Migration kMigrations[] = {
    {1, "initial schema: run, meshes, graph, strategies, redistributions, partition, training",
     kSchemaV1},
    {2, "pipeline timeline: pipeline_span", kSchemaV2},
    {3, "redist_step.mesh_id, rank_step.wall_seconds, runners-up without a breakdown", kSchemaV3},
    {4, "per-instruction timing: instruction_span", kSchemaV4},
};
static_assert(std::size(kMigrations) == kSchemaVersion, "one migration per schema version");

}  // namespace

std::span<const Migration> Migrations() { return kMigrations; }

const std::vector<std::string>& RequiredTables() {
  static const std::vector<std::string> tables = [] {
    std::vector<std::string> names;
    for (const Table& t : kTables) names.emplace_back(t.name);
    return names;
  }();
  return tables;
}

Status ApplyMigrations(sqlite3* db, int from_version, std::span<const Migration> migrations,
                       const std::string& path) {
  for (const Migration& m : migrations) {
    if (m.to_version <= from_version) continue;
    const std::string what = "upgrading the schema to version " + std::to_string(m.to_version);
    Status st = Exec(db, "BEGIN IMMEDIATE", path, what);
    if (!st.ok()) return st;
    st = Exec(db, m.sql, path, what);
    if (st.ok()) {
      // PRAGMA takes no parameters; the version is this build's constant, not data.
      st = Exec(db, "PRAGMA user_version = " + std::to_string(m.to_version), path, what);
    }
    if (st.ok()) st = Exec(db, "COMMIT", path, what);
    if (!st.ok()) {
      if (sqlite3_get_autocommit(db) == 0) (void)Exec(db, "ROLLBACK", path, what);
      return st;
    }
  }
  return Status::Ok();
}

Result<sqlite3*> MigratedCopy(sqlite3* src, int from_version, std::span<const Migration> migrations,
                              const std::string& path) {
  sqlite3* mem = nullptr;
  int rc = sqlite3_open_v2(":memory:", &mem, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    Status st = SqliteError(mem, rc, path, "opening an in-memory copy");
    sqlite3_close(mem);
    return st;
  }
  sqlite3_backup* backup = sqlite3_backup_init(mem, "main", src, "main");
  if (backup == nullptr) {
    Status st = SqliteError(mem, sqlite3_errcode(mem), path, "copying an older run file");
    sqlite3_close(mem);
    return st;
  }
  rc = sqlite3_backup_step(backup, -1);
  sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) {
    Status st = SqliteCodeError(rc, path, "copying an older run file");
    sqlite3_close(mem);
    return st;
  }
  Status st = ApplyMigrations(mem, from_version, migrations, path);
  if (!st.ok()) {
    sqlite3_close(mem);
    return st;
  }
  return mem;
}

Status CheckTables(sqlite3* db, const std::vector<std::string>& tables, const std::string& path) {
  Stmt stmt;
  int rc = stmt.Prepare(db, "SELECT name, type FROM sqlite_schema");
  if (rc != SQLITE_OK) return SqliteError(db, rc, path, "reading the schema");
  std::set<std::string> found;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
    if (stmt.Text(1) == "table") found.insert(stmt.Text(0));
  }
  if (rc != SQLITE_DONE) return SqliteError(db, rc, path, "reading the schema");
  for (const std::string& table : tables) {
    if (!found.count(table)) {
      return Status(StatusCode::kCorrupt,
                    path + ": damaged run file: table '" + table + "' is missing");
    }
  }
  return Status::Ok();
}

Result<int> CheckRunFile(sqlite3* db, const std::string& path, int newest_version) {
  Result<int64_t> app = QueryInt(db, "PRAGMA application_id", path, "reading the file header");
  if (!app.ok()) {
    if (app.status().code() == StatusCode::kNotARunFile) {
      return Status(StatusCode::kNotARunFile,
                    path + ": not a Shardscope run file (not an SQLite database)");
    }
    return app.status();
  }
  if (*app != kApplicationId) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "application_id 0x%08llx, expected 0x%08x",
                  static_cast<unsigned long long>(static_cast<uint32_t>(*app)),
                  static_cast<unsigned>(kApplicationId));
    Result<int64_t> tables =
        QueryInt(db, "SELECT count(*) FROM sqlite_schema", path, "reading the schema");
    const bool empty = tables.ok() && *tables == 0 && *app == 0;
    return Status(StatusCode::kNotARunFile,
                  path + ": not a Shardscope run file (" +
                      (empty ? std::string("an empty SQLite database")
                             : "an SQLite database of another application: " + std::string(buf)) +
                      ")");
  }
  Result<int64_t> version = QueryInt(db, "PRAGMA user_version", path, "reading the file header");
  if (!version.ok()) return version.status();
  if (*version > newest_version) {
    return Status(StatusCode::kTooNew,
                  path + ": written by a newer Shardscope (run file schema version " +
                      std::to_string(*version) + "; this build reads versions 1 to " +
                      std::to_string(newest_version) + "): upgrade Shardscope to open it");
  }
  if (*version < 1) {
    return Status(StatusCode::kCorrupt, path + ": damaged run file: schema version " +
                                            std::to_string(*version) + " (expected 1 to " +
                                            std::to_string(newest_version) + ")");
  }
  return static_cast<int>(*version);
}

}  // namespace shardscope::store::internal

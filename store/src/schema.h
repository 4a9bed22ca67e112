// Internal: the run file's schema as an ordered list of migrations, and the checks a reader
// makes before trusting a file (docs/run-format.md, "Versions and migrations").
//
// Migration i takes a file from schema version i to i + 1 (version 0 is the empty file), so a
// new file is made by applying all of them, and an older file is brought up to date by
// applying those above its PRAGMA user_version. Each runs in its own transaction together
// with the user_version update: a file is always at exactly one version.
#pragma once

#include <sqlite3.h>

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "shardscope/store/status.h"

namespace shardscope::store::internal {

struct Migration {
  int to_version;            // the version the file is at afterwards
  std::string_view summary;  // one line, for docs and error messages
  std::string_view sql;      // statements, run in order
};

// The migrations of this build: kSchemaVersion of them.
std::span<const Migration> Migrations();

// The tables a run file of the current version holds (checked by the reader).
const std::vector<std::string>& RequiredTables();

// Applies the migrations whose to_version is above `from_version`, in order, each in a
// transaction with its PRAGMA user_version. `db` must not be in a transaction.
Status ApplyMigrations(sqlite3* db, int from_version, std::span<const Migration> migrations,
                       const std::string& path);

// Copies `src` (any journal mode, read-only is fine) into a new in-memory database and
// applies `migrations` above `from_version` to the copy. The caller owns the result.
Result<sqlite3*> MigratedCopy(sqlite3* src, int from_version, std::span<const Migration> migrations,
                              const std::string& path);

// Checks the header (application id, schema version) and the tables of an open run file.
// Returns the file's schema version. Errors: kNotARunFile, kTooNew, kCorrupt.
Result<int> CheckRunFile(sqlite3* db, const std::string& path, int newest_version);

// Checks that every table in `tables` exists (and is a table, not a view).
Status CheckTables(sqlite3* db, const std::vector<std::string>& tables, const std::string& path);

}  // namespace shardscope::store::internal

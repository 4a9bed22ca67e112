// Writes the seed corpus of the reader's fuzz targets: small run files (512-byte pages) of
// every shape a reader meets — finished, failed, plan-only, many steps, interrupted.
//   store_fuzz_seeds SEED_DIR [WORK_DIR]   (WORK_DIR, libFuzzer's output corpus, is emptied)
#include <sqlite3.h>

#include <cstdio>
#include <filesystem>

#include "sample_run.h"

using namespace shardscope::store;

namespace {

bool Make(const std::string& path, int steps, RunStatus status, bool with_plan) {
  RunWriterOptions options;
  options.overwrite = true;
  options.page_size = 512;
  auto writer = RunWriter::Create(path, testing::SampleRunInfo(), options);
  if (!writer.ok()) {
    std::fprintf(stderr, "%s\n", writer.status().message().c_str());
    return false;
  }
  testing::SampleRun sample = testing::MakeSampleRun(steps);
  if (!with_plan) {
    sample.operators.clear();
    sample.tensors.clear();
    sample.edges.clear();
    sample.redistributions.clear();
    sample.programs.clear();
  }
  if (Status st = testing::WriteSample(**writer, sample); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.message().c_str());
    return false;
  }
  if (!(*writer)
           ->Finish(status == RunStatus::kRunning ? RunStatus::kCompleted : status, "seed")
           .ok()) {
    return false;
  }
  if (status != RunStatus::kRunning) return true;
  // "running" with no writer, as after a crash (in one file).
  sqlite3* db = nullptr;
  const bool ok = sqlite3_open(path.c_str(), &db) == SQLITE_OK &&
                  sqlite3_exec(db, "UPDATE run SET status = 'running', ended_at = NULL", nullptr,
                               nullptr, nullptr) == SQLITE_OK;
  sqlite3_close(db);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SEED_DIR [WORK_DIR]\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::error_code ec;
  for (int i = 1; i < argc && i < 3; ++i) {
    std::filesystem::remove_all(argv[i], ec);
    if (!std::filesystem::create_directories(argv[i], ec)) {
      std::fprintf(stderr, "%s: cannot create directory %s: %s\n", argv[0], argv[i],
                   ec.message().c_str());
      return 1;
    }
  }
  bool ok = Make((dir / "completed.db").string(), 5, RunStatus::kCompleted, true) &&
            Make((dir / "failed.db").string(), 1, RunStatus::kFailed, true) &&
            Make((dir / "plan_only.db").string(), 0, RunStatus::kCompleted, true) &&
            Make((dir / "steps_only.db").string(), 40, RunStatus::kInterrupted, false) &&
            Make((dir / "crashed.db").string(), 3, RunStatus::kRunning, true);
  std::printf("seeds in %s\n", dir.c_str());
  return ok ? 0 : 1;
}

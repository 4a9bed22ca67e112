// The writer's background checkpoints: its connection only appends to the log; when the log
// holds kCheckpointPages pages, a thread copies it into the main file and syncs it. SQLite
// restarts the log (writes it again from its start) at the first transaction that finds
// every frame copied — which a writer committing during the copy never does: so the bulk is
// copied while the writer goes on (PASSIVE checkpoints never block it), then what it added
// meanwhile with the writer's mutex held. A writer call made during that last pass waits for
// it: a few hundred page copies and two syncs, once per kCheckpointPages pages of log.
#include "writer_impl.h"

namespace shardscope::store {
namespace {

constexpr int kCheckpointPages = 1000;  // SQLite's default auto-checkpoint threshold
constexpr int kCatchUpPages = 256;      // copied with the writer held (see CatchUp)
constexpr int kMaxLogPages = 8 * kCheckpointPages;
constexpr int kCapAttempts = 2500;  // at 2 ms each: 5 s before the log may grow on

}  // namespace

void RunWriter::Impl::CatchUp() {
  const auto stopping = [this] {
    std::lock_guard<std::mutex> lock(ckpt_mu);
    return ckpt_stop;
  };
  for (int round = 0; round < 3; ++round) {
    int log = 0, copied = 0;  // as of the checkpoint's start: the writer may be ahead
    if (sqlite3_wal_checkpoint_v2(ckpt_db, "main", SQLITE_CHECKPOINT_PASSIVE, &log, &copied) !=
        SQLITE_OK) {
      return;  // busy or failing: the next trigger tries again
    }
    if (stopping()) return;
    int frames = 0;  // what the writer added meanwhile (sqlite3_wal_hook reports it)
    {
      std::lock_guard<std::mutex> writer(mu);
      frames = last_commit_pages - log;
    }
    if (frames <= kCatchUpPages) break;
  }
  std::lock_guard<std::mutex> writer(mu);  // Finish() stops this thread before taking mu
  sqlite3_wal_checkpoint_v2(ckpt_db, "main", SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
}

void RunWriter::Impl::StartCheckpointer() {
  if (sqlite3_open_v2(path.c_str(), &ckpt_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    sqlite3_close(ckpt_db);
    ckpt_db = nullptr;
    return;  // SQLite's own auto-checkpoint (in Commit) stays on
  }
  sqlite3_busy_timeout(ckpt_db, 1000);
  (void)internal::Exec(
      ckpt_db, options.durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL", path,
      "checkpointing");
  sqlite3_wal_hook(db, WalHook, this);  // replaces the auto-checkpoint
  ckpt_thread = std::thread([this] {
    std::unique_lock<std::mutex> lock(ckpt_mu);
    while (true) {
      ckpt_cv.wait(lock, [this] { return ckpt_wanted || ckpt_stop; });
      if (ckpt_stop) break;
      ckpt_wanted = false;
      lock.unlock();
      CatchUp();
      lock.lock();
    }
  });
}

void RunWriter::Impl::StopCheckpointer() {
  if (ckpt_thread.joinable()) {
    {
      std::lock_guard<std::mutex> lock(ckpt_mu);
      ckpt_stop = true;
    }
    ckpt_cv.notify_one();
    ckpt_thread.join();
  }
  if (ckpt_db != nullptr) {
    sqlite3_close(ckpt_db);
    ckpt_db = nullptr;
  }
}

int RunWriter::Impl::WalHook(void* arg, sqlite3* db, const char*, int pages) {
  auto* impl = static_cast<Impl*>(arg);
  impl->last_commit_pages = pages;
  if (pages >= kMaxLogPages) {
    // The checkpoints cannot keep up (a very fast writer on a slow disk): copy here. While the
    // thread's own pass holds the checkpoint lock SQLite answers BUSY at once: wait it out.
    for (int attempt = 0; attempt < kCapAttempts; ++attempt) {
      if (sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr) !=
          SQLITE_BUSY) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    impl->last_trigger_pages = 0;
  } else if (pages >= kCheckpointPages && (pages < impl->last_trigger_pages ||
                                           pages >= impl->last_trigger_pages + kCheckpointPages)) {
    impl->last_trigger_pages = pages;
    {
      std::lock_guard<std::mutex> lock(impl->ckpt_mu);
      impl->ckpt_wanted = true;
    }
    impl->ckpt_cv.notify_one();
  }
  return SQLITE_OK;
}

}  // namespace shardscope::store

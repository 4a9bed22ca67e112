// A run killed with SIGKILL leaves a file that opens, holds every committed step, and reads
// as interrupted; while the writer lives, readers see it live and a second writer is refused.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "shardscope/store/reader.h"
#include "shardscope/store/summary.h"
#include "shardscope/store/writer.h"
#include "temp_dir.h"

extern char** environ;

namespace shardscope::store {
namespace {

struct Helper {
  pid_t pid = -1;
  FILE* out = nullptr;
  int64_t last_committed = -1;

  // Reads "committed N" lines until N >= target (or the helper ends). False on EOF.
  bool WaitFor(int64_t target) {
    char line[128];
    while (last_committed < target && std::fgets(line, sizeof(line), out) != nullptr) {
      long long n = 0;
      if (std::sscanf(line, "committed %lld", &n) == 1) last_committed = n;
    }
    return last_committed >= target;
  }
};

Helper Spawn(const std::string& path, int ranks) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  const std::string ranks_text = std::to_string(ranks);
  char* argv[] = {const_cast<char*>(SHARDSCOPE_STORE_KILL_HELPER), const_cast<char*>(path.c_str()),
                  const_cast<char*>(ranks_text.c_str()), nullptr};
  Helper h;
  EXPECT_EQ(posix_spawn(&h.pid, argv[0], &actions, nullptr, argv, environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  h.out = fdopen(fds[0], "r");
  return h;
}

void KillAndCheck(int64_t kill_after, int ranks) {
  testing::TempDir dir;
  const std::string path = dir.File("killed.db");
  Helper h = Spawn(path, ranks);
  ASSERT_TRUE(h.WaitFor(kill_after / 2)) << "the helper stopped early";

  // Live: readers see the commits so far and a running status; a second writer is refused.
  {
    auto reader = RunReader::Open(path);
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    EXPECT_TRUE((*reader)->IsLive());
    auto run = (*reader)->Run();
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->status, RunStatus::kRunning);
    EXPECT_GE(static_cast<int64_t>((*reader)->Steps()->size()), h.last_committed + 1);
    RunWriterOptions options;
    options.overwrite = true;
    options.lock_wait_seconds = 0;
    auto second = RunWriter::Create(path, RunInfo{}, options);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().code(), StatusCode::kLocked);
    EXPECT_NE(second.status().message().find("pid " + std::to_string(h.pid)), std::string::npos)
        << second.status().message();
  }

  ASSERT_TRUE(h.WaitFor(kill_after));
  ASSERT_EQ(kill(h.pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(h.pid, &status, 0), h.pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  h.WaitFor(INT64_MAX);  // lines printed before the kill
  std::fclose(h.out);
  const int64_t committed = h.last_committed + 1;

  auto reader = RunReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  auto run = (*reader)->Run();
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->status, RunStatus::kInterrupted);
  EXPECT_EQ(run->stored_status, RunStatus::kRunning);
  EXPECT_FALSE((*reader)->IsLive());
  auto steps = (*reader)->Steps(INT64_MIN, INT64_MAX, /*with_ranks=*/true);
  ASSERT_TRUE(steps.ok()) << steps.status().message();
  // Every committed step, at most the one committed between its commit and its print more.
  ASSERT_GE(static_cast<int64_t>(steps->size()), committed);
  ASSERT_LE(static_cast<int64_t>(steps->size()), committed + 1);
  for (size_t i = 0; i < steps->size(); ++i) {
    ASSERT_EQ((*steps)[i].step, static_cast<int64_t>(i));
    ASSERT_EQ((*steps)[i].ranks.size(), static_cast<size_t>(ranks));
  }
  EXPECT_TRUE((*reader)->Check().ok());
  EXPECT_EQ((*reader)->Operators()->size(), 4u);  // the plan, committed before the steps
  auto summary = FormatRunSummary(**reader);
  ASSERT_TRUE(summary.ok());
  EXPECT_NE(summary->find("interrupted (recorded as running)"), std::string::npos) << *summary;
}

TEST(KillTest, SigkillAfterAFewCommits) { KillAndCheck(40, 8); }

// Many ranks per step: the log passes the checkpoint threshold several times before the kill,
// so the kill may land during a background checkpoint.
TEST(KillTest, SigkillDuringCheckpoints) { KillAndCheck(3000, 64); }

}  // namespace
}  // namespace shardscope::store

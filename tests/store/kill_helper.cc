// Helper of kill_test: records a plan, then training steps in a loop, one commit per step,
// printing "committed N" after each commit, until it is killed.
//   store_kill_helper RUN_FILE [RANKS]
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "sample_run.h"

using namespace shardscope::store;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s RUN_FILE [RANKS]\n", argv[0]);
    return 2;
  }
  alarm(120);  // never outlive a test that failed to kill us
  const int ranks = argc > 2 ? std::atoi(argv[2]) : 8;
  RunWriterOptions options;
  options.overwrite = true;
  auto writer = RunWriter::Create(argv[1], testing::SampleRunInfo(), options);
  if (!writer.ok()) {
    std::fprintf(stderr, "%s\n", writer.status().message().c_str());
    return 1;
  }
  if (Status st = testing::WriteSample(**writer, testing::MakeSampleRun(0)); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.message().c_str());
    return 1;
  }
  for (int64_t i = 0;; ++i) {
    StepRecord step;
    step.step = i;
    step.epoch = i / 100;
    step.loss = 1.0 / static_cast<double>(i + 1);
    step.seconds = 1e-3;
    for (int k = 0; k < ranks; ++k) {
      step.ranks.push_back({k, 1e-3, 2e-4, 1000 * i, 2000 * i, 1, 2, 3, 4, 5});
    }
    Status st = (*writer)->AddStep(step);
    if (st.ok() && i % 7 == 0) st = (*writer)->AddEvent("info", "helper", "step", i);
    if (st.ok()) st = (*writer)->Commit();
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.message().c_str());
      return 1;
    }
    std::printf("committed %lld\n", static_cast<long long>(i));
    std::fflush(stdout);
  }
}

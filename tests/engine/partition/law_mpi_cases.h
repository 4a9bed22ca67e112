// The correctness law under mpirun for a list of cases: each rank is one device of the
// distributed run and also trains the single-device reference itself; every rank compares
// its shards, and rank 0 prints one PASS/FAIL line per case.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "law.h"

namespace shardscope::testing_law {

struct Case {
  std::string name;
  BuildFn build;
  Dataset data;
  int64_t batch;
  PartitionOptions options;
  TrainConfig config = LawConfig();  // its gradient buckets (the optimizer is the law's)
};

// Runs every case on `world`; the exit code of the test binary (0: all passed).
inline int RunMpiCases(Communicator& world, std::vector<Case>& cases) {
  const int n = world.size();
  int passed = 0, failed = 0;
  for (Case& c : cases) {
    c.options.devices = n;
    const SingleRun single = TrainSingle(c.build, c.data, c.batch, 5);
    std::unique_ptr<DistTrainer> t;
    Status st;
    auto losses = TrainRank(world, c.build, c.data, c.batch, 5, c.options, &t, c.config);
    st = losses.ok() ? CompareRank(*t, *losses, single, world.rank()) : losses.status();
    // Every rank's verdict, so rank 0 reports the whole run.
    std::vector<float> mine = {st.ok() ? 1.0f : 0.0f}, all(n);
    if (!world.AllGather(mine, all).ok()) return 1;
    bool ok = true;
    for (float f : all) ok = ok && f == 1.0f;
    if (!st.ok())
      std::fprintf(stderr, "rank %d, %s: %s\n", world.rank(), c.name.c_str(), st.message().c_str());
    if (world.rank() == 0)
      std::printf("%s %s on %d ranks\n", ok ? "PASS" : "FAIL", c.name.c_str(), n);
    (ok ? passed : failed)++;
  }
  if (world.rank() == 0) std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace shardscope::testing_law

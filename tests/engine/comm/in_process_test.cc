// The in-process backend: every backend-independent check on 1, 2, 3, 4, 8 (and 16) devices,
// then what only threads can show: failures on every rank or none, failure propagation
// without hangs, bitwise equal results across runs, barriers that really wait.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "comm_checks.h"
#include "shardscope/communicator.h"

namespace shardscope {
namespace {

using comm_test::AllChecks;
using comm_test::Values;

// ---------------------------------------------------------------------------------------
// Every check on every device count.

class InProcessChecks : public ::testing::TestWithParam<std::tuple<size_t, int>> {};

TEST_P(InProcessChecks, Passes) {
  const auto& check = AllChecks()[std::get<0>(GetParam())];
  const int n = std::get<1>(GetParam());
  Status st = RunOnDevices(n, [&](Communicator& comm) { return check.fn(comm); });
  EXPECT_TRUE(st.ok()) << check.name << " on " << n << " devices: " << st.message();
}

std::vector<size_t> CheckIndices() {
  std::vector<size_t> v(AllChecks().size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

INSTANTIATE_TEST_SUITE_P(Devices, InProcessChecks,
                         ::testing::Combine(::testing::ValuesIn(CheckIndices()),
                                            ::testing::Values(1, 2, 3, 4, 8, 16)),
                         [](const ::testing::TestParamInfo<std::tuple<size_t, int>>& info) {
                           return std::string(AllChecks()[std::get<0>(info.param)].name) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "dev";
                         });

// ---------------------------------------------------------------------------------------
// Traffic formulas.

TEST(CommTraffic, Formulas) {
  // 10 elements over 4 ranks: blocks 3, 3, 2, 2.
  EXPECT_EQ(BlockBegin(10, 4, 0), 0);
  EXPECT_EQ(BlockBegin(10, 4, 2), 6);
  EXPECT_EQ(BlockSize(10, 4, 1), 3);
  EXPECT_EQ(BlockSize(10, 4, 3), 2);
  // AllReduce: n + (p-2) * block.
  EXPECT_EQ(AllReduceTraffic(10, 4, 0), (CommTraffic{4 * 16, 4 * 16}));
  EXPECT_EQ(AllReduceTraffic(10, 4, 3), (CommTraffic{4 * 14, 4 * 14}));
  EXPECT_EQ(AllReduceTraffic(8, 4, 1), (CommTraffic{4 * 12, 4 * 12}));  // 2 * 3/4 * 8
  EXPECT_EQ(AllReduceTraffic(8, 2, 1), (CommTraffic{4 * 8, 4 * 8}));
  EXPECT_EQ(AllReduceTraffic(8, 1, 0), (CommTraffic{0, 0}));
  EXPECT_EQ(AllGatherTraffic(5, 4), (CommTraffic{60, 60}));
  EXPECT_EQ(ReduceScatterTraffic(5, 4), (CommTraffic{60, 60}));
  EXPECT_EQ(AllToAllTraffic(5, 4), (CommTraffic{60, 60}));
  EXPECT_EQ(BroadcastTraffic(5, 4, 2, 2), (CommTraffic{60, 0}));
  EXPECT_EQ(BroadcastTraffic(5, 4, 1, 2), (CommTraffic{0, 20}));
  EXPECT_EQ(BroadcastTraffic(5, 1, 0, 0), (CommTraffic{0, 0}));
}

// ---------------------------------------------------------------------------------------
// A collective fails on every rank or on none, and the group stays usable.

// Runs `bad` on every device; every device must get kInvalidInput whose message contains
// `needle`, then a normal all-reduce must still work.
void ExpectFailsEverywhere(int n, const std::function<Status(Communicator&)>& bad,
                           const std::string& needle) {
  std::mutex mu;
  std::vector<std::string> messages;
  Status st = RunOnDevices(n, [&](Communicator& comm) -> Status {
    Status s = bad(comm);
    {
      std::lock_guard<std::mutex> lk(mu);
      messages.push_back(s.message());
    }
    if (s.code() != StatusCode::kInvalidInput) {
      return Status::Internal("rank " + std::to_string(comm.rank()) + " got '" + s.message() +
                              "' (code " + std::to_string(static_cast<int>(s.code())) + ")");
    }
    std::vector<float> x = {1.0f};
    SHARDSCOPE_RETURN_IF_ERROR(comm.AllReduce(x));
    if (x[0] != static_cast<float>(comm.size())) return Status::Internal("group broken");
    return Status::Ok();
  });
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(messages.size(), static_cast<size_t>(n));
  for (const auto& m : messages) {
    EXPECT_EQ(m, messages[0]) << "ranks disagree";
    EXPECT_NE(m.find(needle), std::string::npos) << m;
  }
}

TEST(InProcessErrors, OneRankWithBadArguments) {
  ExpectFailsEverywhere(
      4,
      [](Communicator& comm) {
        std::vector<float> in(5), out(comm.rank() == 2 ? 4 : 5);
        return comm.AllReduce(in, out);
      },
      "AllReduce failed on rank 2: AllReduce: in has 5 elements but out has 4");
  ExpectFailsEverywhere(
      3,
      [](Communicator& comm) {
        std::vector<float> data(2);
        return comm.Broadcast(data, comm.rank() == 1 ? 7 : 0);
      },
      "Broadcast failed on rank 1");
  ExpectFailsEverywhere(
      3, [](Communicator& comm) { return comm.Split(comm.rank() == 0 ? -3 : 1, 0).status(); },
      "Split failed on rank 0");
}

TEST(InProcessErrors, RanksDisagree) {
  ExpectFailsEverywhere(
      4,
      [](Communicator& comm) {
        std::vector<float> data(comm.rank() == 3 ? 6 : 5);
        return comm.AllReduce(data);
      },
      "ranks disagree on the element count: rank 0 has 5, rank 3 has 6");
  ExpectFailsEverywhere(
      2,
      [](Communicator& comm) {
        std::vector<float> data(4), out(2);
        return comm.ReduceScatter(data, out, comm.rank() == 0 ? ReduceOp::kSum : ReduceOp::kMax);
      },
      "ranks disagree on the operation");
  ExpectFailsEverywhere(
      3,
      [](Communicator& comm) {
        std::vector<float> data(3);
        return comm.Broadcast(data, comm.rank() == 2 ? 1 : 0);
      },
      "ranks disagree on the root");
  ExpectFailsEverywhere(
      3,
      [](Communicator& comm) {
        std::vector<float> x(1), all(3);
        if (comm.rank() == 1) return comm.AllGather(x, all);
        return comm.AllReduce(x);
      },
      "mismatched collectives: rank 0 called AllReduce, rank 1 called AllGather");
  ExpectFailsEverywhere(
      2,
      [](Communicator& comm) {
        // Rank 0 sends 2 elements to rank 1, which expects 1.
        std::vector<int64_t> send = {1, comm.rank() == 0 ? 2 : 1};
        std::vector<int64_t> recv = {1, 1};
        std::vector<float> in(3), out(2);
        return comm.AllToAllV(in, send, {}, out, recv, {});
      },
      "AllToAllV: rank 0 sends 2 elements to rank 1, which expects 1");
}

// ---------------------------------------------------------------------------------------
// Failures propagate instead of hanging.

TEST(InProcessFailures, ErrorOnOneDeviceAbortsTheOthers) {
  auto start = std::chrono::steady_clock::now();
  Status st = RunOnDevices(8, [](Communicator& comm) -> Status {
    if (comm.rank() == 5) return Status::NotFound("no such thing");
    std::vector<float> x(10);
    for (int i = 0; i < 100; ++i) SHARDSCOPE_RETURN_IF_ERROR(comm.AllReduce(x));
    return Status::Ok();
  });
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_EQ(st.message(), "device 5: no such thing");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(InProcessFailures, DeviceThatLeavesEarly) {
  Status st = RunOnDevices(4, [](Communicator& comm) -> Status {
    if (comm.rank() == 0) return Status::Ok();  // skips the barrier
    return comm.Barrier();
  });
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("Barrier"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("which has already returned"), std::string::npos) << st.message();
}

TEST(InProcessFailures, ReceiveFromADeviceThatNeverSends) {
  Status st = RunOnDevices(2, [](Communicator& comm) -> Status {
    if (comm.rank() == 1) return Status::Ok();
    std::vector<float> x(1);
    return comm.Recv(x, 1, 4);
  });
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("Recv(tag 4): rank 0 waits for rank 1"), std::string::npos)
      << st.message();
}

TEST(InProcessFailures, ReceiveFromItselfWithoutMessage) {
  Status st = RunOnDevices(1, [](Communicator& comm) -> Status {
    std::vector<float> x(1);
    return comm.Recv(x, 0, 0);
  });
  EXPECT_EQ(st.code(), StatusCode::kInvalidInput) << st.message();
}

TEST(InProcessFailures, ExceptionBecomesStatus) {
  Status st = RunOnDevices(3, [](Communicator& comm) -> Status {
    if (comm.rank() == 1) throw std::runtime_error("boom");
    return comm.Barrier();
  });
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_EQ(st.message(), "device 1: exception: boom");
}

TEST(InProcessFailures, SubGroupsWakeUpToo) {
  // Rank 3 fails while the others are busy in two different sub-groups.
  Status st = RunOnDevices(4, [](Communicator& comm) -> Status {
    SHARDSCOPE_ASSIGN_OR_RETURN(auto sub, comm.Split(comm.rank() / 2, 0));
    if (comm.rank() == 3) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      return Status::Invalid("bad input on 3");
    }
    std::vector<float> x(1);
    for (int i = 0; i < 1000; ++i) SHARDSCOPE_RETURN_IF_ERROR(sub->AllReduce(x));
    return Status::Ok();
  });
  EXPECT_EQ(st.message(), "device 3: bad input on 3");
}

TEST(InProcessFailures, AbortedWorldStaysAborted) {
  InProcessWorld world(2);
  Status st = world.Run([](Communicator& comm) -> Status {
    return comm.rank() == 0 ? Status::Invalid("first") : Status::Ok();
  });
  EXPECT_EQ(st.message(), "device 0: first");
  Status again = world.Run([](Communicator&) { return Status::Ok(); });
  EXPECT_EQ(again.message(), "device 0: first");
}

TEST(InProcessFailures, ZeroDevices) {
  EXPECT_EQ(RunOnDevices(0, [](Communicator&) {}).code(), StatusCode::kInvalidInput);
}

// ---------------------------------------------------------------------------------------
// Determinism, synchronisation, reuse.

TEST(InProcessDeterminism, RepeatedRunsAreBitwiseEqual) {
  const int n = 8;
  const int64_t count = 10007;
  std::vector<std::vector<float>> first;
  for (int run = 0; run < 5; ++run) {
    std::vector<std::vector<float>> results(n);
    Status st = RunOnDevices(n, [&](Communicator& comm) -> Status {
      std::vector<float> data = Values(77, comm.rank(), count);
      SHARDSCOPE_RETURN_IF_ERROR(comm.AllReduce(data));
      results[comm.rank()] = std::move(data);
      return Status::Ok();
    });
    ASSERT_TRUE(st.ok()) << st.message();
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(comm_test::BitwiseDiff(results[r], results[0]), "") << "run " << run;
    }
    if (run == 0) {
      first = results;
      EXPECT_EQ(comm_test::BitwiseDiff(results[0],
                                       comm_test::ReferenceReduce(77, n, count, ReduceOp::kSum)),
                "");
    } else {
      EXPECT_EQ(comm_test::BitwiseDiff(results[0], first[0]), "") << "run " << run;
    }
  }
}

TEST(InProcessBarrier, WaitsForEveryone) {
  std::atomic<int> arrived{0};
  Status st = RunOnDevices(8, [&](Communicator& comm) -> Status {
    for (int round = 1; round <= 20; ++round) {
      if (comm.rank() == round % 8) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      arrived.fetch_add(1);
      SHARDSCOPE_RETURN_IF_ERROR(comm.Barrier());
      if (arrived.load() < 8 * round) return Status::Internal("left the barrier too early");
      SHARDSCOPE_RETURN_IF_ERROR(comm.Barrier());
    }
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST(InProcessWorldTest, RunTwiceAndOwnThreads) {
  InProcessWorld world(3);
  EXPECT_EQ(world.size(), 3);
  EXPECT_EQ(world.comm(2).rank(), 2);
  EXPECT_STREQ(world.comm(0).backend(), "in-process");
  for (int run = 0; run < 2; ++run) {
    Status st = world.Run([](Communicator& comm) {
      std::vector<float> x = {1.0f};
      return comm.AllReduce(x);
    });
    EXPECT_TRUE(st.ok()) << st.message();
  }
  // Counters persist across runs: two all-reduces of one element on 3 ranks.
  EXPECT_EQ(world.comm(0).stats().calls, 2);
  EXPECT_EQ(world.comm(0).stats().bytes_sent, 2 * AllReduceTraffic(1, 3, 0).bytes_sent);
  // Threads of our own.
  std::vector<std::thread> threads;
  std::vector<Status> results(3);
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      std::vector<float> x(1, static_cast<float>(r));
      results[r] = world.comm(r).Broadcast(x, 2);
      if (results[r].ok() && x[0] != 2.0f) results[r] = Status::Internal("wrong value");
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& s : results) EXPECT_TRUE(s.ok()) << s.message();
}

TEST(InProcessWorldTest, VoidFunction) {
  std::atomic<int> calls{0};
  EXPECT_TRUE(RunOnDevices(5, [&](Communicator&) { calls.fetch_add(1); }).ok());
  EXPECT_EQ(calls.load(), 5);
}

TEST(InProcessWorldTest, SubCommunicatorOutlivesTheWorld) {
  std::unique_ptr<Communicator> kept;
  {
    InProcessWorld world(1);
    Status st = world.Run([&](Communicator& comm) -> Status {
      SHARDSCOPE_ASSIGN_OR_RETURN(kept, comm.Split(0, 0));
      return Status::Ok();
    });
    ASSERT_TRUE(st.ok()) << st.message();
  }
  std::vector<float> x = {3.0f};
  EXPECT_TRUE(kept->AllReduce(x).ok());
  EXPECT_EQ(x[0], 3.0f);
}

TEST(InProcessWorldTest, ManySmallCollectivesOnFewCores) {
  // 16 devices on however many cores: condition variables, not spinning, keep this quick.
  // Each round sums fresh small integers (exact in float), so every result is known; summing
  // the same buffer again would multiply it by 16 a round and overflow after 32 rounds.
  constexpr int kDevices = 16;
  constexpr int kRounds = 500;
  auto start = std::chrono::steady_clock::now();
  Status st = RunOnDevices(kDevices, [](Communicator& comm) -> Status {
    const int r = comm.rank();
    for (int i = 0; i < kRounds; ++i) {
      std::vector<float> x = {1.0f, static_cast<float>(r), static_cast<float>(i),
                              static_cast<float>((r * i) % 7)};
      SHARDSCOPE_RETURN_IF_ERROR(comm.AllReduce(x));
      float mod_sum = 0;
      for (int k = 0; k < kDevices; ++k) mod_sum += static_cast<float>((k * i) % 7);
      const std::vector<float> want = {kDevices, kDevices * (kDevices - 1) / 2.0f,
                                       static_cast<float>(kDevices * i), mod_sum};
      if (x != want) {
        return Status::Internal("rank " + std::to_string(r) + ", all-reduce " + std::to_string(i) +
                                ": wrong sum");
      }
    }
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.message();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  start)
                .count();
  RecordProperty("milliseconds", static_cast<int>(ms));
}

TEST(RunningUnderMpiTest, ReadsTheEnvironment) {
  const char* saved = std::getenv("OMPI_COMM_WORLD_SIZE");
  std::string keep = saved ? saved : "";
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("PMI_SIZE");
  unsetenv("PMIX_RANK");
  EXPECT_FALSE(RunningUnderMpi());
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  EXPECT_TRUE(RunningUnderMpi());
  if (saved) {
    setenv("OMPI_COMM_WORLD_SIZE", keep.c_str(), 1);
  } else {
    unsetenv("OMPI_COMM_WORLD_SIZE");
  }
}

}  // namespace
}  // namespace shardscope

// The MPI backend under mpirun: every backend-independent check on MpiWorld(), and the
// promise that MPI and in-process results are bitwise equal. Run by ctest with -np 2, 4, 8.
//
// Own main: MpiWorld() initialises MPI (and finalises it at exit); only rank 0 prints the
// usual GoogleTest output, other ranks print their failures only; the exit code is the
// worst over all ranks.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "comm_checks.h"
#include "shardscope/communicator.h"

namespace shardscope {
namespace {

Communicator* g_world = nullptr;

class MpiChecks : public ::testing::TestWithParam<size_t> {};

TEST_P(MpiChecks, Passes) {
  const auto& check = comm_test::AllChecks()[GetParam()];
  Status st = check.fn(*g_world);
  EXPECT_TRUE(st.ok()) << check.name << " on " << g_world->size() << " MPI ranks: " << st.message();
}

std::vector<size_t> CheckIndices() {
  std::vector<size_t> v(comm_test::AllChecks().size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

INSTANTIATE_TEST_SUITE_P(World, MpiChecks, ::testing::ValuesIn(CheckIndices()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return std::string(comm_test::AllChecks()[info.param].name);
                         });

TEST(Mpi, Backend) {
  EXPECT_STREQ(g_world->backend(), "mpi");
  EXPECT_TRUE(RunningUnderMpi());
}

// The same inputs give the same bits on MPI ranks and on in-process devices (run here, inside
// each MPI process, with as many threads as there are ranks).
TEST(Mpi, MatchesInProcessBitwise) {
  const int p = g_world->size();
  const int r = g_world->rank();
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
    for (int64_t n : {3, 1000, 1025, 10007}) {
      const int seed = 3000 + static_cast<int>(n);
      std::vector<float> mpi = comm_test::Values(seed, r, n);
      Status st = g_world->AllReduce(mpi, op);
      ASSERT_TRUE(st.ok()) << st.message();
      std::vector<float> mpi_rs(n / p);
      st = g_world->ReduceScatter(
          std::span<const float>(comm_test::Values(seed, r, n)).first(p * (n / p)), mpi_rs, op);
      ASSERT_TRUE(st.ok()) << st.message();

      std::vector<float> threads, threads_rs;
      st = RunOnDevices(p, [&](Communicator& comm) -> Status {
        std::vector<float> x = comm_test::Values(seed, comm.rank(), n);
        SHARDSCOPE_RETURN_IF_ERROR(comm.AllReduce(x, op));
        std::vector<float> rs(n / p);
        SHARDSCOPE_RETURN_IF_ERROR(comm.ReduceScatter(
            std::span<const float>(comm_test::Values(seed, comm.rank(), n)).first(p * (n / p)), rs,
            op));
        if (comm.rank() == r) {
          threads = std::move(x);
          threads_rs = std::move(rs);
        }
        return Status::Ok();
      });
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_EQ(comm_test::BitwiseDiff(mpi, threads), "") << "n=" << n;
      EXPECT_EQ(comm_test::BitwiseDiff(mpi_rs, threads_rs), "") << "n=" << n;
    }
  }
}

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// A rank waiting for a late one leaves its core: while rank 0 sleeps, the others wait in a
// barrier and a receive; their CPU time is compared with what a spinning loop gets here over
// the same time (so a loaded machine does not hide a busy-poll).
TEST(Mpi, WaitingRanksDoNotBusyPoll) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kLate = std::chrono::milliseconds(400);
  const int r = g_world->rank();
  ASSERT_TRUE(g_world->Barrier().ok());
  const double cpu0 = ThreadCpuSeconds();
  if (r == 0) std::this_thread::sleep_for(kLate);
  ASSERT_TRUE(g_world->Barrier().ok());
  if (r == 0) std::this_thread::sleep_for(kLate);
  std::vector<float> value = {static_cast<float>(r)};
  ASSERT_TRUE(g_world->Broadcast(value, 0).ok());
  const double waiting = ThreadCpuSeconds() - cpu0;
  ASSERT_TRUE(g_world->Barrier().ok());
  const double spin0 = ThreadCpuSeconds();
  for (const auto end = Clock::now() + 2 * kLate; Clock::now() < end;) {
  }
  const double spinning = ThreadCpuSeconds() - spin0;
  // A few milliseconds of waking up are allowed however little the spinning loop got (many
  // ranks on few cores); a busy-polling wait takes a spinning loop's share of the 0.8 s.
  if (r != 0 && waiting > 0.05) {
    EXPECT_LT(waiting, 0.25 * spinning)
        << "rank " << r << " used " << waiting << " s of CPU waiting 0.8 s for rank 0; a spinning "
        << "loop got " << spinning << " s";
  }
  ASSERT_TRUE(g_world->Barrier().ok());
}

TEST(Mpi, SecondWorldIsIndependent) {
  auto second = MpiWorld();
  ASSERT_TRUE(second.ok()) << second.status().message();
  Communicator& w2 = **second;
  EXPECT_EQ(w2.size(), g_world->size());
  EXPECT_EQ(w2.rank(), g_world->rank());
  // A message on one world is not received on the other.
  std::vector<float> a = {1.0f}, b = {2.0f};
  const int next = (w2.rank() + 1) % w2.size();
  const int prev = (w2.rank() + w2.size() - 1) % w2.size();
  ASSERT_TRUE(g_world->Send(a, next, 1).ok());
  ASSERT_TRUE(w2.Send(b, next, 1).ok());
  std::vector<float> got(1);
  ASSERT_TRUE(w2.Recv(got, prev, 1).ok());
  EXPECT_EQ(got[0], 2.0f);
  ASSERT_TRUE(g_world->Recv(got, prev, 1).ok());
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(w2.stats().bytes_sent, 4);
}

class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.message());
  }

 private:
  int rank_;
};

}  // namespace
}  // namespace shardscope

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto world = shardscope::MpiWorld();
  if (!world.ok()) {
    std::fprintf(stderr, "MpiWorld: %s\n", world.status().message().c_str());
    return 1;
  }
  shardscope::g_world = world->get();
  const int rank = shardscope::g_world->rank();
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new shardscope::FailurePrinter(rank));
  }
  std::vector<float> failed = {RUN_ALL_TESTS() != 0 ? 1.0f : 0.0f};
  shardscope::Status st = shardscope::g_world->AllReduce(failed, shardscope::ReduceOp::kMax);
  shardscope::g_world = nullptr;
  world->reset();  // before MPI_Finalize, which runs at exit
  if (!st.ok()) {
    std::fprintf(stderr, "[rank %d] %s\n", rank, st.message().c_str());
    return 1;
  }
  if (rank == 0 && failed[0] != 0.0f) std::fprintf(stderr, "FAILED on at least one rank\n");
  return failed[0] != 0.0f ? 1 : 0;
}

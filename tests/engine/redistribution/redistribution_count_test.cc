// CountExchange (closed-form exchange counts) against ComputeExchange (one visit per pair of
// communicating ranks) on thousands of random cases: the exchange from the source into the
// target (new partial sums: only ranks with index 0 along them want data) and from random
// intermediate states into random landings.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>

#include "../../../engine/src/redistribution/redistribution_internal.h"
#include "redistribution_sim.h"

namespace shardscope {
namespace {

using redist_internal::BoxesOf;
using redist_internal::ComputeExchange;
using redist_internal::CountExchange;
using redist_internal::CountPart;
using redist_internal::Exchange;
using redist_internal::Problem;
using redist_internal::State;

// A random state on p's mesh without pending reductions: every axis that is not kept partial
// splits a random dimension (in random order) or holds replicas; dimensions stay divisible.
State RandomState(std::mt19937& rng, const Problem& p) {
  State s;
  s.dims.assign(p.num_dims, {});
  if (p.num_dims == 0) return s;
  std::vector<int64_t> blocks(p.num_dims, 1);
  for (int a = 0; a < p.num_axes; ++a) {
    if (p.kept_mask & (1u << a)) continue;
    const int d = std::uniform_int_distribution<int>(0, p.num_dims - 1)(rng);
    if (std::bernoulli_distribution(0.3)(rng) || p.shape[d] % (blocks[d] * p.axis_size[a]) != 0)
      continue;
    blocks[d] *= p.axis_size[a];
    auto& list = s.dims[d];
    const int at = std::uniform_int_distribution<int>(0, static_cast<int>(list.size()))(rng);
    list.insert(list.begin() + at, a);
  }
  return s;
}

void ExpectSameCounts(const Exchange& slow, const Exchange& fast, const std::string& ctx) {
  EXPECT_EQ(fast.recv, slow.recv) << ctx;
  EXPECT_EQ(fast.sent, slow.sent) << ctx;
  EXPECT_EQ(fast.max_recv, slow.max_recv) << ctx;
  EXPECT_EQ(fast.max_sent, slow.max_sent) << ctx;
  EXPECT_EQ(fast.messages, slow.messages) << ctx;
  EXPECT_EQ(fast.max_recv_peers, slow.max_recv_peers) << ctx;
  EXPECT_EQ(fast.axes_mask, slow.axes_mask) << ctx;
  EXPECT_EQ(fast.is_permute, slow.is_permute) << ctx;
  EXPECT_EQ(fast.num_transfers, slow.num_transfers) << ctx;
}

std::string StateString(const State& s) { return s.Key(); }

struct Compared {
  int exchanges = 0, permutes = 0, with_zero = 0;
  int nested = 0;  // on meshes of power-of-two axes (the count's bit-test path)
  int nested_with_zero = 0;
};

// Case c's exchanges in closed form against the pair visits: the source (reductions done,
// when any) into the target, then `landings` random states into random landings (every
// rank wanting), each also counted as a receiving side completed by the sending side.
// Unified cases only (the count needs one mesh).
void CompareCase(std::mt19937& rng, int index, const redist_test::Case& c, int landings,
                 Compared* out) {
  Result<Problem> pr = redist_internal::MakeProblem(c.from, c.to, 4);
  ASSERT_TRUE(pr.ok()) << pr.status().message();
  const Problem& p = *pr;
  if (!p.unified) return;
  const std::string ctx =
      "case " + std::to_string(index) + ": " + c.from.DebugString() + " -> " + c.to.DebugString();
  State src = p.src;
  src.reduce_mask = 0;
  const redist_internal::Boxes sb = BoxesOf(p, src);
  const Exchange slow =
      ComputeExchange(p, src, sb, p.target().lo, p.target().hi, p.active, /*record=*/false);
  Exchange fast;
  ASSERT_TRUE(CountExchange(p, src, &p.tgt, {.zero_mask = p.new_partial_mask}, &fast)) << ctx;
  ExpectSameCounts(slow, fast, ctx + " (into the target)");
  // Without a landing state the one counter enumerates the per-rank boxes instead.
  const redist_internal::ExchangeBoxes by_rank{&sb, &p.target(), &p.active};
  Exchange enumerated;
  ASSERT_TRUE(CountExchange(p, src, nullptr,
                            {.zero_mask = p.new_partial_mask, .enumerate = &by_rank}, &enumerated));
  ExpectSameCounts(fast, enumerated, ctx + " (enumerated)");
  Exchange receiving;  // the receiving side alone (the lower bound's move part)
  ASSERT_TRUE(CountExchange(p, src, &p.tgt,
                            {.zero_mask = p.new_partial_mask, .part = CountPart::kReceiving},
                            &receiving));
  EXPECT_EQ(receiving.recv, slow.recv) << ctx;
  EXPECT_EQ(receiving.num_transfers, slow.num_transfers) << ctx;
  EXPECT_EQ(receiving.max_recv_peers, slow.max_recv_peers) << ctx;
  // The planner takes the bound from a source without pending reductions from these.
  EXPECT_EQ(receiving.recv, redist_internal::LowerBound(p, src, sb)) << ctx;
  // Completed by the sending side: the whole count.
  ASSERT_TRUE(CountExchange(
      p, src, &p.tgt, {.zero_mask = p.new_partial_mask, .part = CountPart::kSending}, &receiving));
  ExpectSameCounts(slow, receiving, ctx + " (into the target, completed)");
  ++out->exchanges;
  out->permutes += slow.is_permute;
  out->with_zero += p.new_partial_mask != 0;
  out->nested += redist_internal::HasNestedBlocks(p);
  out->nested_with_zero += redist_internal::HasNestedBlocks(p) && p.new_partial_mask != 0;
  const std::vector<char> all(p.num_ranks, 1);
  for (int k = 0; k < landings; ++k) {
    const State from = RandomState(rng, p);
    const State into = RandomState(rng, p);
    const redist_internal::Boxes fb = BoxesOf(p, from);
    const redist_internal::Boxes ib = BoxesOf(p, into);
    const Exchange slow2 = ComputeExchange(p, from, fb, ib.lo, ib.hi, all, /*record=*/false);
    Exchange fast2;
    ASSERT_TRUE(CountExchange(p, from, &into, {}, &fast2)) << ctx;
    ExpectSameCounts(slow2, fast2, ctx + " " + StateString(from) + " -> " + StateString(into));
    Exchange completed;
    ASSERT_TRUE(CountExchange(p, from, &into, {.part = CountPart::kReceiving}, &completed));
    ASSERT_TRUE(CountExchange(p, from, &into, {.part = CountPart::kSending}, &completed));
    ExpectSameCounts(slow2, completed, ctx + " (completed) " + StateString(from));
    ++out->exchanges;
    out->nested += redist_internal::HasNestedBlocks(p);
    out->permutes += slow2.is_permute;
  }
}

TEST(RedistributionCountTest, ClosedFormCountsEqualThePairVisits) {
  std::mt19937 rng(2024);
  Compared n;
  for (int i = 0; i < 4000 && !HasFailure(); ++i) {
    CompareCase(
        rng, i,
        redist_test::RandomCase(rng, /*partial_ok=*/i % 3 == 0, i % 4 == 0 ? 64 : 16, 1 + i % 3),
        /*landings=*/3, &n);
  }
  std::printf(
      "[ summary  ] %d exchanges compared (%d permutes, %d with new partial sums, %d on "
      "power-of-two axes, %d of them with new partial sums)\n",
      n.exchanges, n.permutes, n.with_zero, n.nested, n.nested_with_zero);
  EXPECT_GT(n.exchanges, 8000);
  // Both paths of the count: tables per block (any axis lengths) and bit tests (powers of two).
  EXPECT_GT(n.nested, 1000);
  EXPECT_LT(n.nested, n.exchanges - 1000);
  EXPECT_GT(n.nested_with_zero, 15);
  EXPECT_GT(n.permutes, 100);
  EXPECT_GT(n.with_zero, 50);
}

// The receiving count with a cap (the search's bound check): on nested blocks it reports
// exactly whether some rank receives more than its cap allows, and when none does its counts
// are the whole receiving side; elsewhere it never reports and counts in full.
TEST(RedistributionCountTest, ACappedCountFindsTheRanksOverTheirCap) {
  std::mt19937 rng(77);
  int reported = 0, within = 0;
  for (int i = 0; i < 1500 && !HasFailure(); ++i) {
    const redist_test::Case c = redist_test::RandomCase(rng, /*partial_ok=*/false, 64, 1 + i % 3);
    Result<Problem> pr = redist_internal::MakeProblem(c.from, c.to, 4);
    ASSERT_TRUE(pr.ok()) << pr.status().message();
    const Problem& p = *pr;
    if (!p.unified || p.src.reduce_mask) continue;
    const State from = RandomState(rng, p);
    Exchange full;
    ASSERT_TRUE(CountExchange(
        p, from, &p.tgt, {.zero_mask = p.new_partial_mask, .part = CountPart::kReceiving}, &full));
    // Caps around the counts: some ranks just within, some just over (one time in three none).
    std::vector<int64_t> bound(p.num_ranks), used(p.num_ranks), more(p.num_ranks);
    const bool none_over = i % 3 == 0;
    bool over = false;
    for (int r = 0; r < p.num_ranks; ++r) {
      used[r] = std::uniform_int_distribution<int64_t>(0, 64)(rng);
      more[r] = std::uniform_int_distribution<int64_t>(0, 64)(rng);
      const bool rank_over = !none_over && std::bernoulli_distribution(0.05)(rng);
      bound[r] = full.recv[r] + used[r] + more[r] - (rank_over ? 1 : 0);
      over |= rank_over;
    }
    redist_internal::RecvCap cap;
    cap.bound = bound.data();
    cap.used = used.data();
    cap.more = more.data();
    Exchange capped;
    bool exceeds = true;
    ASSERT_TRUE(CountExchange(p, from, &p.tgt,
                              {.zero_mask = p.new_partial_mask,
                               .part = CountPart::kReceiving,
                               .cap = &cap,
                               .exceeds = &exceeds},
                              &capped));
    const std::string ctx = c.from.DebugString() + " -> " + c.to.DebugString();
    if (redist_internal::HasNestedBlocks(p) && p.new_partial_mask == 0) {
      EXPECT_EQ(exceeds, over) << ctx;
    } else {
      EXPECT_FALSE(exceeds) << ctx;
    }
    if (!exceeds) {
      EXPECT_EQ(capped.recv, full.recv) << ctx;
      EXPECT_EQ(capped.max_recv, full.max_recv) << ctx;
      EXPECT_EQ(capped.max_recv_peers, full.max_recv_peers) << ctx;
      EXPECT_EQ(capped.num_transfers, full.num_transfers) << ctx;
    }
    reported += exceeds;
    within += !exceeds && over == false;
  }
  EXPECT_GT(reported, 100);
  EXPECT_GT(within, 100);
}

// Pending reductions are not covered: the caller keeps the pair visits.
TEST(RedistributionCountTest, RefusesPendingReductions) {
  const DeviceMesh m = redist_test::MakeMesh({2, 2}, {"a", "b"});
  const Layout from = redist_test::MakeLayout(m, {{0}, {}}, {1}, {4, 4});
  const Layout to = redist_test::MakeLayout(m, {{}, {0}}, {}, {4, 4});
  Result<Problem> p = redist_internal::MakeProblem(from, to, 4);
  ASSERT_TRUE(p.ok());
  ASSERT_NE(p->src.reduce_mask, 0u);
  Exchange ex;
  EXPECT_FALSE(CountExchange(*p, p->src, &p->tgt, {}, &ex));
}

// The same on large meshes (256 and 1024 ranks, up to 6 axes, explicit rank lists among
// them), where the count's per-dimension tables are far smaller than the mesh and its walk
// moves the largest axis innermost.
// A mesh of exactly `devices` ranks (a power of two) over 3 to 6 axes of 2 to 32, with an
// explicit (shuffled) rank list one time in three.
DeviceMesh LargeMesh(std::mt19937& rng, int64_t devices) {
  const int num_axes = std::uniform_int_distribution<int>(3, 6)(rng);
  int log2 = 0;
  while ((int64_t{1} << log2) < devices) ++log2;
  std::vector<int> bits(num_axes, 1);  // every axis at least 2
  for (int b = num_axes; b < log2; ++b) {
    int& axis = bits[std::uniform_int_distribution<int>(0, num_axes - 1)(rng)];
    if (axis < 5) ++axis;
  }
  Shape shape;
  std::vector<std::string> names;
  int64_t total = 1;
  for (int a = 0; a < num_axes; ++a) {
    shape.push_back(int64_t{1} << bits[a]);
    total *= shape.back();
    names.push_back(std::string(1, static_cast<char>('a' + a)));
  }
  std::vector<int> ranks;
  if (std::bernoulli_distribution(1.0 / 3)(rng)) {
    ranks.resize(total);
    std::iota(ranks.begin(), ranks.end(), 0);
    std::shuffle(ranks.begin(), ranks.end(), rng);
  }
  return redist_test::MakeMesh(shape, names, ranks);
}

// Case `index` on mesh m from the two assignments, with a shape both divide (one random
// landing besides the target).
void CompareLargeCase(std::mt19937& rng, int index, const DeviceMesh& m, const DimAxes& d1,
                      const std::vector<int>& p1, const DimAxes& d2, const std::vector<int>& p2,
                      Compared* n) {
  Shape shape(d1.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    shape[d] = redist_test::Lcm(m.GroupSize(d1[d]), m.GroupSize(d2[d])) *
               std::uniform_int_distribution<int64_t>(1, 3)(rng);
  }
  CompareCase(
      rng, index,
      {redist_test::MakeLayout(m, d1, p1, shape), redist_test::MakeLayout(m, d2, p2, shape)},
      /*landings=*/1, n);
}

TEST(RedistributionCountTest, ClosedFormCountsEqualThePairVisitsOnLargeMeshes) {
  std::mt19937 rng(4096);
  Compared n;
  for (int i = 0; i < 60 && !HasFailure(); ++i) {
    const DeviceMesh m = LargeMesh(rng, i % 2 ? 1024 : 256);
    const int rank = std::uniform_int_distribution<int>(1, 3)(rng);
    DimAxes d1, d2;
    std::vector<int> p1, p2;
    redist_test::RandomAssignment(rng, m, rank, /*partial_ok=*/i % 3 == 0, &d1, &p1, 0.7);
    redist_test::RandomAssignment(rng, m, rank, i % 5 == 0, &d2, &p2);
    CompareLargeCase(rng, i, m, d1, p1, d2, p2, &n);
  }
  std::printf(
      "[ summary  ] %d exchanges compared on 256 and 1024 ranks (%d with new partial sums)\n",
      n.exchanges, n.with_zero);
  EXPECT_EQ(n.exchanges, 120);  // every case unified (one mesh)
  EXPECT_EQ(n.nested, 120);     // power-of-two axes: the bit-test path
}

// The same with new partial sums in the target (the ranks that end as zero addends receive
// nothing), on large meshes of power-of-two axes: the nested count's masks of wanting and
// sending ranks and its separating axes over the wanting ranks.
TEST(RedistributionCountTest, ClosedFormCountsWithNewPartialSumsOnLargeMeshes) {
  std::mt19937 rng(8192);
  Compared n;
  for (int i = 0; i < 600 && n.with_zero < 40 && !HasFailure(); ++i) {
    const DeviceMesh m = LargeMesh(rng, i % 2 ? 1024 : 256);
    const int rank = std::uniform_int_distribution<int>(1, 3)(rng);
    DimAxes d1, d2;
    std::vector<int> p1, p2;
    redist_test::RandomAssignment(rng, m, rank, /*partial_ok=*/false, &d1, &p1, 0.7);
    redist_test::RandomAssignment(rng, m, rank, /*partial_ok=*/true, &d2, &p2);
    if (p2.empty()) continue;
    CompareLargeCase(rng, i, m, d1, p1, d2, p2, &n);
  }
  std::printf("[ summary  ] %d exchanges compared, %d into targets with new partial sums\n",
              n.exchanges, n.with_zero);
  EXPECT_EQ(n.with_zero, 40);
  EXPECT_EQ(n.nested_with_zero, 40);
}

}  // namespace
}  // namespace shardscope

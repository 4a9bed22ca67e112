// A fixed, seeded subset of random redistributions executed under mpirun: every rank checks
// that it ends with exactly its target shard and received exactly the planned bytes.
//   mpirun -np 8 engine_redistribution_mpi
#include <cmath>
#include <cstdio>
#include <random>

#include "shardscope/communicator.h"
#include "shardscope/dist_trainer.h"
#include "shardscope/redistribution/redistribution.h"

using namespace shardscope;

namespace {

// A random mesh over `n` devices: 1–3 axes, sometimes an explicit rank list.
DeviceMesh RandomMesh(int n, std::mt19937& rng) {
  Shape shape;
  std::vector<std::string> names;
  int rest = n;
  while (rest > 1 && shape.size() < 3) {
    const int f = (rest % 2 == 0 && rng() % 3) ? 2 : rest;
    const int size = (rest % 4 == 0 && rng() % 2) ? 4 : f;
    shape.push_back(size);
    names.push_back(std::string(1, static_cast<char>('a' + names.size())));
    rest /= size;
  }
  if (rest > 1) {
    shape.push_back(rest);
    names.push_back(std::string(1, static_cast<char>('a' + names.size())));
  }
  std::vector<int> ranks;
  if (rng() % 3 == 0) {
    for (int i = 0; i < n; ++i) ranks.push_back(i);
    std::shuffle(ranks.begin(), ranks.end(), rng);
  }
  return DeviceMesh::Create(shape, names, ranks).value();
}

// A random valid layout of `shape` on `mesh`; partial sums only when `partial`.
Layout RandomLayout(const DeviceMesh& mesh, const Shape& shape, bool partial, std::mt19937& rng) {
  for (;;) {
    DimAxes dims(shape.size());
    std::vector<int> parts;
    for (int a = 0; a < mesh.num_axes(); ++a) {
      const int pick = static_cast<int>(rng() % (shape.size() + 2));
      if (pick < static_cast<int>(shape.size()))
        dims[pick].push_back(a);
      else if (pick == static_cast<int>(shape.size()) && partial)
        parts.push_back(a);
    }
    auto l = Layout::Create(mesh, dims, parts, shape);
    if (l.ok()) return *l;
  }
}

}  // namespace

int main() {
  auto world_or = MpiWorld();
  if (!world_or.ok()) {
    std::fprintf(stderr, "error: %s\n", world_or.status().message().c_str());
    return 1;
  }
  Communicator& world = **world_or;
  const int n = world.size(), rank = world.rank();
  std::mt19937 rng(2026);  // the same cases on every rank
  int passed = 0, failed = 0;
  for (int c = 0; c < 200; ++c) {
    const Shape shape = {8, 4 * (1 + static_cast<int64_t>(rng() % 2)), 2};
    const DeviceMesh from_mesh = RandomMesh(n, rng);
    const DeviceMesh to_mesh = rng() % 2 ? from_mesh : RandomMesh(n, rng);
    const Layout from = RandomLayout(from_mesh, shape, true, rng);
    const Layout to = RandomLayout(to_mesh, shape, false, rng);
    std::vector<float> values(NumElements(shape));
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 97) - 40.0f;
    const Tensor whole = Tensor::FromVector(shape, values);
    auto plan = PlanRedistribution(from, to, CostModel{});
    std::string error;
    if (!plan.ok()) {
      error = plan.status().message();
    } else {
      // Source: the first rank of each partial group holds the block, the others zeros.
      const Layout plain = Layout::Create(from.mesh(), from.dims_axes(), {}, shape).value();
      Tensor in = ExtractShard(whole, plain, rank);
      if (from.is_partial() && from.PartialGroup(rank)[0] != rank) in.Fill(0.0f);
      Tensor out(to.ShardShape());
      const CommStats before = world.stats();
      Status st = ExecuteRedistribution(*plan, world, in, &out);
      const int64_t received = world.stats().bytes_received - before.bytes_received;
      const Tensor expect = ExtractShard(whole, to, rank);
      if (!st.ok()) {
        error = st.message();
      } else if (received != plan->recv_bytes[rank]) {
        error = "received " + std::to_string(received) + " B, planned " +
                std::to_string(plan->recv_bytes[rank]);
      } else {
        for (int64_t i = 0; i < expect.size() && error.empty(); ++i) {
          if (std::abs(out[i] - expect[i]) > 1e-5f)
            error = "element " + std::to_string(i) + " differs";
        }
      }
    }
    if (!error.empty()) {
      std::fprintf(stderr, "rank %d case %d %s -> %s: %s\n", rank, c, from.ToString().c_str(),
                   to.ToString().c_str(), error.c_str());
    }
    std::vector<float> mine = {error.empty() ? 1.0f : 0.0f}, all(n);
    if (!world.AllGather(mine, all).ok()) return 1;
    bool ok = true;
    for (float f : all) ok = ok && f == 1.0f;
    (ok ? passed : failed)++;
  }
  if (rank == 0) std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

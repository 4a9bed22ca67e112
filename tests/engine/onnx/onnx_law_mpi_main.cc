// The correctness law under mpirun on models exported from PyTorch (onnx_law_cases.h):
//   mpirun -np 4 onnx_law_mpi
#include <cstdio>
#include <memory>

#include "../partition/law_mpi_cases.h"
#include "onnx_law_cases.h"

using namespace shardscope;

int main() {
  auto world_or = MpiWorld();
  if (!world_or.ok()) {
    std::fprintf(stderr, "error: %s\n", world_or.status().message().c_str());
    return 1;
  }
  Communicator& world = **world_or;
  auto data = onnx_law::Mnist();
  if (!data.ok()) {
    std::fprintf(stderr, "error: %s\n", data.status().message().c_str());
    return 1;
  }
  std::vector<testing_law::Case> cases;
  for (auto& [name, text] : onnx_law::Cases(world.size())) {
    auto mf = onnx_law::Parse(text);
    if (!mf.ok()) {
      std::fprintf(stderr, "error: %s: %s\n", name.c_str(), mf.status().message().c_str());
      return 1;
    }
    auto file = std::make_shared<ModelFile>(std::move(*mf));
    cases.push_back(
        {name, [file] { return file->Build(onnx_law::kBatch); }, *data, onnx_law::kBatch, {}});
  }
  return testing_law::RunMpiCases(world, cases);
}

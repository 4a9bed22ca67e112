// The figures a run file holds, checked as a user meets them (issue 17): each redistribution
// step on its own mesh, the runners-up's breakdown, one clean sentence per provenance, the
// step time against each rank's communication, a placed run's bytes, plan's one predicted
// step time, and rank groups kept as patterns that expand to the mesh's groups.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_shardscope.h"
#include "shardscope/layout/mesh.h"
#include "shardscope/store/figures.h"
#include "shardscope/store/reader.h"

namespace {

using shardscope_cli_test::Output;
using shardscope_cli_test::Shardscope;

std::string Sample(const std::string& name) {
  return std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/" + name;
}
const std::string kMnist = std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist";

class RunFigures : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("shardscope-figures-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string File(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

std::unique_ptr<shardscope::store::RunReader> OpenRun(const std::string& path) {
  auto reader = shardscope::store::RunReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  return reader.ok() ? std::move(reader).value() : nullptr;
}

// Runs `shardscope ARGS --record DB` and opens the run file (nullptr, with a failure, if not).
std::unique_ptr<shardscope::store::RunReader> Record(const std::string& args, const std::string& db,
                                                     Output* out) {
  *out = Shardscope(args + " --record " + db);
  EXPECT_EQ(out->code, 0) << out->text;
  return out->code == 0 ? OpenRun(db) : nullptr;
}

// The axis names in a printed layout ("[a.b | -] P(c)" -> a, b, c).
std::vector<std::string> AxesNamed(const std::string& layout) {
  std::vector<std::string> names;
  std::string word;
  for (size_t i = 0; i <= layout.size(); ++i) {
    const char c = i < layout.size() ? layout[i] : ' ';
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      word += c;
      continue;
    }
    if (!word.empty() && !(word == "P" && c == '(')) names.push_back(word);
    word.clear();
  }
  return names;
}

// The run: ffn on 8 devices, searched by propagation, meshes (a=2,b=4) and (b=8).
TEST_F(RunFigures, ShardingPropagationRunRecordsMeshesBreakdownsAndCleanProvenance) {
  Output o;
  auto run = Record("train " + Sample("ffn.yaml") + " --devices 8 --search " +
                        "sharding_propagation --steps 6 --limit 512 --data " + kMnist,
                    File("ffn.db"), &o);
  ASSERT_NE(run, nullptr);
  auto meshes = run->Meshes().value();
  auto redists = run->Redistributions().value();
  ASSERT_FALSE(redists.empty());
  int steps = 0;
  for (const auto& r : redists) {
    for (const auto& s : r.steps) {
      ++steps;
      ASSERT_NE(s.mesh_id, shardscope::store::kNone) << "redistribution " << r.id;
      // The layout is printed on that mesh: every axis it names is one of the mesh's.
      const auto& mesh = meshes.at(static_cast<size_t>(s.mesh_id));
      for (const std::string& axis : AxesNamed(s.layout_after)) {
        EXPECT_NE(std::find(mesh.axis_names.begin(), mesh.axis_names.end(), axis),
                  mesh.axis_names.end())
            << s.layout_after << " on " << mesh.name;
      }
      EXPECT_TRUE(s.mesh_id == r.plan_mesh_id || s.mesh_id == r.to_mesh_id ||
                  s.mesh_id == r.from_mesh_id)
          << mesh.name;
    }
  }
  EXPECT_GT(steps, 0);
  bool propagated = false;
  const auto ops = run->Operators().value();
  for (const auto& op : ops) {
    if (op.provenance.empty()) continue;
    // One sentence that does not repeat the kind, and never a searched operator as "user".
    EXPECT_NE(op.provenance_detail.rfind(op.provenance, 0), 0u) << op.provenance_detail;
    if (op.provenance != "user") {
      EXPECT_EQ(op.provenance_detail.find("user:"), std::string::npos)
          << op.name << ": " << op.provenance_detail;
    }
    if (op.provenance == "propagated") {
      propagated = true;
      EXPECT_EQ(op.provenance_detail.rfind("from operator '", 0), 0u) << op.provenance_detail;
    }
    for (const auto& c : op.candidates) {
      EXPECT_TRUE(c.has_breakdown()) << op.name << " " << c.strategy;
      EXPECT_GE(c.memory_bytes, 0) << op.name << " " << c.strategy;
      EXPECT_NEAR(c.compute_seconds + c.comm_seconds, c.cost, 1e-12 + 1e-9 * c.cost);
    }
  }
  EXPECT_TRUE(propagated);
}

// Step time = the slowest rank's wall time; no rank communicates longer than that, and
// train's "ms/step" is the mean of the recorded step times.
TEST_F(RunFigures, NoRankCommunicatesLongerThanTheStep) {
  Output o;
  auto run = Record(
      "train " + Sample("ffn.yaml") + " --devices 8 --steps 12 --limit 1024 " + "--data " + kMnist,
      File("steps.db"), &o);
  ASSERT_NE(run, nullptr);
  auto steps = run->Steps(1, 1000, /*with_ranks=*/true).value();
  ASSERT_EQ(steps.size(), 12u);
  double total = 0;
  for (const auto& s : steps) {
    double slowest = 0;
    ASSERT_EQ(s.ranks.size(), 8u);
    for (const auto& r : s.ranks) {
      EXPECT_LE(r.comm_seconds, s.seconds) << "step " << s.step << " rank " << r.rank;
      EXPECT_LE(r.compute_seconds + r.comm_seconds, r.wall_seconds)
          << "step " << s.step << " rank " << r.rank;
      EXPECT_GT(r.bytes_recv, 0) << "step " << s.step << " rank " << r.rank;
      slowest = std::max(slowest, r.wall_seconds);
    }
    EXPECT_DOUBLE_EQ(s.seconds, slowest);
    const auto f = shardscope::store::FiguresOf(s);
    EXPECT_LE(f.comm_seconds, f.seconds);
    total += s.seconds;
  }
  const size_t at = o.text.find(" ms/step)");
  ASSERT_NE(at, std::string::npos) << o.text;
  const double printed = std::stod(o.text.substr(o.text.rfind('(', at) + 1));
  EXPECT_NEAR(printed, 1e3 * total / 12, 0.006 + 1e-4 * printed) << o.text;
}

// A placed run sends its cut edges between workers: bytes per step are not zero, measured
// or planned, and its communication stays within the step.
TEST_F(RunFigures, PlacedRunCountsTheBytesBetweenWorkers) {
  Output o;
  auto run = Record("train " + Sample("lenet5_place.yaml") + " --steps 3 --limit 256 " +
                        "--micro-batches 2 --data " + kMnist,
                    File("placed.db"), &o);
  ASSERT_NE(run, nullptr);
  const auto info = run->Run().value();
  const int64_t planned = shardscope::store::PlannedRecvBytesPerStep(
      info.devices, run->Redistributions().value(), run->SendRecvs().value());
  EXPECT_GT(planned, 0);
  const auto steps = run->Steps(1, 100, /*with_ranks=*/true).value();
  for (const auto& s : steps) {
    const auto f = shardscope::store::FiguresOf(s);
    EXPECT_EQ(f.bytes_recv, planned) << "step " << s.step;  // measured = planned, busiest rank
    for (const auto& r : s.ranks) EXPECT_LE(r.comm_seconds, s.seconds) << "rank " << r.rank;
  }
}

// One figure, one name: the run file's predicted step time is what `plan` prints.
TEST_F(RunFigures, PlanRecordsThePricedProgramAsThePrediction) {
  const std::string db = File("plan.db");
  const std::string args =
      "plan " + Sample("ffn.yaml") + " --devices 8 --search sharding_propagation";
  Output json = Shardscope(args + " --json");
  ASSERT_EQ(json.code, 0) << json.text;
  Output rec = Shardscope(args + " --record " + db);
  ASSERT_EQ(rec.code, 0) << rec.text;
  const auto printed = nlohmann::json::parse(json.text);
  auto run = OpenRun(db);
  ASSERT_NE(run, nullptr);
  const auto config = nlohmann::json::parse(run->Run().value().config_json);
  EXPECT_EQ(config["predicted_step_seconds"], printed["predicted_step_seconds"]);
  EXPECT_EQ(config["search_objective_seconds"], printed["search_objective_seconds"]);
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.3f ms", config["predicted_step_seconds"].get<double>() * 1e3);
  EXPECT_NE(rec.text.find(std::string("predicted step time: ") + ms), std::string::npos)
      << rec.text;
}

// Rank groups of collectives are stored as grids, and each expands to the plan mesh's groups
// along the step's axes; the file of a 1024-device plan stays small.
TEST_F(RunFigures, PlanStoresCollectiveGroupsAsGridsOfTheMesh) {
  const std::string db = File("big.db");
  Output o =
      Shardscope("plan " + Sample("network3.yaml") + " --devices 1024 --batch 1024 --record " + db);
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_LT(std::filesystem::file_size(db), 4u << 20);
  auto run = OpenRun(db);
  ASSERT_NE(run, nullptr);
  const auto meshes = run->Meshes().value();
  int grids = 0;
  const auto redists = run->Redistributions().value();
  for (const auto& r : redists) {
    const auto& m = meshes.at(static_cast<size_t>(r.plan_mesh_id));
    auto mesh = shardscope::DeviceMesh::Create(shardscope::Shape(m.shape.begin(), m.shape.end()),
                                               m.axis_names);
    ASSERT_TRUE(mesh.ok());
    for (const auto& s : r.steps) {
      if (!s.groups.is_grid()) continue;
      ++grids;
      const std::vector<int> axes(s.axes.begin(), s.axes.end());
      std::vector<std::vector<int64_t>> expected;
      for (const auto& g : mesh->Groups(axes)) expected.emplace_back(g.begin(), g.end());
      EXPECT_EQ(s.groups.Expand(), expected) << "redistribution " << r.id << " " << s.kind;
    }
  }
  EXPECT_GT(grids, 0);
}

}  // namespace

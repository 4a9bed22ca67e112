// Issue 21's ten questions, each answered by one CLI command on recorded runs and checked
// against the run file (Qt Test, one function per question). Runs: an 8-device FFN with the
// model file's strategies and propagation (timed steps), the same data-parallel, a searched
// plan, and LeNet-5 placed on 5 workers.
#include <QTest>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "run_shardscope.h"
#include "shardscope/store/reader.h"

using nlohmann::json;
namespace store = shardscope::store;

namespace {

using shardscope_cli_test::Output;
using shardscope_cli_test::Shardscope;

// The JSON a command prints (stdout only).
json Json(const std::string& args) {
  return json::parse(Shardscope(args, /*merge_stderr=*/false).text, nullptr, false);
}

std::unique_ptr<store::RunReader> Open(const std::string& path) {
  auto r = store::RunReader::Open(path);
  return r.ok() ? std::move(r).value() : nullptr;
}

}  // namespace

class QuestionsTest : public QObject {
  Q_OBJECT

 private:
  std::filesystem::path dir_;
  std::string File(const std::string& name) const { return (dir_ / name).string(); }
  std::string Sample(const std::string& name) const {
    return std::string(SHARDSCOPE_SOURCE_DIR) + "/samples/models/" + name;
  }
  const std::string data_ =
      " --limit 512 --data " + std::string(SHARDSCOPE_DATASETS_DIR) + "/mnist";

 private slots:
  void initTestCase() {
    dir_ = std::filesystem::temp_directory_path() /
           ("shardscope-questions-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    const std::string ffn = "train " + Sample("ffn.yaml") + " --devices 8 --steps 3" + data_;
    for (const auto& [args, db] : std::vector<std::pair<std::string, std::string>>{
             {ffn + " --timing-every 3", "ffn.db"},
             {ffn + " --ignore-parallel", "ffn_dp.db"},
             {"plan " + Sample("ffn.yaml") + " --devices 8 --search dynamic_programming",
              "plan.db"},
             {"train " + Sample("lenet5_place.yaml") + " --steps 2" + data_, "placed.db"}}) {
      const Output o = Shardscope(args + " --record " + File(db));
      QVERIFY2(o.code == 0, o.text.c_str());
    }
  }
  void cleanupTestCase() { std::filesystem::remove_all(dir_); }

  // (1) Why was this redistribution inserted: `inspect RUN --json`, redistributions[].reason.
  void q01_whyWasThisRedistributionInserted() {
    const json j = Json("inspect " + File("ffn.db") + " --json");
    auto run = Open(File("ffn.db"));
    QVERIFY(run);
    const auto redists = run->Redistributions(false).value();
    QVERIFY(!redists.empty());
    QCOMPARE(j.at("redistributions").size(), redists.size());
    for (size_t i = 0; i < redists.size(); ++i) {
      const json& r = j.at("redistributions")[i];
      QCOMPARE(r.at("reason").get<std::string>(), redists[i].reason);
      QVERIFY(!redists[i].reason.empty());
      // The reason names the layouts involved: what is needed against what is given.
      QVERIFY2(redists[i].reason.find("needs") != std::string::npos, redists[i].reason.c_str());
    }
  }

  // (2) Which ranks hold block (i,j) of tensor T: `layout --run RUN --tensor T --json`. For
  // layouts of one axis (or none) per dimension, a rank's block along a dimension is its
  // coordinate on that axis of the row-major mesh the run file records.
  void q02_whichRanksHoldBlockOfTensor() {
    auto run = Open(File("ffn.db"));
    QVERIFY(run);
    std::map<int64_t, store::MeshRecord> meshes;
    const auto all_meshes = run->Meshes().value();
    for (const auto& m : all_meshes) meshes[m.id] = m;
    const auto tensors = run->Tensors().value();
    int checked = 0;
    for (const auto& t : tensors) {
      if (t.kind != "parameter" || t.shape.size() != 2) continue;
      const json j = Json("layout --run " + File("ffn.db") + " --tensor " + t.name + " --json");
      QCOMPARE(j.at("layout").get<std::string>(), t.layout);
      const store::MeshRecord& mesh = meshes.at(t.mesh_id);
      // "[k | n]" -> {"k", "n"}; "-" for not split.
      std::vector<std::string> dims;
      std::string word;
      for (char c : t.layout.substr(1, t.layout.find(']') - 1) + "|") {
        if (c == '|') {
          dims.push_back(word);
          word.clear();
        } else if (c != ' ') {
          word += c;
        }
      }
      QCOMPARE(dims.size(), size_t{2});
      if (t.layout.find('.') != std::string::npos) continue;  // several axes on one dimension
      int64_t devices = 1;
      for (int64_t d : mesh.shape) devices *= d;
      QCOMPARE(static_cast<int64_t>(j.at("ranks").size()), devices);
      for (const json& r : j.at("ranks")) {
        const int64_t rank = r.at("rank");
        for (size_t d = 0; d < 2; ++d) {
          int64_t expected = 0;  // "-": one block
          int64_t stride = 1;
          for (size_t a = mesh.shape.size(); a-- > 0;) {
            if (mesh.axis_names[a] == dims[d]) expected = (rank / stride) % mesh.shape[a];
            stride *= mesh.shape[a];
          }
          QCOMPARE(r.at("block")[d].get<int64_t>(), expected);
        }
      }
      ++checked;
    }
    QVERIFY(checked >= 5);
  }

  // (3) What does rank r hold and how much memory: `inspect RUN --rank r --json`.
  void q03_whatDoesRankHold() {
    auto run = Open(File("ffn.db"));
    QVERIFY(run);
    for (int rank : {0, 5}) {
      const json j =
          Json("inspect " + File("ffn.db") + " --rank " + std::to_string(rank) + " --json");
      const auto last = run->RankSeries(rank).value().back().second;
      const json& m = j.at("memory");
      QCOMPARE(m.at("peak_bytes").get<int64_t>(), last.peak_bytes);
      // The kinds add up to the peak: every buffer lives for the whole run.
      QCOMPARE(m.at("param_bytes").get<int64_t>() + m.at("grad_bytes").get<int64_t>() +
                   m.at("optimizer_bytes").get<int64_t>() + m.at("activation_bytes").get<int64_t>(),
               last.peak_bytes);
      QVERIFY(m.at("param_bytes").get<int64_t>() > 0);
    }
  }

  // (4) Which collective runs on which rank group: `inspect RUN --json`, each step's kind and
  // groups; a collective along mesh axes has groups of the product of those axes' sizes.
  void q04_whichCollectiveOnWhichGroup() {
    const json j = Json("inspect " + File("ffn.db") + " --json");
    auto run = Open(File("ffn.db"));
    QVERIFY(run);
    std::map<int64_t, std::vector<int64_t>> shapes;
    const auto all1 = run->Meshes().value();
    for (const auto& m : all1) shapes[m.id] = m.shape;
    const auto redists = run->Redistributions().value();
    int collectives = 0;
    for (size_t i = 0; i < redists.size(); ++i) {
      for (size_t k = 0; k < redists[i].steps.size(); ++k) {
        const auto& step = redists[i].steps[k];
        const json& s = j.at("redistributions")[i].at("steps")[k];
        QCOMPARE(s.at("kind").get<std::string>(), step.kind);
        QVERIFY(s.at("groups") == json(step.groups.Expand()));
        if (step.kind != "all-gather" && step.kind != "all-reduce" && step.kind != "all-to-all")
          continue;
        int64_t size = 1;
        for (int64_t a : step.axes) size *= shapes.at(redists[i].plan_mesh_id).at(a);
        std::set<int64_t> seen;
        for (const json& g : s.at("groups")) {
          QCOMPARE(static_cast<int64_t>(g.size()), size);
          for (int64_t r : g) QVERIFY(seen.insert(r).second);  // each rank in one group
        }
        ++collectives;
      }
    }
    QVERIFY(collectives > 0);
  }

  // (5) Where did this strategy come from: `inspect RUN --json`, operators[].provenance.
  void q05_whereDidThisStrategyComeFrom() {
    const json j = Json("inspect " + File("ffn.db") + " --json");
    std::map<int64_t, std::string> names;
    for (const json& o : j.at("operators"))
      names[o.at("id").get<int64_t>()] = o.at("name").get<std::string>();
    int propagated = 0;
    for (const json& o : j.at("operators")) {
      if (o.at("is_backward")) continue;
      const std::string name = o.at("name");
      if (name == "dense1.matmul" || name == "dense3.matmul") QVERIFY(o.at("provenance") == "user");
      if (o.at("provenance") == "propagated") {
        QVERIFY(!o.at("provenance_op").is_null());
        QVERIFY(names.count(o.at("provenance_op").get<int64_t>()));  // from an operator of the run
        ++propagated;
      }
    }
    QVERIFY(propagated > 0);
  }

  // (6) What would the runner-up cost, with its breakdown: `inspect PLAN --json`,
  // operators[].candidates (the chosen one first).
  void q06_whatWouldTheRunnerUpCost() {
    const json j = Json("inspect " + File("plan.db") + " --json");
    int runners_up = 0;
    for (const json& o : j.at("operators")) {
      const json& c = o.at("candidates");
      for (size_t k = 1; k < c.size(); ++k) {
        if (c[k].at("compute_seconds").is_null()) continue;
        ++runners_up;
        QVERIFY(c[k].at("cost").get<double>() >= c[0].at("cost").get<double>() - 1e-12);
        QVERIFY(c[k].at("compute_seconds").get<double>() >= 0);
        QVERIFY(c[k].at("comm_seconds").get<double>() >= 0);
      }
    }
    QVERIFY(runners_up > 0);
  }

  // (7) How far is this plan from the byte lower bound: `inspect RUN --json`.
  void q07_howFarFromTheByteLowerBound() {
    const json j = Json("inspect " + File("ffn.db") + " --json");
    int64_t bytes = 0, bound = 0;
    for (const json& r : j.at("redistributions")) {
      QVERIFY(r.at("bytes").get<int64_t>() >= r.at("lower_bound_bytes").get<int64_t>());
      bytes += r.at("bytes").get<int64_t>();
      bound += r.at("lower_bound_bytes").get<int64_t>();
    }
    QCOMPARE(j.at("redistribution_totals").at("bytes").get<int64_t>(), bytes);
    QCOMPARE(j.at("redistribution_totals").at("lower_bound_bytes").get<int64_t>(), bound);
  }

  // (8) Where does step time go, compute against communication, per rank and per operator:
  // `inspect RUN --rank r --json` (timing) on a run with timed steps.
  void q08_whereDoesStepTimeGo() {
    auto run = Open(File("ffn.db"));
    QVERIFY(run);
    const auto step = run->Steps(3, 3, true).value().at(0);
    for (int rank = 0; rank < 8; ++rank) {
      const json t =
          Json("inspect " + File("ffn.db") + " --rank " + std::to_string(rank) + " --json")
              .at("timing");
      QCOMPARE(t.at("step").get<int64_t>(), 3);
      const double compute = t.at("compute_seconds"), comm = t.at("comm_seconds");
      QVERIFY(compute > 0);
      QVERIFY(compute + comm <= step.ranks[rank].wall_seconds + 1e-6);
      // Per operator kind: the MatMuls are there, and the kinds' compute sums to the total.
      double sum = 0;
      for (const auto& [kind, v] : t.at("compute_by_kind").items())
        sum += v.at("seconds").get<double>();
      QVERIFY(t.at("compute_by_kind").contains("MatMul"));
      QVERIFY(std::abs(sum - compute) < 1e-9);
      double collectives = 0;
      for (const auto& [kind, v] : t.at("collectives").items())
        collectives += v.at("seconds").get<double>();
      QVERIFY(collectives <= comm + 1e-9);  // inside their redistributions
    }
  }

  // (9) What differs between two runs: `diff A B --json`.
  void q09_whatDiffersBetweenTwoRuns() {
    const json d = Json("diff " + File("ffn.db") + " " + File("ffn_dp.db") + " --json");
    auto a = Open(File("ffn.db"));
    auto b = Open(File("ffn_dp.db"));
    QVERIFY(a && b);
    std::map<std::string, std::string> sb;
    const auto all2 = b->Operators(false).value();
    for (const auto& o : all2) sb[o.name] = o.strategy;
    size_t differ = 0;
    const auto all3 = a->Operators(false).value();
    for (const auto& o : all3) differ += !o.is_backward && sb[o.name] != o.strategy;
    QVERIFY(differ > 0);
    QCOMPARE(d.at("strategies").size(), differ);
    QCOMPARE(d.at("a").at("redistributions").get<size_t>(),
             a->Redistributions(false).value().size());
    QCOMPARE(d.at("b").at("redistributions").get<size_t>(),
             b->Redistributions(false).value().size());
    QVERIFY(!d.at("redistributions").empty());
  }

  // (10) Which worker runs which part of the graph, and what crosses between them:
  // `inspect PLACED --rank w --json` (operators on the worker, tensors crossing).
  void q10_whichWorkerRunsWhatAndWhatCrosses() {
    auto run = Open(File("placed.db"));
    QVERIFY(run);
    const auto ops = run->Operators(false).value();
    const auto pairs = run->SendRecvs().value();
    QVERIFY(!pairs.empty());
    std::map<int64_t, int64_t> worker;
    for (const auto& o : ops) worker[o.id] = o.worker;
    const int64_t workers = run->Run().value().devices;
    size_t listed_ops = 0, forward_ops = 0;
    for (const auto& o : ops) forward_ops += !o.is_backward;
    for (int64_t w = 0; w < workers; ++w) {
      const json j =
          Json("inspect " + File("placed.db") + " --rank " + std::to_string(w) + " --json");
      for (const json& name : j.at("operators")) {
        bool found = false;
        for (const auto& o : ops) found = found || (o.name == name && o.worker == w);
        QVERIFY2(found, name.dump().c_str());
        ++listed_ops;
      }
      size_t crossing = 0;
      for (const auto& p : pairs) crossing += p.src_rank == w || p.dst_rank == w;
      QCOMPARE(j.at("crossing").size(), crossing);
      for (const json& c : j.at("crossing")) QVERIFY(c.at("from") == w || c.at("to") == w);
    }
    QCOMPARE(listed_ops, forward_ops);  // every forward operator on exactly one worker
    for (const auto& p : pairs) {
      QCOMPARE(worker[p.src_op], p.src_rank);
      QCOMPARE(worker[p.dst_op], p.dst_rank);
    }
  }
};

QTEST_GUILESS_MAIN(QuestionsTest)
#include "questions_test.moc"

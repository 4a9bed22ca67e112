// Issue 17's reproducers that are run files (SHARDSCOPE_REPRO_DIR, ../shared/repro), each
// through the commands that met them: a clean exit code and message, never a signal or a
// hang (every command runs under `timeout`, the test under CTest's TIMEOUT). And every view
// of the files with hostile names, plus a normal run, rendered to SVG that xmllint accepts.
#include <sqlite3.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "run_command.h"
#include "shardscope/store/display_text.h"
#include "shardscope/viewer/painter.h"
#include "shardscope/viewer/render.h"
#include "shardscope/viewer/run_document.h"
#include "synthetic_run.h"
#include "temp_file.h"

namespace shardscope::viewer {
namespace {

const std::string kBin = SHARDSCOPE_BIN_DIR;
const std::string kRepro = SHARDSCOPE_REPRO_DIR;

std::string Repro(const std::string& name) {
  const std::string path = kRepro + "/" + name;
  EXPECT_TRUE(std::filesystem::exists(path)) << "missing reproducer " << path;
  return path;
}

// Runs a command with a deadline: 124 when it hangs, -1 on a signal.
int RunWithDeadline(const std::string& command, std::string* output) {
  return testing::RunCommand("timeout -k 5 120 " + command, output);
}

std::string Quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool ValidXml(const std::string& svg, std::string* output) {
  return testing::RunCommand("xmllint --noout " + Quoted(svg), output) == 0;
}

TEST(ReproFiles, TimelineOfAZeroLengthOrEndlessStepRendersAndOpens) {
  for (const char* name : {"timeline_zero_step.db", "timeline_null_end.db"}) {
    testing::TempPath out("timeline.svg");
    std::string output;
    EXPECT_EQ(RunWithDeadline(kBin + "/shardscope render " + Repro(name) +
                                  " --view timeline --out " + out.path(),
                              &output),
              0)
        << name << ": " << output;
    EXPECT_TRUE(ValidXml(out.path(), &output)) << name << ": " << output;
    const std::string shots = out.Sibling("shots");
    EXPECT_EQ(RunWithDeadline(kBin + "/shardscope-gui " + Repro(name) + " --screenshots " + shots,
                              &output),
              0)
        << name << ": " << output;
    EXPECT_TRUE(std::filesystem::exists(shots + "/timeline.png")) << name << ": " << output;
  }
}

// Its pipeline spans end in text, which SQLite reads as 0: every span ended before it began,
// the step time was 0 and the timeline's tick loop never ended. The text is damage now; the
// same spans with a numeric 0 draw a timeline that says what it left out.
TEST(ReproFiles, MutatedFileIsRefusedAndItsZeroEndsDraw) {
  testing::TempPath shots("shots");
  std::string output;
  EXPECT_EQ(RunWithDeadline(kBin + "/shardscope-gui " + Repro("gui_crash_on_open.db") +
                                " --screenshots " + shots.path(),
                            &output),
            2)
      << output;
  EXPECT_NE(output.find("column 'end_seconds' holds text where a number belongs"),
            std::string::npos)
      << output;
  const std::string zeros = shots.Sibling("zero_ends.db");
  std::filesystem::copy_file(Repro("gui_crash_on_open.db"), zeros);
  std::filesystem::permissions(zeros, std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::add);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(zeros.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "UPDATE pipeline_span SET end_seconds = 0.0", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  EXPECT_EQ(RunWithDeadline(kBin + "/shardscope-gui " + zeros + " --screenshots " + shots.path(),
                            &output),
            0)
      << output;
  EXPECT_TRUE(std::filesystem::exists(shots.path() + "/timeline.png")) << output;
  const std::string svg = shots.Sibling("timeline.svg");
  EXPECT_EQ(RunWithDeadline(kBin + "/shardscope render " + zeros + " --view timeline --out " + svg,
                            &output),
            0)
      << output;
  auto doc = RunDocument::Open(zeros);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  RenderRequest timeline;
  timeline.view = "timeline";
  timeline.step = -1;
  auto scene = RenderView((*doc)->data(), timeline);
  ASSERT_TRUE(scene.ok()) << scene.status().message();
  ASSERT_EQ(scene->Find("note").size(), 1u);
  EXPECT_TRUE(scene->Find("note")[0]->text.contains("spans without usable times"));
}

TEST(ReproFiles, DamagedFileIsBadInputEverywhere) {
  const std::string file = Repro("damaged_page.db");
  testing::TempPath out("g.svg");
  const std::vector<std::string> commands = {
      kBin + "/shardscope inspect " + file,
      kBin + "/shardscope inspect --json " + file,
      kBin + "/shardscope render " + file + " --view graph --out " + out.path(),
      kBin + "/shardscope-gui " + file + " --screenshots " + out.Sibling("shots"),
      kBin + "/shardscope-gui " + Repro("evil_names.db") + " --compare " + file +
          " --screenshots " + out.Sibling("shots"),
  };
  for (const std::string& command : commands) {
    std::string output;
    EXPECT_EQ(RunWithDeadline(command, &output), 2) << command << "\n" << output;
    EXPECT_NE(output.find("damaged"), std::string::npos) << command << "\n" << output;
  }
}

TEST(ReproFiles, ForeignFileIsBadInput) {
  testing::TempPath out("g.svg");
  for (const std::string& file : {Repro("README.md"), kRepro}) {
    for (const std::string& command :
         {kBin + "/shardscope inspect " + file,
          kBin + "/shardscope render " + file + " --view graph --out " + out.path(),
          kBin + "/shardscope-gui " + file + " --screenshots " + out.Sibling("shots")}) {
      std::string output;
      EXPECT_EQ(RunWithDeadline(command, &output), 2) << command << "\n" << output;
      EXPECT_NE(output.find("not a Shardscope run file"), std::string::npos) << output;
    }
  }
}

// Control characters (C0 but newline, DEL, C1, bidirectional overrides) or invalid UTF-8.
bool HasRawControls(const std::string& text) { return store::HasControls(text, true); }

TEST(ReproFiles, InspectShowsNoRawControlCharacters) {
  for (const char* name : {"evil_names.db", "evil_tensor_ctrlchar.db"}) {
    for (const char* flags : {"", "--json --steps -1"}) {
      std::string output;
      ASSERT_EQ(RunWithDeadline(kBin + "/shardscope inspect " + flags + " " + Repro(name), &output),
                0)
          << output;
      EXPECT_FALSE(HasRawControls(output)) << name << " " << flags;
      EXPECT_NE(output.find("\\u001b[31m"), std::string::npos) << name << " " << flags;
      if (std::string(flags).empty()) {
        EXPECT_LT(output.size(), 200000u) << "100 KB names are cut";
      }
    }
  }
}

// Every view of a run: the graph (three ways), each mesh, each tensor (its map and a rank's),
// each step of each redistribution, the timeline.
std::vector<RenderRequest> EveryView(const RunData& run) {
  std::vector<RenderRequest> views;
  const auto add = [&](const std::string& view, const std::string& target, int step = 0,
                       int rank = -1) {
    RenderRequest r;
    r.view = view;
    r.target = target;
    r.step = step;
    r.rank = rank;
    views.push_back(r);
  };
  add("graph", "");
  views.push_back(views.back());
  views.back().graph.partitioned = true;
  views.push_back(views.back());
  views.back().graph.color_by = ColorBy::kMemory;
  for (const auto& m : run.meshes) add("mesh", std::to_string(m.id));
  for (const auto& t : run.tensors) {
    if (t.layout.empty()) continue;
    add("tensor", t.name);
    add("tensor", t.name, 0, 0);
  }
  for (const auto& r : run.redistributions) {
    for (size_t k = 0; k <= r.steps.size(); ++k) {
      add("redistribution", std::to_string(r.id), static_cast<int>(k));
    }
  }
  add("timeline", "", -1);
  return views;
}

TEST(ReproFiles, EveryViewOfHostileAndNormalRunsIsValidSvg) {
  testing::TempPath normal("normal.db");
  ASSERT_TRUE(testing::WriteSyntheticRun(normal.path(), {.micro_batches = 2}).ok());
  for (const std::string& file :
       {Repro("evil_names.db"), Repro("evil_tensor_ctrlchar.db"), normal.path()}) {
    auto doc = RunDocument::Open(file);
    ASSERT_TRUE(doc.ok()) << doc.status().message();
    int drawn = 0;
    for (const RenderRequest& request : EveryView((*doc)->data())) {
      auto scene = RenderView((*doc)->data(), request);
      if (!scene.ok()) continue;  // e.g. a tensor whose stored layout the file mangled
      const std::string svg = normal.Sibling("view" + std::to_string(drawn++) + ".svg");
      ASSERT_TRUE(SaveScene(*scene, svg).ok());
      std::string output;
      EXPECT_TRUE(ValidXml(svg, &output))
          << file << ": view " << request.view << " " << request.target << "\n"
          << output;
    }
    EXPECT_GE(drawn, 4) << file;
    // And through the command line.
    std::string output;
    const std::string svg = normal.Sibling("cli.svg");
    EXPECT_EQ(RunWithDeadline(kBin + "/shardscope render " + file + " --view graph --out " + svg,
                              &output),
              0)
        << output;
    EXPECT_TRUE(ValidXml(svg, &output)) << file << "\n" << output;
  }
}

TEST(ReproFiles, RenderRefusesBadRequestsAsBadInput) {
  testing::TempPath run("run.db");
  ASSERT_TRUE(testing::WriteSyntheticRun(run.path()).ok());
  const std::string render = kBin + "/shardscope render " + run.path();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {" --view nonsense --out x.svg", "unknown view 'nonsense'"},
      {" --view graph --out x.gif", "unknown picture format 'gif'"},
      {" --view redistribution 999 --out " + run.Sibling("r.svg"), "is not in the run"},
      {" --view redistribution 0 --step -1 --out x.svg", "--step: must be at least 0, got -1"},
      {" --view graph --collapse-above 0 --out x.svg", "must be at least 1, got 0"},
      {" --out x.svg", "--view is required"},
  };
  for (const auto& [args, message] : cases) {
    std::string output;
    EXPECT_EQ(RunWithDeadline(render + args, &output), 2) << args << "\n" << output;
    EXPECT_NE(output.find(message), std::string::npos) << args << "\n" << output;
  }
}

}  // namespace
}  // namespace shardscope::viewer

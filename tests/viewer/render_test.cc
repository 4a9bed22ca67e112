// The headless renderer end to end: real runs recorded by the engine (`shardscope train
// --record`) and a synthetic run, drawn by shardscope-render and through `shardscope render`.
#include "shardscope/viewer/render.h"

#include <gtest/gtest.h>

#include <QImage>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "run_command.h"
#include "shardscope/viewer/painter.h"
#include "synthetic_run.h"
#include "temp_file.h"

namespace shardscope::viewer {
namespace {

const std::string kBin = SHARDSCOPE_BIN_DIR;
const std::string kSource = SHARDSCOPE_SOURCE_DIR;

using testing::RunCommand;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// One engine run per model, recorded once for all tests of the suite.
class RenderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempPath("unused");
    for (const char* model : {"matmul3", "matmul_relu"}) {
      std::string output;
      const std::string run = dir_->Sibling(std::string(model) + ".db");
      const int code = RunCommand(kBin + "/shardscope train " + kSource + "/samples/models/" +
                                      model + ".yaml --devices 8 --steps 2 --limit 256 --data " +
                                      SHARDSCOPE_DATASETS_DIR "/mnist --record " + run,
                                  &output);
      ASSERT_EQ(code, 0) << output;
    }
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string RunFile(const std::string& model) { return dir_->Sibling(model + ".db"); }
  static testing::TempPath* dir_;
};
testing::TempPath* RenderTest::dir_ = nullptr;

TEST_F(RenderTest, GraphSvgHoldsEveryForwardOperatorName) {
  const std::string out = dir_->Sibling("graph.svg");
  std::string output;
  ASSERT_EQ(
      RunCommand(kBin + "/shardscope-render " + RunFile("matmul3") + " --view graph --out " + out,
                 &output),
      0)
      << output;
  auto doc = RunDocument::Open(RunFile("matmul3"));
  ASSERT_TRUE(doc.ok());
  const std::string svg = ReadFile(out);
  ASSERT_NE(svg.find("<svg"), std::string::npos);
  for (const auto& op : (*doc)->data().operators) {
    if (op.is_backward) continue;
    EXPECT_NE(svg.find(">" + op.name + "<"), std::string::npos) << op.name;
  }
  EXPECT_NE(svg.find("all-to-all-v"), std::string::npos);  // a redistribution label
}

TEST_F(RenderTest, ShardscopeRenderForwardsToTheRenderer) {
  const std::string out = dir_->Sibling("mesh.svg");
  std::string output;
  ASSERT_EQ(RunCommand(kBin + "/shardscope render " + RunFile("matmul3") +
                           " --view mesh 1 --axis sp --out " + out,
                       &output),
            0)
      << output;
  const std::string svg = ReadFile(out);
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_NE(svg.find(">" + std::to_string(rank) + "<"), std::string::npos) << rank;
  }
  EXPECT_NE(svg.find("{0,2}"), std::string::npos);  // the sp groups are listed
}

TEST_F(RenderTest, TensorAndRedistributionViewsOfTheSeed002Run) {
  auto doc = RunDocument::Open(RunFile("matmul_relu"));
  ASSERT_TRUE(doc.ok());
  const auto& data = (*doc)->data();
  ASSERT_FALSE(data.redistributions.empty());
  const auto& r = data.redistributions.front();
  const std::string tensor = data.Tensor(r.tensor_id)->name;
  std::string output;
  const std::string png = dir_->Sibling("tensor.png");
  ASSERT_EQ(RunCommand(kBin + "/shardscope-render " + RunFile("matmul_relu") + " --view tensor " +
                           tensor + " --rank 3 --out " + png,
                       &output),
            0)
      << output;
  QImage image(QString::fromStdString(png));
  EXPECT_GT(image.width(), 100);
  const std::string svg = dir_->Sibling("redist.svg");
  ASSERT_EQ(
      RunCommand(kBin + "/shardscope-render " + RunFile("matmul_relu") + " --view redistribution " +
                     std::to_string(r.id) + " --step 0 --out " + svg,
                 &output),
      0)
      << output;
  const std::string text = ReadFile(svg);
  EXPECT_NE(text.find("lower bound"), std::string::npos);
  EXPECT_NE(text.find(r.steps.empty() ? "no communication" : r.steps[0].kind), std::string::npos);
}

// Bad input: exit code 2 and the reason.
TEST_F(RenderTest, BadRequestsFailWithAReason) {
  std::string output;
  EXPECT_EQ(RunCommand(kBin + "/shardscope-render " + RunFile("matmul3") +
                           " --view tensor no_such_tensor --out " + dir_->Sibling("x.svg"),
                       &output),
            2);
  EXPECT_NE(output.find("no_such_tensor"), std::string::npos) << output;
  EXPECT_EQ(RunCommand(kBin + "/shardscope-render " + RunFile("matmul3") +
                           " --view redistribution 0 --step 99 --out " + dir_->Sibling("x.svg"),
                       &output),
            2);
  EXPECT_NE(output.find("out of range"), std::string::npos) << output;
  EXPECT_EQ(RunCommand(kBin + "/shardscope-render " + RunFile("matmul3") + " --view graph --out " +
                           dir_->Sibling("x.gif"),
                       &output),
            2);
  EXPECT_NE(output.find(".svg or .png"), std::string::npos) << output;
  EXPECT_EQ(RunCommand(kBin + "/shardscope-render /nonexistent.db --view graph --out " +
                           dir_->Sibling("x.svg"),
                       &output),
            2);
  EXPECT_NE(output.find("/nonexistent.db"), std::string::npos) << output;
}

TEST_F(RenderTest, ShardscopeRenderWithoutTheRendererSaysHowToGetIt) {
  // The engine binary alone in a directory: `render` cannot find its sibling.
  const std::string lonely = dir_->Sibling("lonely");
  std::filesystem::create_directories(lonely);
  std::filesystem::copy_file(kBin + "/shardscope", lonely + "/shardscope");
  std::string output;
  EXPECT_EQ(RunCommand(lonely + "/shardscope render " + RunFile("matmul3") +
                           " --view graph --out " + dir_->Sibling("x.svg"),
                       &output),
            2);
  EXPECT_NE(output.find(lonely + "/shardscope-render"), std::string::npos) << output;
  EXPECT_NE(output.find("SHARDSCOPE_BUILD_GUI"), std::string::npos) << output;
}

TEST(RenderViewTest, EveryViewOfASyntheticRunPaintsToPngAndSvg) {
  testing::TempPath file("run.db");
  ASSERT_TRUE(testing::WriteSyntheticRun(file.path()).ok());
  auto doc = RunDocument::Open(file.path());
  ASSERT_TRUE(doc.ok());
  for (const auto& [view, target] :
       std::vector<std::pair<std::string, std::string>>{{"graph", ""},
                                                        {"mesh", ""},
                                                        {"mesh", "flat"},
                                                        {"tensor", "block0.op1:0"},
                                                        {"redistribution", "0"}}) {
    RenderRequest request;
    request.view = view;
    request.target = target;
    auto scene = RenderView((*doc)->data(), request);
    ASSERT_TRUE(scene.ok()) << view << " " << target << ": " << scene.status().message();
    const std::string png = file.Sibling(view + target + ".png");
    ASSERT_TRUE(SaveScene(*scene, png).ok());
    QImage image(QString::fromStdString(png));
    ASSERT_FALSE(image.isNull());
    // Something is drawn: not every pixel is the background.
    bool drawn = false;
    for (int y = 0; y < image.height() && !drawn; y += 3) {
      for (int x = 0; x < image.width() && !drawn; x += 3) drawn |= image.pixel(x, y) != 0xffffffff;
    }
    EXPECT_TRUE(drawn) << view;
  }
  RenderRequest unknown;
  unknown.view = "sunset";
  EXPECT_FALSE(RenderView((*doc)->data(), unknown).ok());
}

}  // namespace
}  // namespace shardscope::viewer

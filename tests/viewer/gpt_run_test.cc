// samples/models/gpt.yaml recorded by the engine (`shardscope train --record`) and opened by
// the viewer: `shardscope inspect` lists its operators, `shardscope render` draws its graph
// with the model's own scopes (embedding, layer0, ...), and RunDocument reads it.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "run_command.h"
#include "shardscope/viewer/run_document.h"
#include "temp_file.h"

namespace shardscope::viewer {
namespace {

const std::string kBin = SHARDSCOPE_BIN_DIR;

TEST(GptRun, RecordedRunOpensInTheViewer) {
  testing::TempPath dir("unused");
  const std::string run = dir.Sibling("gpt.db"), svg = dir.Sibling("gpt.svg");
  std::string output;
  ASSERT_EQ(testing::RunCommand(kBin +
                                    "/shardscope train " SHARDSCOPE_SOURCE_DIR
                                    "/samples/models/gpt.yaml --data "
                                    "text:/usr/share/common-licenses/GPL-3 --ignore-parallel "
                                    "--devices 2 "
                                    "--steps 3 --record " +
                                    run,
                                &output),
            0)
      << output;
  ASSERT_EQ(testing::RunCommand(kBin + "/shardscope inspect " + run, &output), 0) << output;
  EXPECT_NE(output.find("gpt: train"), std::string::npos) << output;
  EXPECT_NE(output.find("3 steps"), std::string::npos) << output;
  EXPECT_NE(output.find("embedding.gather"), std::string::npos) << output;

  ASSERT_EQ(testing::RunCommand(
                kBin + "/shardscope render " + run + " --view graph --expand layer0 --out " + svg,
                &output),
            0)
      << output;
  std::ifstream in(svg);
  std::stringstream text;
  text << in.rdbuf();
  // Its two layers fold; the expanded one is drawn in full.
  for (const char* name : {">gather<", ">causal_mask<", ">causal<", ">softmax<", ">label_rows<"})
    EXPECT_NE(text.str().find(name), std::string::npos) << name;

  auto doc = RunDocument::Open(run);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  bool gather = false;
  for (const auto& op : (*doc)->data().operators) gather = gather || op.name == "embedding.gather";
  EXPECT_TRUE(gather);
}

}  // namespace
}  // namespace shardscope::viewer

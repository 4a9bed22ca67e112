// The correctness law on token models: 8 in-process devices equal one device.
#include <gtest/gtest.h>

#include "token_law.h"

namespace shardscope {
namespace {

using namespace testing_law;

constexpr int64_t kBatch = 16;

TEST(TokenLaw, GptDataParallel) {
  auto mf = LoadGpt();
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  auto data = TextData(**mf, kBatch);
  ASSERT_TRUE(data.ok()) << data.status().message();
  Status st = CheckLaw(WithStrategies(*mf, kBatch, {}), *data, kBatch, 8);
  EXPECT_TRUE(st.ok()) << st.message();
}

// The plan of gpt.yaml's parallel section: its Megatron strategies, propagation for the rest.
TEST(TokenLaw, GptSearchedPlan) {
  auto mf = LoadGpt();
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  ASSERT_EQ((*mf)->parallel().devices, 8);
  auto data = TextData(**mf, kBatch);
  ASSERT_TRUE(data.ok()) << data.status().message();
  Status st = CheckLaw(Searched(*mf, kBatch, 8), *data, kBatch, 8);
  EXPECT_TRUE(st.ok()) << st.message();
}

// Megatron's MLP split and a row-split embedding table, whose Gather gives partial sums.
TEST(TokenLaw, GptSharded) {
  auto mf = LoadGpt();
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  auto data = TextData(**mf, kBatch);
  ASSERT_TRUE(data.ok()) << data.status().message();
  Status st = CheckLaw(WithStrategies(*mf, kBatch,
                                      {{"embedding.gather", "((8,1),(1,1))"},
                                       {"layer0.fc1.matmul", "((1,1),(1,8))"},
                                       {"layer0.fc2.matmul", "((1,8),(8,1))"},
                                       {"layer1.scores", "((2,4,1,1),(2,4,1,1))"}}),
                       *data, kBatch, 8);
  EXPECT_TRUE(st.ok()) << st.message();
}

// The ids are redistributed (gathered from the batch split to every rank) as integers.
TEST(TokenLaw, IdsCrossARedistribution) {
  auto mf = LoadIdsThroughIdentity();
  ASSERT_TRUE(mf.ok()) << mf.status().message();
  auto data = TextData(**mf, kBatch);
  ASSERT_TRUE(data.ok()) << data.status().message();
  const BuildFn build = WithStrategies(*mf, kBatch, {{"gather", "((8,1),(1,1))"}});
  // The plan really moves the ids: one redistribution reads the Identity's i32 output.
  auto model = build();
  ASSERT_TRUE(model.ok()) << model.status().message();
  PartitionOptions options;
  options.devices = 8;
  auto program = PlanTrainingProgram(&*model, options);
  ASSERT_TRUE(program.ok()) << program.status().message();
  int int_redistributions = 0;
  for (const DistInstr& in : program->instrs) {
    if (in.kind == DistInstr::Kind::kRedistribute &&
        model->graph.value(program->values[in.inputs[0]].global).dtype == DType::kI32)
      ++int_redistributions;
  }
  EXPECT_GE(int_redistributions, 1);
  Status st = CheckLaw(build, *data, kBatch, 8);
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST(TokenLaw, TextDatasetErrors) {
  EXPECT_EQ(LoadTextDataset("/nonexistent/text.txt", 8).status().code(), StatusCode::kNotFound);
  auto short_text = LoadTextDataset(kTextFile, 1 << 20);
  ASSERT_FALSE(short_text.ok());
  EXPECT_NE(short_text.status().message().find("too short for one sequence"), std::string::npos)
      << short_text.status().message();
  auto vocab = LoadTextDataset(kTextFile, 32, 10);
  ASSERT_FALSE(vocab.ok());
  EXPECT_NE(vocab.status().message().find("distinct bytes, more than the model's 10"),
            std::string::npos)
      << vocab.status().message();
}

// Ids are the distinct bytes in byte order, and each label is the next byte.
TEST(TokenLaw, TextDatasetIsNextByte) {
  auto text = LoadTextDataset(kTextFile, 32);
  ASSERT_TRUE(text.ok()) << text.status().message();
  const std::string& v = text->vocabulary;
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end(), [](char a, char b) {
    return static_cast<unsigned char>(a) < static_cast<unsigned char>(b);
  }));
  const Dataset& d = text->train;
  ASSERT_GT(d.size(), 1);
  EXPECT_EQ(d.labels.shape(), d.images.shape());
  // Within a window the label of position t is the id at t + 1; across windows too.
  for (int64_t i = 0; i + 1 < d.images.size(); ++i)
    EXPECT_EQ(d.labels.ints()[i], d.images.ints()[i + 1]);
  EXPECT_EQ(text->test.size(), (d.size() + text->test.size()) / 10);
}

}  // namespace
}  // namespace shardscope

// The GEMM rate by shape (cost_model.h GemmRateTable): the profile's table round-trips and
// older profiles keep one rate; the searches price a MatMul shard at the rate of its shape,
// and a Conv2D shard as its GEMMs per image at the convolutions' rates (conv_gemm_rates).
#include <gtest/gtest.h>

#include "search/search_graph.h"
#include "shardscope/builder.h"
#include "shardscope/cost/cost_model.h"

namespace shardscope {
namespace {

// A table as calibrate writes it: 100 GF/s at 256^3; 4 rows run at a quarter of it, a
// depth of 4 at half, 4 columns at an eighth.
GemmRateTable Table() {
  GemmRateTable t;
  t.base = 256;
  t.base_flops = 100e9;
  t.rows = {{1, 10e9}, {4, 25e9}, {256, 100e9}};
  t.depth = {{4, 50e9}, {256, 100e9}};
  t.cols = {{4, 12.5e9}, {64, 100e9}};
  return t;
}

// 80 GF/s at 256^3; 8 rows (output channels) run at a quarter of it, small depths and
// column counts at half.
GemmRateTable ConvTable() {
  GemmRateTable t;
  t.base = 256;
  t.base_flops = 80e9;
  t.rows = {{8, 20e9}, {64, 80e9}};
  t.depth = {{4, 40e9}, {64, 80e9}};
  t.cols = {{4, 40e9}, {64, 80e9}};
  return t;
}

// A table with every shape at `rate`.
GemmRateTable Flat(double rate) {
  GemmRateTable t;
  t.base_flops = rate;
  return t;
}

void ExpectSameTable(const GemmRateTable& back, const GemmRateTable& t) {
  EXPECT_EQ(back.base, t.base);
  EXPECT_EQ(back.base_flops, t.base_flops);
  EXPECT_EQ(back.rows, t.rows);
  EXPECT_EQ(back.depth, t.depth);
  EXPECT_EQ(back.cols, t.cols);
}

TEST(Profile, GemmRateTablesRoundTripAndLeaveTheFingerprint) {
  CostModel c;
  c.flops = 70e9;
  const size_t without = c.Fingerprint();
  c.gemm_rates = Table();
  c.conv_gemm_rates = ConvTable();
  EXPECT_EQ(c.Fingerprint(), without);  // the planner's fields only
  auto back = CostModelFromJson(CostModelToJson(c), "profile.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ExpectSameTable(back->gemm_rates, Table());
  ExpectSameTable(back->conv_gemm_rates, ConvTable());
  EXPECT_EQ(back->GemmSeconds(4, 256, 256), c.GemmSeconds(4, 256, 256));
  // An older profile has no table: every GEMM at `flops`, as before.
  auto old = CostModelFromJson(R"({"flops": 5e10})", "old.json");
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_TRUE(old->gemm_rates.empty());
  EXPECT_DOUBLE_EQ(old->GemmSeconds(4, 256, 256), 2.0 * 4 * 256 * 256 / 5e10);
  EXPECT_NE(CostModelToJson(*old).find("flops"), std::string::npos);
  EXPECT_EQ(CostModelToJson(*old).find("gemm_rates"), std::string::npos);
}

TEST(Profile, MalformedGemmRateTablesAreRefused) {
  for (const char* bad :
       {R"({"gemm_rates": {"base_flops": 1e11, "rows": [[4, 1e10], [2, 2e10]]}})",  // order
        R"({"gemm_rates": {"rows": [[4, 1e10]]}})",                                 // no base_flops
        R"({"gemm_rates": {"base_flops": 1e11, "rows": [[0, 1e10]]}})",             // dimension 0
        R"({"gemm_rates": {"base_flops": 1e11, "rows": [[4, -1]]}})",               // negative rate
        R"({"gemm_rates": {"base_flops": 1e11, "width": []}})",                     // unknown field
        R"({"gemm_rates": [1, 2]})"}) {
    auto m = CostModelFromJson(bad, "bad.json");
    EXPECT_FALSE(m.ok()) << bad;
    if (!m.ok()) {
      EXPECT_NE(m.status().message().find("bad.json"), std::string::npos);
    }
  }
}

TEST(SearchGemmRate, InterpolatesInLogDimensionAndHoldsBeyondTheEnds) {
  const GemmRateTable t = Table();
  EXPECT_DOUBLE_EQ(t.Flops(256, 256, 256), 100e9);
  EXPECT_DOUBLE_EQ(t.Flops(4, 256, 256), 25e9);
  EXPECT_DOUBLE_EQ(t.Flops(2, 256, 256), 0.5 * 10e9 + 0.5 * 25e9);  // halfway in log2
  EXPECT_DOUBLE_EQ(t.Flops(1024, 1024, 1024), 100e9);               // beyond the last
  EXPECT_DOUBLE_EQ(t.Flops(256, 1, 256), 50e9);                     // before the first
  // Separable: each small dimension multiplies its efficiency in.
  EXPECT_DOUBLE_EQ(t.Flops(4, 4, 4), 100e9 * 0.25 * 0.5 * 0.125);
}

// x[batch, 256] . w[256, 256], one MatMul; x a data input, or itself a parameter (then the
// backward computes its gradient too).
Graph OneMatMul(int64_t batch, bool x_needs_grad) {
  Graph g;
  Builder b(&g);
  const ValueId x = x_needs_grad ? b.Parameter("x", {batch, 256}, {InitSpec::kNormal, 0.1f})
                                 : b.Input("x", {batch, 256});
  const ValueId w = b.Parameter("w", {256, 256}, {InitSpec::kNormal, 0.1f});
  b.Op(OpKind::kMatMul, "matmul", {x, w});
  EXPECT_TRUE(b.ok()) << b.status().message();
  return g;
}

SearchOptions EightDevices() {
  SearchOptions o;
  o.devices = 8;
  o.optimizer_states = 0;
  o.cost.flops = 100e9;
  o.cost.memory_bandwidth = 1e18;  // the optimizer's update costs nothing: computation alone
  return o;
}

TEST(SearchPrice, SmallShardMatMulIsPricedAtTheLowerRate) {
  const Graph g = OneMatMul(32, /*x_needs_grad=*/true);
  SearchOptions o = EightDevices();
  const auto one_rate = search_internal::SearchGraph::Build(g, o).value();
  o.cost.gemm_rates = Table();
  const auto by_shape = search_internal::SearchGraph::Build(g, o).value();
  ASSERT_EQ(by_shape.ops().size(), 1u);
  ASSERT_TRUE(by_shape.ops()[0].gemm.has_value());
  ASSERT_EQ(by_shape.ops()[0].letters, "mkn");
  const double flop = 2.0 * 32 * 256 * 256 / 8;  // per device, each of the three GEMMs
  // Data-parallel: 4 rows per device. The forward (4 x 256 . 256 x 256) and dX (4 x 256 .
  // 256 x 256) run at the 4-row rate, dW (256 x 4 . 4 x 256) at the depth-4 rate.
  const search_internal::Parts batch_split = {8, 1, 1};
  EXPECT_NEAR(one_rate.OpCompute(0, batch_split), 3 * flop / 100e9, 1e-12);
  EXPECT_NEAR(by_shape.OpCompute(0, batch_split), 2 * flop / 25e9 + flop / 50e9, 1e-12);
  // Columns split: 32 rows and 32 columns per device run faster than 4 rows, so the table
  // prefers it to the batch split (one rate priced them equal).
  const search_internal::Parts column_split = {1, 1, 8};
  EXPECT_NEAR(one_rate.OpCompute(0, column_split), one_rate.OpCompute(0, batch_split), 1e-12);
  EXPECT_LT(by_shape.OpCompute(0, column_split), 0.7 * by_shape.OpCompute(0, batch_split));
  // Without a table the price is exactly the old one.
  o.cost.gemm_rates = GemmRateTable{};
  EXPECT_EQ(search_internal::SearchGraph::Build(g, o).value().OpCompute(0, column_split),
            one_rate.OpCompute(0, column_split));
}

TEST(SearchPrice, NoGradientGemmForADataInput) {
  SearchOptions o = EightDevices();
  o.cost.gemm_rates = Table();
  const auto from_input = search_internal::SearchGraph::Build(OneMatMul(32, false), o).value();
  ASSERT_FALSE(from_input.ops()[0].inputs[0].needs_grad);
  ASSERT_TRUE(from_input.ops()[0].inputs[1].needs_grad);
  const double flop = 2.0 * 32 * 256 * 256 / 8;
  // The forward and dW only: the backward computes no gradient for the data.
  EXPECT_NEAR(from_input.OpCompute(0, {8, 1, 1}), flop / 25e9 + flop / 50e9, 1e-12);
}

TEST(Profile, OlderProfilesPriceConvolutionsAtOneRate) {
  auto old = CostModelFromJson(R"({"flops": 7e10})", "old.json");
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_TRUE(old->conv_gemm_rates.empty());
  EXPECT_DOUBLE_EQ(old->ConvGemmSeconds(8, 150, 100), 2.0 * 8 * 150 * 100 / 7e10);
  EXPECT_EQ(CostModelToJson(*old).find("conv_gemm_rates"), std::string::npos);
  // Its errors name the field.
  auto bad = CostModelFromJson(R"({"conv_gemm_rates": {"rows": [[4, 1e10]]}})", "p.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("conv_gemm_rates"), std::string::npos);
}

// x[batch, 4, 16, 16] (data, or a parameter: then its gradient is computed) convolved with
// w[16, 4, 3, 3] (valid: 14 x 14 output pixels), one operator.
Graph OneConv(int64_t batch, bool x_needs_grad) {
  Graph g;
  Builder b(&g);
  const Shape xs = {batch, 4, 16, 16};
  const ValueId x =
      x_needs_grad ? b.Parameter("x", xs, {InitSpec::kNormal, 0.1f}) : b.Input("x", xs);
  const ValueId w = b.Parameter("w", {16, 4, 3, 3}, {InitSpec::kNormal, 0.1f});
  b.Op(OpKind::kConv2D, "conv", {x, w});
  EXPECT_TRUE(b.ok()) << b.status().message();
  return g;
}

TEST(SearchPrice, ConvIsPricedAsItsGemmsPerImage) {
  SearchOptions o = EightDevices();
  o.cost.conv_gemm_rates = Flat(50e9);
  const auto data = search_internal::SearchGraph::Build(OneConv(32, false), o).value();
  const auto param = search_internal::SearchGraph::Build(OneConv(32, true), o).value();
  ASSERT_EQ(data.ops().size(), 1u);
  ASSERT_TRUE(data.ops()[0].conv.has_value());
  ASSERT_EQ(data.ops()[0].letters, "nco");
  // Batch split: 4 images per device, each a GEMM of 16 rows x 36 depth x 196 columns.
  const search_internal::Parts batch_split = {8, 1, 1};
  const double gemm = 2.0 * 16 * 36 * 196 / 50e9;
  EXPECT_NEAR(data.OpCompute(0, batch_split), 4 * 2 * gemm, 1e-12);   // forward and dw
  EXPECT_NEAR(param.OpCompute(0, batch_split), 4 * 3 * gemm, 1e-12);  // and dx
  // Output channels split: 32 images of 2 rows each, the same flops.
  EXPECT_NEAR(data.OpCompute(0, {1, 1, 8}), 32 * 2 * (2.0 * 2 * 36 * 196 / 50e9), 1e-12);
  // Without a table: the old price, one rate for the operator's flops (3 x forward).
  o.cost.conv_gemm_rates = GemmRateTable{};
  const auto one_rate = search_internal::SearchGraph::Build(OneConv(32, false), o).value();
  EXPECT_NEAR(one_rate.OpCompute(0, batch_split), 3 * 4 * 2.0 * 16 * 36 * 196 / 100e9, 1e-12);
}

TEST(SearchPrice, ConvShardWithFewOutputChannelsIsPricedAtTheLowerRate) {
  SearchOptions o = EightDevices();
  o.cost.conv_gemm_rates = ConvTable();
  const auto g = search_internal::SearchGraph::Build(OneConv(32, false), o).value();
  // Splitting the 16 output channels 8 ways leaves GEMMs of 2 rows (below the table's 8-row
  // point: a quarter of the base rate); splitting the batch keeps 16 rows. Same flops per
  // device, but the channel split is priced dearer.
  const double batch = g.OpCompute(0, {8, 1, 1}), channels = g.OpCompute(0, {1, 1, 8});
  EXPECT_GT(channels, 1.5 * batch);
  // Under one rate they cost the same.
  o.cost.conv_gemm_rates = Flat(80e9);
  const auto flat = search_internal::SearchGraph::Build(OneConv(32, false), o).value();
  EXPECT_NEAR(flat.OpCompute(0, {1, 1, 8}), flat.OpCompute(0, {8, 1, 1}), 1e-12);
}

// MaxPool2D at the rate calibrate measured (kernel_rates): forward and gradient together by
// the bytes of its input shard; without an entry, the old price; profiles round-trip it.
TEST(SearchPrice, MaxPoolIsPricedAtItsMeasuredRate) {
  Graph g;
  Builder b(&g);
  const ValueId x = b.Input("x", {32, 6, 28, 28});
  OpAttrs pool;
  pool.kernel[0] = pool.kernel[1] = 2;
  pool.stride[0] = pool.stride[1] = 2;
  b.Op(OpKind::kMaxPool2D, "pool", {x}, pool);
  ASSERT_TRUE(b.ok()) << b.status().message();
  SearchOptions o = EightDevices();
  o.cost.memory_bandwidth = 20e9;
  const auto before = search_internal::SearchGraph::Build(g, o).value();
  o.cost.kernel_rates["MaxPool2D"] = 1e9;
  const auto measured = search_internal::SearchGraph::Build(g, o).value();
  ASSERT_EQ(measured.ops().size(), 1u);
  const search_internal::Parts batch_split(measured.ops()[0].letters.size(), 1);
  search_internal::Parts eight = batch_split;
  eight[0] = 8;
  const double input_shard = 4.0 * 32 * 6 * 28 * 28 / 8;
  EXPECT_NEAR(measured.OpCompute(0, eight), input_shard / 1e9, 1e-12);
  EXPECT_NEAR(measured.OpCompute(0, batch_split), 8 * input_shard / 1e9, 1e-12);
  EXPECT_LT(before.OpCompute(0, eight), measured.OpCompute(0, eight));  // 20 GB/s memory-bound

  auto back = CostModelFromJson(CostModelToJson(o.cost), "profile.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->kernel_rates, o.cost.kernel_rates);
  CostModel without = o.cost;
  without.kernel_rates.clear();
  EXPECT_EQ(o.cost.Fingerprint(), without.Fingerprint());  // the planner's prices ignore it
  auto old = CostModelFromJson(R"({"flops": 7e10})", "old.json");
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_TRUE(old->kernel_rates.empty());
  EXPECT_EQ(old->KernelRate("MaxPool2D"), 0);
  auto bad = CostModelFromJson(R"({"kernel_rates": {"MaxPool2D": 0}})", "p.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("kernel_rates.MaxPool2D"), std::string::npos);
}

}  // namespace
}  // namespace shardscope

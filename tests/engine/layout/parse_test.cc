#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shardscope/layout/layout.h"
#include "shardscope/layout/mesh.h"

namespace shardscope {
namespace {

DeviceMesh Mesh222() { return *DeviceMesh::Create({2, 2, 2}, {"dp", "sp", "mp"}); }

template <typename T>
void ExpectInvalid(const Result<T>& result, const std::vector<std::string>& fragments) {
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidInput);
  for (const std::string& f : fragments) {
    EXPECT_NE(result.status().message().find(f), std::string::npos)
        << "message '" << result.status().message() << "' lacks '" << f << "'";
  }
}

// ---- ParseMeshExpr: the seeds' Layout((2,2,2), ("dp","sp","mp")) ----

TEST(ParseMeshExprTest, SeedForms) {
  Result<DeviceMesh> mesh = ParseMeshExpr(R"(Layout((2, 2, 2), ("dp", "sp", "mp")))");
  ASSERT_TRUE(mesh.ok()) << mesh.status().message();
  EXPECT_EQ(*mesh, Mesh222());

  mesh = ParseMeshExpr(R"(Layout((8, 4, 4), name = ("dp", "sp", "mp")))");
  ASSERT_TRUE(mesh.ok()) << mesh.status().message();
  EXPECT_EQ(mesh->ToString(), "mesh(dp=8,sp=4,mp=4)");

  mesh = ParseMeshExpr(R"(Layout((8,), ("tp",)))");
  ASSERT_TRUE(mesh.ok()) << mesh.status().message();
  EXPECT_EQ(mesh->ToString(), "mesh(tp=8)");
}

TEST(ParseMeshExprTest, TolerantSyntax) {
  const DeviceMesh expected = Mesh222();
  for (const char* text : {
           "Layout((2,2,2),('dp','sp','mp'))",
           "  Layout ( ( 2 , 2 , 2 , ) , [ 'dp' , \"sp\" , 'mp' , ] , )  ",
           "ms.Layout([2,2,2], alias_name=('dp','sp','mp'))",
           "mindspore.Layout(device_matrix=(2,2,2), alias_name=('dp','sp','mp'), rank_list=None)",
           "DeviceMesh(alias_name=('dp','sp','mp'), device_matrix=(2,2,2))",
           "Layout((2,2,2),\n\t('dp','sp','mp'))",
       }) {
    Result<DeviceMesh> mesh = ParseMeshExpr(text);
    ASSERT_TRUE(mesh.ok()) << text << ": " << mesh.status().message();
    EXPECT_EQ(*mesh, expected) << text;
  }
  // Python's (8) and ("tp") are not tuples, but the intent is clear.
  Result<DeviceMesh> mesh = ParseMeshExpr("Layout((8), (\"tp\"))");
  ASSERT_TRUE(mesh.ok()) << mesh.status().message();
  EXPECT_EQ(mesh->ToString(), "mesh(tp=8)");
}

TEST(ParseMeshExprTest, RankList) {
  Result<DeviceMesh> mesh = ParseMeshExpr("Layout((2, 2), ('a', 'b'), rank_list=(3, 2, 1, 0))");
  ASSERT_TRUE(mesh.ok()) << mesh.status().message();
  EXPECT_EQ(mesh->rank_list(), (std::vector<int>{3, 2, 1, 0}));
  Result<DeviceMesh> positional = ParseMeshExpr("Layout((2, 2), ('a', 'b'), [3, 2, 1, 0])");
  ASSERT_TRUE(positional.ok()) << positional.status().message();
  EXPECT_EQ(*positional, *mesh);
}

TEST(ParseMeshExprTest, Errors) {
  ExpectInvalid(ParseMeshExpr("Layout((2,2,2), ('dp','sp','mp')"),
                {"column 33", "expected ',' or ')'", "end of input"});
  ExpectInvalid(ParseMeshExpr("Mesh((2,2), ('a','b'))"), {"column 1", "'Layout('", "'Mesh'"});
  ExpectInvalid(ParseMeshExpr("Layout((2,2), ('a','b'), colour=1)"),
                {"column 26", "keyword argument", "'colour'"});
  ExpectInvalid(ParseMeshExpr("Layout((2,x), ('a','b'))"),
                {"column 11", "a mesh axis size", "'x'"});
  ExpectInvalid(ParseMeshExpr("Layout((2,2), (a, b))"), {"column 16", "quoted mesh axis name"});
  ExpectInvalid(ParseMeshExpr("Layout((2,2), ('a,'b'))"), {"column 21", "unterminated string"});
  ExpectInvalid(ParseMeshExpr("Layout((2;2), ('a','b'))"),
                {"column 10", "unexpected character ';'"});
  ExpectInvalid(ParseMeshExpr("Layout((2,2))"), {"missing the mesh axis names"});
  ExpectInvalid(ParseMeshExpr("Layout((2,2), ('a','b')) x"), {"column 26", "end of input", "'x'"});
  ExpectInvalid(ParseMeshExpr("Layout(name=('a','b'), (2,2))"), {"column 24", "keyword argument"});
  ExpectInvalid(ParseMeshExpr("Layout((2,2), ('a','b'), name=('c','d'))"), {"given twice"});
  // Mesh validation errors come through with the text as context.
  ExpectInvalid(ParseMeshExpr("Layout((2,2), ('a','a'))"),
                {"mesh expression 'Layout((2,2), ('a','a'))'", "'a'", "used twice"});
  ExpectInvalid(ParseMeshExpr("Layout((2,-2), ('a','b'))"), {"'b'", "size -2"});
  ExpectInvalid(ParseMeshExpr("Layout((2,2), ('a','b'), rank_list=(0,1,1,3))"),
                {"rank 1 appears twice", "rank 2 is missing"});
}

// ---- ParseMeshSpec: the mesh(dp=2,...) form ----

TEST(ParseMeshSpecTest, RoundTripAndForms) {
  for (const DeviceMesh& mesh : {Mesh222(), *DeviceMesh::Create({3, 1}, {"x", "ranks"}),
                                 *DeviceMesh::Create({4}, {"mp"}, {1, 3, 0, 2}), DeviceMesh()}) {
    Result<DeviceMesh> parsed = ParseMeshSpec(mesh.ToString());
    ASSERT_TRUE(parsed.ok()) << mesh.ToString() << ": " << parsed.status().message();
    EXPECT_EQ(*parsed, mesh) << mesh.ToString();
  }
  Result<DeviceMesh> bare = ParseMeshSpec(" dp = 2, sp=2 ,mp=2 ");
  ASSERT_TRUE(bare.ok()) << bare.status().message();
  EXPECT_EQ(*bare, Mesh222());
  Result<DeviceMesh> empty = ParseMeshSpec("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, DeviceMesh());
  ExpectInvalid(ParseMeshSpec("dp=2,sp"), {"column 8", "'=' after 'sp'"});
  ExpectInvalid(ParseMeshSpec("mesh(dp=2,ranks=[1,0],sp=1)"), {"')' after the rank list"});
  ExpectInvalid(ParseMeshSpec("dp=2,ranks=[1,1]"), {"rank 1 appears twice"});
}

// ---- ParseLayoutCall: layout("mp", ("sp","dp")) ----

TEST(ParseLayoutCallTest, SeedForms) {
  const DeviceMesh mesh = Mesh222();
  Result<DimAxes> dims = ParseLayoutCall(R"(layout("mp", ("sp", "dp")))", mesh);
  ASSERT_TRUE(dims.ok()) << dims.status().message();
  EXPECT_EQ(*dims, (DimAxes{{2}, {1, 0}}));

  dims = ParseLayoutCall(R"(layout(("sp", "dp"), "None"))", mesh);
  ASSERT_TRUE(dims.ok()) << dims.status().message();
  EXPECT_EQ(*dims, (DimAxes{{1, 0}, {}}));

  dims = ParseLayoutCall(R"(layout(("mp", "sp", "dp"), "None"))", mesh);
  ASSERT_TRUE(dims.ok()) << dims.status().message();
  EXPECT_EQ(*dims, (DimAxes{{2, 1, 0}, {}}));

  const DeviceMesh tp = *ParseMeshExpr(R"(Layout((8,), ("tp",)))");
  dims = ParseLayoutCall(R"(layout2("None", "tp"))", tp);
  ASSERT_TRUE(dims.ok()) << dims.status().message();
  EXPECT_EQ(*dims, (DimAxes{{}, {0}}));
}

TEST(ParseLayoutCallTest, TolerantSyntax) {
  const DeviceMesh mesh = Mesh222();
  const DimAxes expected = {{2}, {1, 0}, {}};
  for (const char* text : {
           "layout('mp',('sp','dp'),'None')",
           "  lay ( \"mp\" , [ 'sp' , 'dp' , ] , None , )  ",
           "layout(mp, (sp, dp), ())",
           "layout(('mp',), ('sp','dp'), 'None')",
       }) {
    Result<DimAxes> dims = ParseLayoutCall(text, mesh);
    ASSERT_TRUE(dims.ok()) << text << ": " << dims.status().message();
    EXPECT_EQ(*dims, expected) << text;
  }
  Result<DimAxes> scalar = ParseLayoutCall("layout()", mesh);
  ASSERT_TRUE(scalar.ok());
  EXPECT_TRUE(scalar->empty());
}

TEST(ParseLayoutCallTest, Errors) {
  const DeviceMesh mesh = Mesh222();
  ExpectInvalid(ParseLayoutCall(R"(layout("mp", ("sp", "xp")))", mesh),
                {"column 21", "unknown mesh axis 'xp'", "dp, sp, mp"});
  ExpectInvalid(ParseLayoutCall(R"(layout("mp", ("sp", "mp")))", mesh),
                {"column 21", "'mp' is used twice", "dimension 0"});
  ExpectInvalid(ParseLayoutCall(R"(layout("sp", ("sp", "dp")))", mesh),
                {"column 15", "used twice"});
  ExpectInvalid(ParseLayoutCall(R"(layout(("sp", "None")))", mesh), {"column 15", "'None'"});
  ExpectInvalid(ParseLayoutCall(R"(layout("mp", ("sp", "dp"))", mesh),
                {"column 26", "',' or ')' after dimension 1", "end of input"});
  ExpectInvalid(ParseLayoutCall(R"(layout("mp" ("sp")))", mesh), {"column 13", "',' or ')'"});
  ExpectInvalid(ParseLayoutCall(R"(layout(2))", mesh), {"column 8", "mesh axis name", "number 2"});
  ExpectInvalid(ParseLayoutCall(R"(("mp", "sp"))", mesh), {"column 1", "layout call"});
  ExpectInvalid(ParseLayoutCall(R"(layout("mp") + 1)", mesh),
                {"column 14", "unexpected character '+'"});
  ExpectInvalid(ParseLayoutCall(R"(layout("mp") x)", mesh), {"column 14", "expected end of input"});
}

// ---- ParseLayoutSpec: mp,(sp,dp)|P(..) ----

TEST(ParseLayoutSpecTest, Forms) {
  const DeviceMesh mesh = Mesh222();
  struct Case {
    const char* text;
    Shape shape;
    DimAxes dims;
    std::vector<int> partial;
  };
  const std::vector<Case> cases = {
      {"mp,(sp,dp)", {2, 4}, {{2}, {1, 0}}, {}},
      {"(sp,dp),-|P(mp)", {4, 3}, {{1, 0}, {}}, {2}},
      {" ( sp , dp ) , None | P ( mp ) ", {4, 3}, {{1, 0}, {}}, {2}},
      {"sp.dp,-|P(mp)", {4, 3}, {{1, 0}, {}}, {2}},
      {"-,-|P(mp,dp)", {5, 3}, {{}, {}}, {0, 2}},
      {"(mp),[dp,sp],-", {2, 4, 1}, {{2}, {0, 1}, {}}, {}},
      {"'mp',\"sp\"", {2, 2}, {{2}, {1}}, {}},
      {"", {}, {}, {}},
      {"|P(sp)", {}, {}, {1}},
  };
  for (const Case& c : cases) {
    Result<Layout> layout = ParseLayoutSpec(c.text, mesh, c.shape);
    ASSERT_TRUE(layout.ok()) << c.text << ": " << layout.status().message();
    Result<Layout> expected = Layout::Create(mesh, c.dims, c.partial, c.shape);
    ASSERT_TRUE(expected.ok()) << expected.status().message();
    EXPECT_EQ(*layout, *expected) << c.text;
  }
}

TEST(ParseLayoutSpecTest, Errors) {
  const DeviceMesh mesh = Mesh222();
  ExpectInvalid(ParseLayoutSpec("mp,(sp,dp", mesh, {2, 4}),
                {"layout spec 'mp,(sp,dp'", "column 10", "',' or ')' after a mesh axis name",
                 "end of input"});
  ExpectInvalid(ParseLayoutSpec("mp,(sp,xp)", mesh, {2, 4}),
                {"column 8", "unknown mesh axis 'xp'"});
  ExpectInvalid(ParseLayoutSpec("mp,(sp,mp)", mesh, {2, 4}),
                {"column 8", "'mp' is used twice", "dimension 0"});
  ExpectInvalid(ParseLayoutSpec("mp,sp|P(sp)", mesh, {2, 4}),
                {"column 9", "'sp' is used twice", "dimension 1"});
  ExpectInvalid(ParseLayoutSpec("mp,-|P(dp,dp)", mesh, {2, 4}),
                {"column 11", "'dp' is used twice", "already partial"});
  ExpectInvalid(ParseLayoutSpec("mp,-|Q(dp)", mesh, {2, 4}), {"column 6", "'P(' after '|'"});
  ExpectInvalid(ParseLayoutSpec("mp,-|P()", mesh, {2, 4}), {"column 8", "a mesh axis name"});
  ExpectInvalid(ParseLayoutSpec("mp,,dp", mesh, {2, 4}), {"column 4", "for dimension 1"});
  ExpectInvalid(ParseLayoutSpec("mp dp", mesh, {2, 4}), {"column 4", "',' or '|P(' or end"});
  ExpectInvalid(ParseLayoutSpec("mp,-", mesh, {2, 4, 8}),
                {"spec has 2 dimensions", "[2, 4, 8]", "has 3"});
  ExpectInvalid(ParseLayoutSpec("mp,(sp,dp)", mesh, {2, 6}),
                {"layout spec 'mp,(sp,dp)'", "dimension 1", "size 6", "not divisible by 4"});
  ExpectInvalid(ParseLayoutSpec("mp,(sp,dp)*", mesh, {2, 4}),
                {"column 11", "unexpected character '*'"});
}

}  // namespace
}  // namespace shardscope

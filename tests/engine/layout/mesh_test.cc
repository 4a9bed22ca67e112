#include "shardscope/layout/mesh.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <unordered_set>
#include <vector>

namespace shardscope {
namespace {

DeviceMesh Mesh(Shape shape, std::vector<std::string> names, std::vector<int> ranks = {}) {
  Result<DeviceMesh> mesh =
      DeviceMesh::Create(std::move(shape), std::move(names), std::move(ranks));
  EXPECT_TRUE(mesh.ok()) << mesh.status().message();
  return mesh.ok() ? *mesh : DeviceMesh();
}

// Expects `result` to fail with kInvalidInput and a message containing every fragment.
template <typename T>
void ExpectInvalid(const Result<T>& result, const std::vector<std::string>& fragments) {
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidInput);
  for (const std::string& f : fragments) {
    EXPECT_NE(result.status().message().find(f), std::string::npos)
        << "message '" << result.status().message() << "' lacks '" << f << "'";
  }
}

TEST(DeviceMeshTest, DefaultOrderIsRowMajorLastAxisFastest) {
  DeviceMesh mesh = Mesh({2, 2, 2}, {"dp", "sp", "mp"});
  EXPECT_EQ(mesh.size(), 8);
  EXPECT_EQ(mesh.num_axes(), 3);
  EXPECT_FALSE(mesh.has_explicit_ranks());
  for (int64_t dp = 0; dp < 2; ++dp) {
    for (int64_t sp = 0; sp < 2; ++sp) {
      for (int64_t mp = 0; mp < 2; ++mp) {
        const int rank = static_cast<int>(4 * dp + 2 * sp + mp);
        EXPECT_EQ(mesh.rank_at({dp, sp, mp}), rank);
        EXPECT_EQ(mesh.coords_of(rank), (std::vector<int64_t>{dp, sp, mp}));
      }
    }
  }
  EXPECT_EQ(mesh.rank_list(), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(mesh.ToString(), "mesh(dp=2,sp=2,mp=2)");
  EXPECT_EQ(mesh.axis_size(2), 2);
  EXPECT_EQ(mesh.axis_name(1), "sp");
}

TEST(DeviceMeshTest, NonUniformShape) {
  DeviceMesh mesh = Mesh({3, 1, 4}, {"a", "b", "c"});
  EXPECT_EQ(mesh.size(), 12);
  EXPECT_EQ(mesh.rank_at({2, 0, 3}), 11);
  EXPECT_EQ(mesh.coords_of(5), (std::vector<int64_t>{1, 0, 1}));
}

TEST(DeviceMeshTest, ExplicitRankList) {
  DeviceMesh mesh = Mesh({2, 2}, {"x", "y"}, {3, 1, 0, 2});
  EXPECT_TRUE(mesh.has_explicit_ranks());
  EXPECT_EQ(mesh.rank_at({0, 0}), 3);
  EXPECT_EQ(mesh.rank_at({0, 1}), 1);
  EXPECT_EQ(mesh.rank_at({1, 0}), 0);
  EXPECT_EQ(mesh.rank_at({1, 1}), 2);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(mesh.rank_at(mesh.coords_of(r)), r);
  EXPECT_EQ(mesh.ToString(), "mesh(x=2,y=2,ranks=[3,1,0,2])");
  EXPECT_EQ(mesh.rank_list(), (std::vector<int>{3, 1, 0, 2}));
}

TEST(DeviceMeshTest, IdentityRankListIsTheDefault) {
  DeviceMesh with = Mesh({2, 2}, {"x", "y"}, {0, 1, 2, 3});
  DeviceMesh without = Mesh({2, 2}, {"x", "y"});
  EXPECT_FALSE(with.has_explicit_ranks());
  EXPECT_EQ(with, without);
  EXPECT_EQ(with.Hash(), without.Hash());
  EXPECT_EQ(with.ToString(), "mesh(x=2,y=2)");
}

TEST(DeviceMeshTest, ZeroAxisMeshIsOneDevice) {
  DeviceMesh mesh = Mesh({}, {});
  EXPECT_EQ(mesh.size(), 1);
  EXPECT_EQ(mesh.rank_at({}), 0);
  EXPECT_TRUE(mesh.coords_of(0).empty());
  EXPECT_EQ(mesh.ToString(), "mesh()");
  EXPECT_EQ(mesh, DeviceMesh());
  EXPECT_EQ(mesh.Groups({}), (std::vector<std::vector<int>>{{0}}));
}

TEST(DeviceMeshTest, ValidationErrors) {
  ExpectInvalid(DeviceMesh::Create({2, 2}, {"dp"}), {"2 axes", "1 axis names"});
  ExpectInvalid(DeviceMesh::Create({2, 2}, {"dp", ""}), {"axis 1", "empty name"});
  ExpectInvalid(DeviceMesh::Create({2, 2}, {"dp", "1x"}), {"'1x'", "not an identifier"});
  ExpectInvalid(DeviceMesh::Create({2, 2}, {"d p", "x"}), {"'d p'", "not an identifier"});
  ExpectInvalid(DeviceMesh::Create({2, 2}, {"None", "x"}), {"'None'", "reserved"});
  ExpectInvalid(DeviceMesh::Create({2, 2, 2}, {"dp", "mp", "dp"}),
                {"'dp'", "used twice", "axes 0 and 2"});
  ExpectInvalid(DeviceMesh::Create({2, 0}, {"dp", "mp"}), {"'mp'", "size 0", ">= 1"});
  ExpectInvalid(DeviceMesh::Create({2, -3}, {"dp", "mp"}), {"'mp'", "size -3"});
  ExpectInvalid(DeviceMesh::Create({1 << 16, 1 << 16}, {"a", "b"}), {"more than", "devices"});
  ExpectInvalid(DeviceMesh::Create({2, 2}, {"a", "b"}, {0, 1, 2}), {"3 entries", "4 devices"});
  ExpectInvalid(DeviceMesh::Create({2, 2}, {"a", "b"}, {0, 1, 4, 2}),
                {"rank 4", "position 2", "out of range [0, 4)"});
  ExpectInvalid(DeviceMesh::Create({2, 2}, {"a", "b"}, {0, -1, 3, 2}), {"rank -1", "out of range"});
  ExpectInvalid(
      DeviceMesh::Create({2, 2}, {"a", "b"}, {3, 1, 3, 0}),
      {"not a permutation", "rank 3 appears twice", "positions 0 and 2", "rank 2 is missing"});
}

TEST(DeviceMeshTest, AxisIndex) {
  DeviceMesh mesh = Mesh({2, 2, 2}, {"dp", "sp", "mp"});
  ASSERT_TRUE(mesh.axis_index("mp").ok());
  EXPECT_EQ(*mesh.axis_index("mp"), 2);
  Result<int> missing = mesh.axis_index("tp");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("'tp'"), std::string::npos);
  EXPECT_NE(missing.status().message().find("dp, sp, mp"), std::string::npos);
  Result<std::vector<int>> many = mesh.axis_indices({"sp", "dp"});
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(*many, (std::vector<int>{1, 0}));
  EXPECT_FALSE(mesh.axis_indices({"sp", "xx"}).ok());
}

TEST(DeviceMeshTest, GroupsAlongAxes) {
  DeviceMesh mesh = Mesh({2, 2, 2}, {"dp", "sp", "mp"});
  using Groups = std::vector<std::vector<int>>;
  EXPECT_EQ(mesh.Groups({2}), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(mesh.Groups({0}), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(mesh.Groups({0, 2}), (Groups{{0, 1, 4, 5}, {2, 3, 6, 7}}));
  // Member order follows the listed axes, first most significant: the seed's (sp, dp) split.
  EXPECT_EQ(mesh.Groups({1, 0}), (Groups{{0, 4, 2, 6}, {1, 5, 3, 7}}));
  EXPECT_EQ(mesh.Groups({}), (Groups{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}));
  EXPECT_EQ(mesh.Groups({0, 1, 2}), (Groups{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(mesh.GroupOf(6, {1, 0}), (std::vector<int>{0, 4, 2, 6}));
  EXPECT_EQ(mesh.IndexInGroup(6, {1, 0}), 3);
  EXPECT_EQ(mesh.IndexInGroup(4, {1, 0}), 1);
  EXPECT_EQ(mesh.GroupSize({1, 0}), 4);
  EXPECT_EQ(mesh.GroupSize({}), 1);
}

TEST(DeviceMeshTest, GroupsPartitionRanksWithExplicitRankList) {
  DeviceMesh mesh = Mesh({2, 3, 2}, {"a", "b", "c"}, {11, 3, 5, 0, 7, 9, 1, 2, 4, 6, 8, 10});
  const std::vector<std::vector<int>> axis_sets = {{}, {0}, {1}, {2}, {0, 1}, {2, 0}, {1, 2, 0}};
  for (const std::vector<int>& axes : axis_sets) {
    std::vector<std::vector<int>> groups = mesh.Groups(axes);
    EXPECT_EQ(static_cast<int64_t>(groups.size()) * mesh.GroupSize(axes), mesh.size());
    std::set<int> seen;
    for (const std::vector<int>& group : groups) {
      ASSERT_EQ(static_cast<int64_t>(group.size()), mesh.GroupSize(axes));
      for (size_t i = 0; i < group.size(); ++i) {
        EXPECT_TRUE(seen.insert(group[i]).second) << "rank " << group[i] << " in two groups";
        EXPECT_EQ(mesh.GroupOf(group[i], axes), group);
        EXPECT_EQ(mesh.IndexInGroup(group[i], axes), static_cast<int64_t>(i));
        // Members differ from the first only along `axes`.
        std::vector<int64_t> c0 = mesh.coords_of(group[0]);
        std::vector<int64_t> ci = mesh.coords_of(group[i]);
        for (int a = 0; a < mesh.num_axes(); ++a) {
          bool in_axes = false;
          for (int x : axes) in_axes |= x == a;
          if (!in_axes) {
            EXPECT_EQ(c0[a], ci[a]);
          }
        }
      }
    }
    EXPECT_EQ(static_cast<int>(seen.size()), mesh.size());
  }
}

TEST(DeviceMeshTest, EqualityAndHash) {
  DeviceMesh a = Mesh({2, 4}, {"dp", "mp"});
  DeviceMesh b = Mesh({2, 4}, {"dp", "mp"});
  DeviceMesh renamed = Mesh({2, 4}, {"dp", "tp"});
  DeviceMesh reshaped = Mesh({4, 2}, {"dp", "mp"});
  DeviceMesh permuted = Mesh({2, 4}, {"dp", "mp"}, {7, 6, 5, 4, 3, 2, 1, 0});
  EXPECT_EQ(a, b);
  EXPECT_EQ(std::hash<DeviceMesh>()(a), std::hash<DeviceMesh>()(b));
  EXPECT_FALSE(a == renamed);
  EXPECT_FALSE(a == reshaped);
  EXPECT_FALSE(a == permuted);
  std::unordered_set<DeviceMesh> set = {a, b, renamed, reshaped, permuted};
  EXPECT_EQ(set.size(), 4u);
}

}  // namespace
}  // namespace shardscope

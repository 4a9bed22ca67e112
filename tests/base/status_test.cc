// Tests of Status, Result<T> and the early-return macros.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "shardscope/base/status.h"

namespace shardscope {
namespace {

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_TRUE(s.message().empty());
  EXPECT_TRUE(Status::Ok().ok());
}

TEST(Status, FactoriesSetCodeAndMessage) {
  struct Case {
    Status status;
    StatusCode code;
  };
  const Case cases[] = {
      {Status::Invalid("a"), StatusCode::kInvalidInput},
      {Status::NotFound("b"), StatusCode::kNotFound},
      {Status::Io("c"), StatusCode::kIoError},
      {Status::NotImplemented("d"), StatusCode::kNotImplemented},
      {Status::Internal("e"), StatusCode::kInternal},
  };
  char expected = 'a';
  for (const Case& c : cases) {
    EXPECT_FALSE(c.status.ok());
    EXPECT_EQ(c.status.code(), c.code);
    EXPECT_EQ(c.status.message(), std::string(1, expected++));
  }
}

TEST(Status, WithContextPrefixesAndKeepsCode) {
  Status s = Status::NotFound("no such file");
  Status c = s.WithContext("model.yaml");
  EXPECT_EQ(c.code(), StatusCode::kNotFound);
  EXPECT_EQ(c.message(), "model.yaml: no such file");
  // Nested contexts read outermost first.
  EXPECT_EQ(c.WithContext("train").message(), "train: model.yaml: no such file");
  // The original is unchanged.
  EXPECT_EQ(s.message(), "no such file");
}

TEST(Status, WithContextOnOkStaysOkAndEmpty) {
  Status c = Status::Ok().WithContext("ignored");
  EXPECT_TRUE(c.ok());
  EXPECT_TRUE(c.message().empty());
}

TEST(Result, HoldsValue) {
  Result<int> r = 42;
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), 42);
  EXPECT_EQ(*r, 42);
  EXPECT_TRUE(r.status().ok());
}

TEST(Result, HoldsError) {
  Result<int> r = Status::Invalid("bad");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(r.status().message(), "bad");
}

TEST(Result, ArrowAndMoveOut) {
  Result<std::string> r = std::string("hello");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 5u);
  Result<std::unique_ptr<int>> p = std::make_unique<int>(7);
  ASSERT_TRUE(p.ok());
  std::unique_ptr<int> owned = std::move(p).value();
  ASSERT_NE(owned, nullptr);
  EXPECT_EQ(*owned, 7);
}

// Helpers exercising the macros.
Status FailIf(bool fail) { return fail ? Status::Io("disk on fire") : Status::Ok(); }

int g_after_calls = 0;
Status TwoSteps(bool fail_first) {
  SHARDSCOPE_RETURN_IF_ERROR(FailIf(fail_first));
  ++g_after_calls;
  return Status::Internal("reached the end");
}

Result<int> Half(int x) {
  if (x % 2 != 0) return Status::Invalid(std::to_string(x) + " is odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  SHARDSCOPE_ASSIGN_OR_RETURN(int h, Half(x));
  SHARDSCOPE_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(Macros, ReturnIfErrorStopsAtFirstFailure) {
  g_after_calls = 0;
  Status s = TwoSteps(true);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_EQ(s.message(), "disk on fire");
  EXPECT_EQ(g_after_calls, 0);

  s = TwoSteps(false);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(g_after_calls, 1);
}

TEST(Macros, AssignOrReturnUnwrapsOrPropagates) {
  Result<int> ok = Quarter(12);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 3);

  Result<int> first = Quarter(7);  // fails in the first Half
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().message(), "7 is odd");

  Result<int> second = Quarter(6);  // 6 -> 3, fails in the second Half
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().message(), "3 is odd");
}

}  // namespace
}  // namespace shardscope

// Every forward operator's gradient rule against central finite differences.
//
// For an operator output y, the loss is L = Σ y ⊙ R with a fixed random R, so dL/dy = R is
// generic; autodiff's d(L)/d(input) is compared with (L(x+ε) − L(x−ε)) / 2ε per element.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "shardscope/autodiff.h"
#include "shardscope/composites.h"
#include "shardscope/executor.h"
#include "shardscope/rng.h"

namespace shardscope {
namespace {

using BuildFn = std::function<ValueId(Graph&)>;

struct Fixture {
  Graph g;
  ValueId loss = kNoValue;
  Gradients grads;
};

// Builds op output → L = ReduceSum(y ⊙ R), differentiates w.r.t. every parameter.
void Build(Fixture& f, const BuildFn& build) {
  ValueId y = build(f.g);
  ASSERT_NE(y, kNoValue);
  ValueId r = f.g.AddConstant("R", f.g.value(y).shape, {InitSpec::kNormal, 1.0f});
  auto prod = f.g.AddNode(OpKind::kMul, "yr", {y, r});
  ASSERT_TRUE(prod.ok()) << prod.status().message();
  auto sum = f.g.AddNode(OpKind::kReduceSum, "loss", {f.g.node(*prod).outputs[0]});
  ASSERT_TRUE(sum.ok()) << sum.status().message();
  f.loss = f.g.node(*sum).outputs[0];
  auto grads = BuildBackward(f.g, f.loss, f.g.Parameters());
  ASSERT_TRUE(grads.ok()) << grads.status().message();
  f.grads = *grads;
  Status v = f.g.Verify();
  ASSERT_TRUE(v.ok()) << v.message();
}

// Fills labels/indices with values below `classes`.
void FillInts(Executor& ex, const Graph& g, int classes) {
  Rng rng(7);
  for (const Value& v : g.values()) {
    if (v.kind != ValueKind::kLabel) continue;
    Tensor& t = ex.value(v.id);
    for (int64_t i = 0; i < t.size(); ++i) t.ints()[i] = static_cast<int32_t>(rng.Below(classes));
  }
}

void CheckGradients(const BuildFn& build, int classes = 3, double eps = 1e-2, double tol = 2e-2) {
  Fixture f;
  Build(f, build);
  if (testing::Test::HasFatalFailure()) return;
  Executor ex(f.g);
  ex.InitializeParameters(42);
  FillInts(ex, f.g, classes);
  std::vector<ValueId> targets = {f.loss};
  for (ValueId gv : f.grads.grads) {
    if (gv != kNoValue) targets.push_back(gv);
  }
  const auto all = ex.Schedule(targets);
  const auto fwd = ex.Schedule({f.loss});
  ex.Run(all, 0, true);
  for (size_t p = 0; p < f.grads.wrt.size(); ++p) {
    const ValueId param = f.grads.wrt[p];
    ASSERT_NE(f.grads.grads[p], kNoValue) << "no gradient for " << f.g.value(param).name;
    const Tensor analytic = ex.value(f.grads.grads[p]);
    Tensor& x = ex.value(param);
    const int64_t stride = std::max<int64_t>(1, x.size() / 40);  // at most ~40 probes
    for (int64_t i = 0; i < x.size(); i += stride) {
      const float saved = x[i];
      x[i] = saved + static_cast<float>(eps);
      ex.Run(fwd, 0, true);
      const double up = ex.value(f.loss)[0];
      x[i] = saved - static_cast<float>(eps);
      ex.Run(fwd, 0, true);
      const double down = ex.value(f.loss)[0];
      x[i] = saved;
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(analytic[i], numeric, tol * std::max(1.0, std::abs(numeric)))
          << f.g.value(param).name << "[" << i << "]";
    }
  }
}

ValueId P(Graph& g, const std::string& name, Shape s) {
  return g.AddParameter(name, std::move(s), {InitSpec::kNormal, 1.0f});
}
ValueId Out(Graph& g, Result<NodeId> n) {
  EXPECT_TRUE(n.ok()) << n.status().message();
  return n.ok() ? g.node(*n).outputs[0] : kNoValue;
}
ValueId Op(Graph& g, OpKind op, std::vector<ValueId> in, OpAttrs a = {}) {
  return Out(g, g.AddNode(op, std::string("op") + std::to_string(g.num_nodes()), std::move(in), a));
}

TEST(GradientCheck, MatMulAllTransposes) {
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      SCOPED_TRACE(testing::Message() << "ta=" << ta << " tb=" << tb);
      CheckGradients([&](Graph& g) {
        OpAttrs a;
        a.transpose_a = ta;
        a.transpose_b = tb;
        ValueId x = P(g, "a", ta ? Shape{4, 3} : Shape{3, 4});
        ValueId y = P(g, "b", tb ? Shape{5, 4} : Shape{4, 5});
        return Op(g, OpKind::kMatMul, {x, y}, a);
      });
    }
  }
}

TEST(GradientCheck, BatchMatMul) {
  for (int tb = 0; tb < 2; ++tb) {
    CheckGradients([&](Graph& g) {
      OpAttrs a;
      a.transpose_b = tb;
      return Op(g, OpKind::kBatchMatMul,
                {P(g, "a", {2, 3, 4}), P(g, "b", tb ? Shape{2, 5, 4} : Shape{2, 4, 5})}, a);
    });
  }
}

TEST(GradientCheck, AddSubMulWithBroadcast) {
  for (OpKind op : {OpKind::kAdd, OpKind::kSub, OpKind::kMul}) {
    SCOPED_TRACE(OpName(op));
    CheckGradients([&](Graph& g) { return Op(g, op, {P(g, "a", {3, 4}), P(g, "b", {3, 4})}); });
    CheckGradients([&](Graph& g) { return Op(g, op, {P(g, "a", {2, 3, 4}), P(g, "b", {4})}); });
    CheckGradients([&](Graph& g) { return Op(g, op, {P(g, "a", {3, 1}), P(g, "b", {1, 4})}); });
  }
}

TEST(GradientCheck, ScaleBiasAddSumToBroadcastTo) {
  OpAttrs s;
  s.scale = -0.7f;
  CheckGradients([&](Graph& g) { return Op(g, OpKind::kScale, {P(g, "x", {3, 4})}, s); });
  CheckGradients([&](Graph& g) {
    return Op(g, OpKind::kBiasAdd, {P(g, "x", {3, 4}), P(g, "b", {4})});
  });
  CheckGradients([&](Graph& g) {
    return Op(g, OpKind::kBiasAdd, {P(g, "x", {2, 3, 2, 2}), P(g, "b", {3})});
  });
  OpAttrs to;
  to.shape = {3, 1};
  CheckGradients([&](Graph& g) { return Op(g, OpKind::kSumToShape, {P(g, "x", {2, 3, 4})}, to); });
  OpAttrs bc;
  bc.shape = {2, 3, 4};
  CheckGradients([&](Graph& g) { return Op(g, OpKind::kBroadcastTo, {P(g, "x", {3, 1})}, bc); });
}

TEST(GradientCheck, Activations) {
  for (OpKind op : {OpKind::kReLU, OpKind::kGeLU, OpKind::kSoftmax, OpKind::kLogSoftmax}) {
    SCOPED_TRACE(OpName(op));
    CheckGradients([&](Graph& g) { return Op(g, op, {P(g, "x", {3, 5})}); }, 3, 1e-3);
  }
}

TEST(GradientCheck, DropoutUsesTheSameMaskBackward) {
  OpAttrs a;
  a.rate = 0.4f;
  a.seed = 9;
  CheckGradients([&](Graph& g) { return Op(g, OpKind::kDropout, {P(g, "x", {4, 6})}, a); });
}

TEST(GradientCheck, SoftmaxCrossEntropy) {
  CheckGradients(
      [&](Graph& g) {
        ValueId logits = P(g, "logits", {4, 3});
        ValueId labels = g.AddLabel("labels", {4});
        return Op(g, OpKind::kSoftmaxCrossEntropyWithLogits, {logits, labels});
      },
      3, 1e-3);
}

TEST(GradientCheck, Reductions) {
  for (OpKind op : {OpKind::kReduceSum, OpKind::kReduceMean}) {
    for (bool keep : {false, true}) {
      OpAttrs a;
      a.axes = {1};
      a.keep_dims = keep;
      CheckGradients([&](Graph& g) { return Op(g, op, {P(g, "x", {2, 3, 4})}, a); });
      OpAttrs all;
      all.keep_dims = keep;
      CheckGradients([&](Graph& g) { return Op(g, op, {P(g, "x", {2, 3})}, all); });
    }
  }
}

TEST(GradientCheck, ShapeOps) {
  OpAttrs r;
  r.shape = {4, -1};
  CheckGradients([&](Graph& g) { return Op(g, OpKind::kReshape, {P(g, "x", {2, 3, 4})}, r); });
  CheckGradients([&](Graph& g) { return Op(g, OpKind::kFlatten, {P(g, "x", {2, 3, 4})}); });
  OpAttrs t;
  t.axes = {2, 0, 1};
  CheckGradients([&](Graph& g) { return Op(g, OpKind::kTranspose, {P(g, "x", {2, 3, 4})}, t); });
  OpAttrs t2;
  t2.axes = {1, 0};
  CheckGradients([&](Graph& g) { return Op(g, OpKind::kTranspose, {P(g, "x", {3, 5})}, t2); });
}

TEST(GradientCheck, Conv2DValidSameStrided) {
  for (Padding pad : {Padding::kValid, Padding::kSame}) {
    for (int stride : {1, 2}) {
      SCOPED_TRACE(testing::Message()
                   << "same=" << (pad == Padding::kSame) << " stride=" << stride);
      OpAttrs a;
      a.padding = pad;
      a.stride[0] = a.stride[1] = stride;
      CheckGradients([&](Graph& g) {
        return Op(g, OpKind::kConv2D, {P(g, "x", {2, 2, 6, 5}), P(g, "w", {3, 2, 3, 3})}, a);
      });
    }
  }
}

TEST(GradientCheck, MaxPool2D) {
  OpAttrs a;
  a.kernel[0] = a.kernel[1] = 2;
  a.stride[0] = a.stride[1] = 2;
  CheckGradients(
      [&](Graph& g) {
        return Op(g, OpKind::kMaxPool2D, {P(g, "x", {2, 2, 4, 6})}, a);
      },
      3, 1e-3);
}

TEST(GradientCheck, GatherAndLayerNorm) {
  CheckGradients(
      [&](Graph& g) {
        ValueId table = P(g, "table", {5, 3});
        ValueId idx = g.AddLabel("idx", {2, 4});
        OpAttrs a;
        a.axis = 0;
        return Op(g, OpKind::kGather, {table, idx}, a);
      },
      5);
  CheckGradients(
      [&](Graph& g) {
        return Op(g, OpKind::kLayerNorm,
                  {P(g, "x", {3, 6}), P(g, "gamma", {6}), P(g, "beta", {6})});
      },
      3, 1e-3, 3e-2);
}

TEST(GradientCheck, MatMulAnyRankWithBroadcastBatch) {
  struct Case {
    Shape a, b;
    bool ta = false, tb = false;
  };
  const std::vector<Case> cases = {
      {{2, 3, 4}, {4, 5}},               // batch folded into the rows
      {{2, 3, 4}, {5, 4}, false, true},  // ... with a transposed weight
      {{2, 4, 3}, {4, 5}, true, false},  // batched and transposed
      {{2, 1, 3, 4}, {3, 4, 5}},         // batch dimensions broadcast both ways
      {{3, 4}, {2, 4, 5}},               // a matrix times a batch
      {{4}, {2, 4, 5}},                  // a vector first
      {{2, 3, 4}, {4}},                  // a vector second
      {{4}, {4}},                        // a dot product (rank 0)
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(ShapeToString(c.a) + " · " + ShapeToString(c.b));
    CheckGradients([&](Graph& g) {
      OpAttrs a;
      a.transpose_a = c.ta;
      a.transpose_b = c.tb;
      return Op(g, OpKind::kMatMul, {P(g, "a", c.a), P(g, "b", c.b)}, a);
    });
  }
}

// Positive operands (for Pow's logarithm and Div's denominator) through a Sigmoid.
ValueId Positive(Graph& g, const std::string& name, Shape s) {
  return Op(g, OpKind::kSigmoid, {P(g, name, std::move(s))});
}

TEST(GradientCheck, DivPowSqrtWithBroadcast) {
  for (OpKind op : {OpKind::kDiv, OpKind::kPow}) {
    SCOPED_TRACE(OpName(op));
    CheckGradients([&](Graph& g) {
      return Op(g, op, {Positive(g, "a", {3, 4}), Positive(g, "b", {3, 4})});
    });
    CheckGradients([&](Graph& g) {
      return Op(g, op, {Positive(g, "a", {2, 3, 4}), Positive(g, "b", {4})});
    });
    CheckGradients([&](Graph& g) {
      return Op(g, op, {Positive(g, "a", {3, 1}), Positive(g, "b", {1, 4})});
    });
  }
  CheckGradients(
      [&](Graph& g) {
        return Op(g, OpKind::kSqrt, {Positive(g, "x", {3, 4})});
      },
      3, 1e-3);
}

TEST(GradientCheck, TanhSigmoidIdentityCast) {
  for (OpKind op : {OpKind::kTanh, OpKind::kSigmoid, OpKind::kIdentity, OpKind::kCast}) {
    SCOPED_TRACE(OpName(op));
    CheckGradients([&](Graph& g) { return Op(g, op, {P(g, "x", {3, 5})}); }, 3, 1e-3);
  }
}

TEST(GradientCheck, WhereWithBroadcast) {
  CheckGradients(
      [&](Graph& g) {
        ValueId cond = g.AddLabel("cond", {3, 1});
        return Op(g, OpKind::kWhere, {cond, P(g, "x", {3, 4}), P(g, "y", {4})});
      },
      2);
}

TEST(GradientCheck, ConcatSplitSlice) {
  OpAttrs concat;
  concat.axis = 1;
  CheckGradients([&](Graph& g) {
    return Op(g, OpKind::kConcat,
              {P(g, "a", {2, 1, 3}), P(g, "b", {2, 4, 3}), P(g, "c", {2, 2, 3})}, concat);
  });
  // Split's middle output feeds nothing: its gradient is zeros.
  CheckGradients([&](Graph& g) {
    OpAttrs split;
    split.axis = -1;
    split.sizes = {2, 1, 2};
    auto n = g.AddNode(OpKind::kSplit, "split", {P(g, "x", {3, 5})}, split);
    EXPECT_TRUE(n.ok()) << n.status().message();
    if (!n.ok()) return kNoValue;
    return Op(g, OpKind::kAdd, {g.node(*n).outputs[0], g.node(*n).outputs[2]});
  });
  OpAttrs slice;
  slice.axes = {2, 0};
  slice.starts = {-1, 1};
  slice.ends = {-100, 1000};
  slice.steps = {-2, 1};
  CheckGradients([&](Graph& g) { return Op(g, OpKind::kSlice, {P(g, "x", {3, 2, 6})}, slice); });
}

TEST(GradientCheck, SqueezeUnsqueeze) {
  OpAttrs sq;
  sq.axes = {1};
  CheckGradients([&](Graph& g) { return Op(g, OpKind::kSqueeze, {P(g, "x", {3, 1, 2})}, sq); });
  OpAttrs all;
  CheckGradients([&](Graph& g) { return Op(g, OpKind::kSqueeze, {P(g, "x", {1, 3, 1})}, all); });
  OpAttrs un;
  un.axes = {0, -1};
  CheckGradients([&](Graph& g) { return Op(g, OpKind::kUnsqueeze, {P(g, "x", {3, 2})}, un); });
}

TEST(GradientCheck, AveragePool2DValidSameStrided) {
  for (Padding pad : {Padding::kValid, Padding::kSame}) {
    for (int stride : {1, 2}) {
      SCOPED_TRACE(testing::Message()
                   << "same=" << (pad == Padding::kSame) << " stride=" << stride);
      OpAttrs a;
      a.kernel[0] = 3;
      a.kernel[1] = 2;
      a.stride[0] = a.stride[1] = stride;
      a.padding = pad;
      CheckGradients([&](Graph& g) {
        return Op(g, OpKind::kAveragePool2D, {P(g, "x", {2, 2, 5, 4})}, a);
      });
    }
  }
}

TEST(GradientCheck, BatchNormWithRunningAndBatchStatistics) {
  // Inference form: every input is differentiable (statistics included).
  CheckGradients(
      [&](Graph& g) {
        return Op(g, OpKind::kBatchNorm,
                  {P(g, "x", {2, 3, 2, 2}), P(g, "scale", {3}), P(g, "bias", {3}),
                   P(g, "mean", {3}), Op(g, OpKind::kSigmoid, {P(g, "var", {3})})});
      },
      3, 1e-3);
  // Training form: statistics of the batch, differentiated through.
  CheckGradients(
      [&](Graph& g) {
        auto y = AddBatchNormTraining(g, "bn", P(g, "x", {4, 3, 2}), P(g, "scale", {3}),
                                      P(g, "bias", {3}), 1e-5f);
        EXPECT_TRUE(y.ok()) << y.status().message();
        return y.ok() ? *y : kNoValue;
      },
      3, 1e-3, 3e-2);
}

// Every forward operator above is covered; the backward kinds are checked through them.
TEST(GradientCheck, BackwardOperatorsRefuseSecondOrder) {
  Graph g;
  ValueId x = P(g, "x", {3, 4});
  ValueId y = Op(g, OpKind::kReLU, {x});
  ValueId dy = Op(g, OpKind::kReLUGrad, {y, x});
  ValueId loss = Op(g, OpKind::kReduceSum, {dy});
  auto grads = BuildBackward(g, loss, {x});
  ASSERT_FALSE(grads.ok());
  EXPECT_NE(grads.status().message().find("second-order"), std::string::npos)
      << grads.status().message();
}

}  // namespace
}  // namespace shardscope

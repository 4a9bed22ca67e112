// Scales and ticks on whatever a run file holds (zero, negative, NaN, infinite spans), and the
// timeline and the drawable text built on them.
#include "shardscope/viewer/axis.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "shardscope/viewer/scene.h"
#include "shardscope/viewer/timeline_scene.h"

namespace shardscope::viewer {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");

TEST(AxisTest, TicksAreRoundAndCover) {
  const std::vector<double> small = AxisTicks(0.0087, 8);  // spacing 0.002 (1, 2 or 5 × 10^k)
  ASSERT_EQ(small.size(), 5u);
  for (size_t i = 0; i < small.size(); ++i) EXPECT_NEAR(small[i], 0.002 * i, 1e-15);
  const std::vector<double> ticks = AxisTicks(37, 8);
  ASSERT_EQ(ticks.size(), 8u);  // 0, 5, ..., 35
  EXPECT_DOUBLE_EQ(ticks.back(), 35);
}

TEST(AxisTest, NoTicksWithoutAPositiveFiniteSpan) {
  for (double span : {0.0, -1.0, kNaN, kInf, -kInf}) {
    EXPECT_TRUE(AxisTicks(span, 8).empty()) << span;
    EXPECT_EQ(AxisScale(760, span), 0) << span;
  }
}

TEST(AxisTest, ExtremeSpansStayBounded) {
  for (double span : {std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::min(),
                      1e-300, 1e300, std::numeric_limits<double>::max()}) {
    const std::vector<double> ticks = AxisTicks(span, 8);
    EXPECT_LE(ticks.size(), 17u) << span;
    for (double t : ticks) EXPECT_TRUE(std::isfinite(t)) << span;
    EXPECT_TRUE(std::isfinite(AxisScale(760, span))) << span;
  }
}

TEST(AxisTest, ChartRangeIsFiniteAndWide) {
  const AxisRange one = ChartRange(3, 3);
  EXPECT_LT(one.lo, one.hi);
  const AxisRange bad = ChartRange(kNaN, kInf);
  EXPECT_EQ(bad.lo, 0);
  EXPECT_EQ(bad.hi, 1);
  const AxisRange huge =
      ChartRange(-std::numeric_limits<double>::max(), std::numeric_limits<double>::max());
  EXPECT_TRUE(std::isfinite(huge.lo) && std::isfinite(huge.hi) && huge.lo < huge.hi);
  const AxisRange normal = ChartRange(0, 10);
  EXPECT_DOUBLE_EQ(normal.hi, 10.5);
}

store::PipelineSpanRecord Span(int64_t rank, double start, double end) {
  return {.step = 1,
          .rank = rank,
          .micro_batch = 0,
          .phase = "forward",
          .start_seconds = start,
          .end_seconds = end};
}

// The reproducers' shapes: a step whose spans all have start = end, or no end at all.
TEST(AxisTest, TimelineOfAZeroLengthOrEndlessStepIsDrawn) {
  for (double end : {0.0, kNaN, kInf, -1.0}) {
    const std::vector<store::PipelineSpanRecord> spans = {Span(0, 0, end), Span(1, 0, end)};
    const Scene scene = BuildTimelineScene(spans, 1);
    EXPECT_EQ(scene.Find("lane").size(), 2u) << end;
    EXPECT_TRUE(scene.Find("span").empty()) << end;
    EXPECT_TRUE(std::isfinite(scene.bounds.width()) && std::isfinite(scene.bounds.height()));
    for (const SceneItem& item : scene.items) {
      EXPECT_TRUE(std::isfinite(item.rect.x()) && std::isfinite(item.rect.width())) << end;
    }
    const TimelineSummary summary = SummarizeTimeline(spans, 1);
    EXPECT_EQ(summary.unplaceable_spans, end == 0.0 ? 0 : 2) << end;
    EXPECT_EQ(scene.Find("note").size(), end == 0.0 ? 0u : 1u) << end;
  }
}

TEST(AxisTest, TimelineWithMoreSpansThanTheCapSaysSo) {
  std::vector<store::PipelineSpanRecord> spans;
  for (int64_t i = 0; i < 10 * static_cast<int64_t>(kMaxSceneItems); ++i) {
    spans.push_back(Span(i % 1000, static_cast<double>(i), static_cast<double>(i) + 0.5));
  }
  const Scene scene = BuildTimelineScene(spans, 1);
  EXPECT_LE(scene.items.size(), kMaxSceneItems + 3 * 256 + 64);  // + lanes, axis, legend
  EXPECT_EQ(scene.Find("lane").size(), 256u);
  const auto notes = scene.Find("note");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(notes[0]->text.contains("the first 256 of 1000 workers"))
      << notes[0]->text.toStdString();
  EXPECT_TRUE(notes[0]->text.contains("over the drawing limit")) << notes[0]->text.toStdString();
}

TEST(AxisTest, DataRangeFollowsTheDataNotZero) {
  const AxisRange r = DataRange(9064161.0, 9100000.0);
  EXPECT_GT(r.lo, 9000000.0);  // not from 0: the curve fills the chart
  EXPECT_LT(r.lo, 9064161.0);
  EXPECT_GT(r.hi, 9100000.0);
  const AxisRange one = DataRange(2.5, 2.5);  // one value still gets a width
  EXPECT_LT(one.lo, 2.5);
  EXPECT_GT(one.hi, 2.5);
  const AxisRange bad = DataRange(std::nan(""), 1);
  EXPECT_EQ(bad.lo, 0);
  EXPECT_EQ(bad.hi, 1);
}

TEST(AxisTest, ByteUnitsAreBinary) {
  EXPECT_STREQ(ByteUnitFor(512).name, "B");
  EXPECT_STREQ(ByteUnitFor(9064161.0).name, "MiB");
  EXPECT_DOUBLE_EQ(ByteUnitFor(9064161.0).divisor, 1024.0 * 1024.0);
  EXPECT_STREQ(ByteUnitFor(2048).name, "KiB");
  EXPECT_STREQ(ByteUnitFor(1e30).name, "TiB");
  EXPECT_STREQ(ByteUnitFor(std::numeric_limits<double>::infinity()).name, "B");
}

TEST(RankTextTest, RangesAndStridesInsteadOfLists) {
  std::vector<int> strided;
  for (int r = 0; r < 1024; r += 128) strided.push_back(r);
  EXPECT_EQ(RankText(strided), "0-896 step 128");
  EXPECT_EQ(RankText(std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}), "0-7");
  EXPECT_EQ(RankText(std::vector<int>{3}), "3");
  EXPECT_EQ(RankText(std::vector<int>{0, 4}), "0,4");
  EXPECT_EQ(RankText(std::vector<int>{0, 4, 2, 6}), "0,4,2,6");  // not a run: listed
  std::vector<int> irregular;
  for (int r = 0; r < 40; ++r) irregular.push_back(r * r);
  EXPECT_EQ(RankText(irregular), QString::fromUtf8("0,1,4,9,16,25,36,49,\u2026 (40 ranks)"));
}

TEST(DrawableTextTest, ControlsBecomePicturesAndXmlSafe) {
  const QString evil = QString::fromUtf8("ctl\x1b[31m\x01\x7f") + QChar(0x009b) + QChar(0x202e) +
                       QChar(0xd800) + QChar(0xffff) + "\n<b>&";
  const QString drawn = DrawableText(evil);
  EXPECT_EQ(drawn, QString::fromUtf8("ctl\u241b[31m\u2401\u2421\ufffd\ufffd\ufffd\ufffd\n<b>&"));
  const QString emoji = QString::fromUtf8("caf\u00e9 \U0001F642");
  EXPECT_EQ(DrawableText(emoji), emoji);
  EXPECT_EQ(DrawableText(QString(100000, 'x')).size(), kMaxDrawnChars + 1);  // with "…"
  EXPECT_FALSE(PlainToolTip("<script>x</script>").contains("<script>"));
}

}  // namespace
}  // namespace shardscope::viewer

// EscapeControls: text from a run file made safe for a terminal.
#include "shardscope/store/display_text.h"

#include <gtest/gtest.h>

namespace shardscope::store {
namespace {

TEST(EscapeControlsTest, TerminalEscapesAndC0BecomeVisible) {
  EXPECT_EQ(EscapeControls("ctl\x1b[31mred\x1b[0m"), "ctl\\u001b[31mred\\u001b[0m");
  EXPECT_EQ(EscapeControls(std::string("a\x01"
                                       "b\x7f",
                                       4)),
            "a\\u0001b\\u007f");
  EXPECT_EQ(EscapeControls("tab\there\rback"), "tab\\u0009here\\u000dback");
}

TEST(EscapeControlsTest, C1ControlsAndBidiOverridesAreEscaped) {
  EXPECT_EQ(EscapeControls("\xc2\x9b"
                           "2J"),
            "\\u009b2J");  // CSI as a C1 control
  EXPECT_EQ(EscapeControls("\xe2\x80\xae"
                           "evil"),
            "\\u202eevil");                                // right-to-left override
  EXPECT_EQ(EscapeControls("\xe2\x81\xa6x"), "\\u2066x");  // left-to-right isolate
}

TEST(EscapeControlsTest, InvalidUtf8BytesAreEscapedValidTextPasses) {
  EXPECT_EQ(EscapeControls("a\xff"
                           "b\xc3"),
            "a\\xffb\\xc3");
  EXPECT_EQ(EscapeControls("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(EscapeControls("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  const std::string fine = "caf\xc3\xa9 \xf0\x9f\x99\x82 <b>&amp;</b> \"q\" \\N";
  EXPECT_EQ(EscapeControls(fine), fine);
  EXPECT_FALSE(HasControls(fine, false));
}

TEST(EscapeControlsTest, NewlinesKeptOnlyWhenAsked) {
  EXPECT_EQ(EscapeControls("a\nb"), "a\\u000ab");
  EXPECT_EQ(EscapeControls("a\nb\x1b", {.keep_newlines = true}), "a\nb\\u001b");
  EXPECT_FALSE(HasControls("a\nb", true));
  EXPECT_TRUE(HasControls("a\nb", false));
}

TEST(EscapeControlsTest, LongTextIsCutAtACharacterWithItsLength) {
  const std::string long_name(100000, 'x');
  const std::string cut = EscapeControls(long_name, {.max_bytes = 200});
  EXPECT_EQ(cut, std::string(200, 'x') + "... (100000 bytes)");
  // Never inside a UTF-8 sequence.
  std::string accents;
  for (int i = 0; i < 50; ++i) accents += "\xc3\xa9";
  const std::string cut_accents = EscapeControls(accents, {.max_bytes = 7});
  EXPECT_EQ(cut_accents.substr(0, 8), "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
  EXPECT_FALSE(HasControls(cut_accents, false));
}

TEST(EscapeControlsTest, EscapingTwiceChangesNothing) {
  const std::string once = EscapeControls("a\x1b\xff\xe2\x80\xae\n");
  EXPECT_EQ(EscapeControls(once), once);
  EXPECT_FALSE(HasControls(once, false));
}

}  // namespace
}  // namespace shardscope::store

#include "hetrun/base/shown_text.h"

#include <gtest/gtest.h>

#include <string>

namespace hetrun {
namespace {

// Issue 28 item 15: cuts at a fixed byte count split UTF-8 characters, and control characters
// from untrusted text reached the terminal and the termination log raw.
TEST(ShownTextTest, ACutNeverSplitsAUtf8Character) {
  const std::string euro = "\xE2\x82\xAC";  // U+20AC, 3 bytes
  std::string text = std::string(63, 'a') + euro + "tail";
  EXPECT_EQ(ShownText(text, 64), std::string(63, 'a') + "...");
  EXPECT_EQ(ShownText(text, 66), std::string(63, 'a') + euro + "...");
  EXPECT_EQ(ShownText("short", 64), "short");
  EXPECT_TRUE(IsValidUtf8(ShownText(text, 64)));
}

TEST(ShownTextTest, ControlCharactersAndInvalidBytesAreEscaped) {
  EXPECT_EQ(ShownText("a\x1b[31mred\x07\r\n\tb\x7f", 64), "a\\x1b[31mred\\x07\\r\\n\\tb\\x7f");
  EXPECT_EQ(ShownText("bad \xff\xfe byte", 64), "bad \\xff\\xfe byte");
  EXPECT_EQ(ShownText("cut \xE2\x82", 64), "cut \\xe2\\x82") << "a truncated sequence";
  EXPECT_EQ(ShownText("c1 \xC2\x9b", 64), "c1 \\u009b") << "C1 controls (CSI) too";
  EXPECT_EQ(ShownText("caf\xC3\xA9", 64), "caf\xC3\xA9");
  EXPECT_EQ(ShownText("\xC0\x80", 64), "\\xc0\\x80") << "an overlong NUL";
}

TEST(ShownTextTest, AnEscapeIsNeverCutInHalf) {
  std::string shown = ShownText(std::string(62, 'a') + "\x01zz", 64);
  EXPECT_EQ(shown, std::string(62, 'a') + "...");
}

TEST(ShownTextTest, NewlinesCanBeKept) {
  EXPECT_EQ(ShownText("one\ntwo\x1b", 64, /*keep_newlines=*/true), "one\ntwo\\x1b");
}

}  // namespace
}  // namespace hetrun

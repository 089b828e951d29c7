#include "metrics/http_request.h"

#include <gtest/gtest.h>

namespace hetrun::launcher {
namespace {

TEST(HttpRequestTest, ACompleteGetGivesMethodAndPathWithoutTheQuery) {
  HeadResult result = ParseRequestHead("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_EQ(result.state, HeadState::kComplete);
  EXPECT_EQ(result.head.method, "GET");
  EXPECT_EQ(result.head.path, "/metrics");
  EXPECT_EQ(ParseRequestHead("HEAD / HTTP/1.0\n\n").state, HeadState::kComplete);
}

TEST(HttpRequestTest, AHeadWithoutItsBlankLineNeedsMoreUntilTheLimit) {
  EXPECT_EQ(ParseRequestHead("GET /metrics HTTP/1.1\r\nHost:").state, HeadState::kIncomplete);
  EXPECT_EQ(ParseRequestHead("").state, HeadState::kIncomplete);
  EXPECT_EQ(ParseRequestHead(std::string(kMaxRequestHeadBytes, 'a')).state, HeadState::kBad);
}

TEST(HttpRequestTest, MalformedRequestLinesAreBad) {
  for (const char* bad : {"GET\r\n\r\n", "GET /metrics\r\n\r\n", "get /metrics HTTP/1.1\r\n\r\n",
                          "GET metrics HTTP/1.1\r\n\r\n", "GET /metrics HTTP/2.0\r\n\r\n",
                          "GET /met rics HTTP/1.1\r\n\r\n", " /metrics HTTP/1.1\r\n\r\n",
                          "GET /metrics HTTP/1.10\r\n\r\n", "GET /\x01 HTTP/1.1\r\n\r\n"}) {
    EXPECT_EQ(ParseRequestHead(bad).state, HeadState::kBad) << bad;
  }
}

}  // namespace
}  // namespace hetrun::launcher

// The head of an HTTP/1.x request as the metrics endpoint reads it: the request line only
// (method, path), from at most kMaxRequestHeadBytes bytes. Pure and bounded: fuzzed by
// tests/fuzz/http_request_fuzzer.cc.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "hetrun/base/status.h"

namespace hetrun::launcher {

/// Largest request head accepted (request line and headers up to the blank line).
inline constexpr size_t kMaxRequestHeadBytes = 8 * 1024;

struct HttpRequestHead {
  std::string method;  ///< "GET"
  std::string path;    ///< "/metrics" (the query string removed)
};

enum class HeadState {
  kIncomplete,  ///< no blank line yet, and under the limit: read more
  kComplete,    ///< parsed
  kBad,         ///< malformed or over the limit: answer 400 and close
};

struct HeadResult {
  HeadState state = HeadState::kIncomplete;
  HttpRequestHead head;
};

/// Looks for a complete request head at the start of `bytes` (what the connection sent so far).
HeadResult ParseRequestHead(std::string_view bytes);

}  // namespace hetrun::launcher

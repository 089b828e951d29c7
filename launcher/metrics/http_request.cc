#include "metrics/http_request.h"

namespace hetrun::launcher {
namespace {

bool IsTokenChar(char c) {
  return c >= 'A' && c <= 'Z';
}

bool IsPathChar(char c) {
  return c > ' ' && c < 0x7f;
}

}  // namespace

HeadResult ParseRequestHead(std::string_view bytes) {
  HeadResult result;
  size_t end = bytes.find("\r\n\r\n");
  size_t bare = bytes.find("\n\n");
  if (end == std::string_view::npos && bare == std::string_view::npos) {
    result.state = bytes.size() >= kMaxRequestHeadBytes ? HeadState::kBad : HeadState::kIncomplete;
    return result;
  }
  result.state = HeadState::kBad;
  size_t line_end = bytes.find('\n');
  if (line_end > kMaxRequestHeadBytes) return result;
  std::string_view line = bytes.substr(0, line_end);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  size_t first = line.find(' ');
  if (first == std::string_view::npos || first == 0 || first > 16) return result;
  std::string_view method = line.substr(0, first);
  for (char c : method) {
    if (!IsTokenChar(c)) return result;
  }
  size_t second = line.find(' ', first + 1);
  if (second == std::string_view::npos) return result;
  std::string_view target = line.substr(first + 1, second - first - 1);
  std::string_view version = line.substr(second + 1);
  if (target.empty() || target[0] != '/' || version.substr(0, 7) != "HTTP/1.") return result;
  if (version.size() != 8 || (version[7] != '0' && version[7] != '1')) return result;
  for (char c : target) {
    if (!IsPathChar(c)) return result;
  }
  size_t query = target.find('?');
  result.head.method = std::string(method);
  result.head.path = std::string(target.substr(0, query));
  result.state = HeadState::kComplete;
  return result;
}

}  // namespace hetrun::launcher

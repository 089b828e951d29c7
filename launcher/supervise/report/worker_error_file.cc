#include "supervise/report/worker_error_file.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <string_view>

#include "hetrun/base/input_file.h"
#include "hetrun/base/shown_text.h"

namespace hetrun::launcher {
namespace {

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

// Lines longer than this are cut (between characters, controls escaped: base/shown_text.h): a
// frame's source line can be anything.
constexpr size_t kMaxLine = 240;

std::string Cut(std::string_view text) {
  return ShownText(text, kMaxLine);
}

}  // namespace

std::vector<std::string> LastTracebackFrames(const std::string& traceback, size_t frames) {
  std::vector<std::string_view> lines;
  for (size_t start = 0; start < traceback.size();) {
    size_t end = traceback.find('\n', start);
    if (end == std::string::npos) end = traceback.size();
    lines.push_back(std::string_view(traceback).substr(start, end - start));
    start = end + 1;
  }
  std::vector<std::string> found;  // innermost first while walking back
  for (size_t i = lines.size(); i-- > 0 && found.size() < frames;) {
    std::string_view line = Trim(lines[i]);
    if (!line.starts_with("File \"")) continue;
    std::string frame = Cut(line);
    if (i + 1 < lines.size()) {
      std::string_view source = Trim(lines[i + 1]);
      if (!source.empty() && !source.starts_with("File \"") && !source.starts_with("^") &&
          !source.starts_with("~")) {
        frame += ": " + Cut(source);
      }
    }
    found.push_back(std::move(frame));
  }
  return {found.rbegin(), found.rend()};
}

std::optional<WorkerErrorReport> ReadWorkerErrorFile(const std::string& path) {
  Result<std::string> text = ReadRegularFile(path, kMaxErrorFileBytes, "worker error file");
  if (!text.ok()) {
    if (text.status().code() != StatusCode::kNotFound) {
      spdlog::debug("{}", text.status().message());
    }
    return std::nullopt;
  }
  if (Status depth = CheckJsonDepth(*text, kMaxJsonDepth, path); !depth.ok()) {
    spdlog::debug("{}", depth.message());
    return std::nullopt;
  }
  nlohmann::json root = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object() || !root.contains("message")) {
    spdlog::debug("worker error file {}: not torchelastic's JSON", path);
    return std::nullopt;
  }
  WorkerErrorReport report;
  const nlohmann::json& message = root["message"];
  if (message.is_string()) {
    report.message = ShownText(message.get<std::string>(), kMaxLine, /*keep_newlines=*/true);
  } else if (message.is_object()) {
    auto text_it = message.find("message");
    if (text_it != message.end() && text_it->is_string()) {
      report.message = ShownText(text_it->get<std::string>(), 1024, /*keep_newlines=*/true);
    }
    auto extra = message.find("extraInfo");
    if (extra != message.end() && extra->is_object()) {
      auto stack = extra->find("py_callstack");
      if (stack != extra->end() && stack->is_string()) {
        report.last_frames = LastTracebackFrames(stack->get<std::string>(), kErrorFileFrames);
      }
    }
  }
  if (report.message.empty() && report.last_frames.empty()) return std::nullopt;
  return report;
}

}  // namespace hetrun::launcher

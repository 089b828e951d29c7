#include "hetrun/base/logging.h"

#include <spdlog/formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>

namespace hetrun {
namespace {

std::atomic<int> g_node{-1};
std::atomic<int> g_rank{-1};
std::atomic<LogFormat> g_format{LogFormat::kText};

std::string Timestamp(std::chrono::system_clock::time_point when) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(when);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()) % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[40];
  size_t n = std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(buffer + n, sizeof(buffer) - n, ".%03dZ", static_cast<int>(ms.count()));
  return buffer;
}

std::string FormatAt(LogFormat format, std::string_view level, std::string_view message,
                     std::chrono::system_clock::time_point when) {
  if (format == LogFormat::kJson) {
    nlohmann::json line = {{"time", Timestamp(when)}, {"level", level}, {"msg", message}};
    int node = g_node.load();
    int rank = g_rank.load();
    if (node >= 0) line["node"] = node;
    if (rank >= 0) line["rank"] = rank;
    return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  // Text: a UTC timestamp, then the prefix (worker lines pass through without either).
  std::string out = Timestamp(when);
  out += ' ';
  out += LogPrefix();
  out += ' ';
  if (level != "info") {
    out += level;
    out += ": ";
  }
  out += message;
  return out;
}

class HetrunFormatter final : public spdlog::formatter {
 public:
  explicit HetrunFormatter(LogFormat format) : format_(format) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    auto level = spdlog::level::to_string_view(msg.level);
    std::string line = FormatAt(format_, std::string_view(level.data(), level.size()),
                                std::string_view(msg.payload.data(), msg.payload.size()), msg.time);
    line += '\n';
    dest.append(line.data(), line.data() + line.size());
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<HetrunFormatter>(format_);
  }

 private:
  LogFormat format_;
};

}  // namespace

Result<LogFormat> ParseLogFormat(std::string_view text) {
  if (text == "text") return LogFormat::kText;
  if (text == "json") return LogFormat::kJson;
  return InvalidArgumentError("log format '" + std::string(text.substr(0, 32)) +
                              "' is not text or json");
}

Result<LogOptions> LogOptionsFromEnv(const Environment& env) {
  LogOptions options;
  if (auto level = env.Get("HETRUN_LOG_LEVEL")) {
    if (spdlog::level::from_str(*level) == spdlog::level::off && *level != "off") {
      return InvalidArgumentError("HETRUN_LOG_LEVEL='" + level->substr(0, 32) +
                                  "' (environment): use trace, debug, info, warn, error or off");
    }
    options.level = *level;
  }
  if (auto format = env.Get("HETRUN_LOG_FORMAT")) {
    auto parsed = ParseLogFormat(*format);
    if (!parsed.ok()) return parsed.status().WithContext("HETRUN_LOG_FORMAT (environment)");
    options.format = *parsed;
  }
  return options;
}

Status ConfigureLogging(const LogOptions& options) {
  spdlog::level::level_enum level = spdlog::level::from_str(options.level);
  if (level == spdlog::level::off && options.level != "off") {
    return InvalidArgumentError("log level '" + options.level +
                                "' is not trace, debug, info, warn, error or off");
  }
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("hetrun", sink);
  logger->set_formatter(std::make_unique<HetrunFormatter>(options.format));
  logger->set_level(level);
  logger->flush_on(spdlog::level::trace);  // lines must not be lost when a worker dies
  spdlog::set_default_logger(logger);
  g_format.store(options.format);
  return Status::Ok();
}

LogFormat CurrentLogFormat() {
  return g_format.load();
}

std::string FormatWorkerLine(int rank, std::string_view stream, std::string_view text) {
  nlohmann::json line = {{"time", Timestamp(std::chrono::system_clock::now())}};
  int node = g_node.load();
  if (node >= 0) line["node"] = node;
  line["rank"] = rank;
  line["stream"] = stream;
  line["msg"] = text;
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void SetLogIdentity(int node, int rank) {
  g_node.store(node);
  g_rank.store(rank);
}

std::string LogPrefix() {
  std::string out = "[hetrun";
  int node = g_node.load();
  int rank = g_rank.load();
  if (node >= 0) out += " node " + std::to_string(node);
  if (rank >= 0) out += " rank " + std::to_string(rank);
  out += "]";
  return out;
}

std::string FormatLogLine(LogFormat format, std::string_view level, std::string_view message) {
  return FormatAt(format, level, message, std::chrono::system_clock::now());
}

}  // namespace hetrun

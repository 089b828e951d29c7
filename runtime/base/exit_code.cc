#include "hetrun/base/exit_code.h"

#include <sys/wait.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace hetrun {
namespace {

using Kind = ExitCodeRow::Kind;

constexpr ExitCodeRow kTable[] = {
#define HETRUN_EXIT_CODE(constant, code, meaning, action) \
  {Kind::kCode, #code, code, #constant, meaning, action},
#define HETRUN_EXIT_RANGE(codes, meaning, action) {Kind::kRange, codes, -1, "", meaning, action},
#define HETRUN_EXIT_EVENT(event, meaning, action) {Kind::kEvent, #event, -1, "", meaning, action},
#include "hetrun/base/exit_codes.def"
#undef HETRUN_EXIT_CODE
#undef HETRUN_EXIT_RANGE
#undef HETRUN_EXIT_EVENT
};

}  // namespace

bool ExitCodeRow::IsPolicy() const {
  return action == "RestartJob" || action == "TerminateJob" || action == "AbortJob";
}

std::span<const ExitCodeRow> ExitCodeTable() {
  return kTable;
}

std::vector<VolcanoPolicy> VolcanoPolicies() {
  std::vector<VolcanoPolicy> policies;
  for (Kind kind : {Kind::kCode, Kind::kEvent}) {
    for (const ExitCodeRow& row : kTable) {
      if (row.kind != kind || !row.IsPolicy()) continue;
      policies.push_back({kind == Kind::kCode ? row.code : -1,
                          kind == Kind::kEvent ? row.cell : std::string_view(), row.action,
                          row.meaning});
    }
  }
  return policies;
}

std::string ExitCodeMarkdown() {
  std::ostringstream out;
  out << "| code | meaning | suggested Volcano action |\n|---|---|---|\n";
  for (const ExitCodeRow& row : kTable) {
    out << "| " << row.cell << " | " << row.meaning << " | " << row.action << " |\n";
  }
  return out.str();
}

std::string ExitCodeText() {
  std::ostringstream out;
  for (const ExitCodeRow& row : kTable) {
    std::string cell(row.cell);
    std::string action(row.action);
    out << "  " << cell << std::string(cell.size() < 11 ? 11 - cell.size() : 1, ' ') << action
        << std::string(action.size() < 14 ? 14 - action.size() : 1, ' ') << row.meaning << "\n";
  }
  return out.str();
}

std::string ExitCodeJson() {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const ExitCodeRow& row : kTable) {
    nlohmann::ordered_json entry = {{"kind", row.kind == Kind::kCode    ? "code"
                                             : row.kind == Kind::kRange ? "range"
                                                                        : "event"},
                                    {"code", row.cell}};
    if (row.kind == Kind::kCode) {
      entry["value"] = row.code;
      entry["constant"] = row.constant;
    }
    entry["meaning"] = row.meaning;
    entry["action"] = row.action;
    entry["policy"] = row.IsPolicy();
    rows.push_back(std::move(entry));
  }
  nlohmann::ordered_json policies = nlohmann::ordered_json::array();
  for (const VolcanoPolicy& policy : VolcanoPolicies()) {
    if (policy.exit_code >= 0) {
      policies.push_back({{"exitCode", policy.exit_code}, {"action", policy.action}});
    } else {
      policies.push_back({{"event", policy.event}, {"action", policy.action}});
    }
  }
  return nlohmann::ordered_json{{"exit_codes", rows}, {"policies", policies}}.dump(2) + "\n";
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kUsage:
      return kExitUsage;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kFailedPrecondition:
      return kExitConfig;
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
      return kExitTransient;
    case StatusCode::kArchMismatch:
      return kExitArchMismatch;
    case StatusCode::kResourceExhausted:
      return kExitMemory;
    case StatusCode::kInternal:
      return kExitInternal;
  }
  return kExitInternal;
}

int ExitCodeForWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return kExitInternal;
}

}  // namespace hetrun

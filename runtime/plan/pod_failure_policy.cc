#include "hetrun/plan/pod_failure_policy.h"

#include <algorithm>
#include <charconv>

#include "hetrun/base/exit_code.h"

namespace hetrun::plan {
namespace {

using Kind = ExitCodeRow::Kind;

// The codes of a range row written "A-B" ("1-63"); none for "128+N".
std::vector<int> RangeCodes(std::string_view cell) {
  size_t dash = cell.find('-');
  if (dash == std::string_view::npos) return {};
  int first = 0;
  int last = 0;
  std::string_view a = cell.substr(0, dash);
  std::string_view b = cell.substr(dash + 1);
  if (std::from_chars(a.data(), a.data() + a.size(), first).ec != std::errc() ||
      std::from_chars(b.data(), b.data() + b.size(), last).ec != std::errc()) {
    return {};
  }
  std::vector<int> codes;
  for (int code = std::max(first, 1); code <= last; ++code) codes.push_back(code);
  return codes;
}

void SortUnique(std::vector<int>* codes) {
  std::sort(codes->begin(), codes->end());
  codes->erase(std::unique(codes->begin(), codes->end()), codes->end());
}

}  // namespace

std::vector<PodFailureRule> PodFailureRules() {
  PodFailureRule evictions{"Count", {}, "", "evicted (PodEvicted): restart the JobSet"};
  PodFailureRule restart{"Count", {}, "", "transient: restart the JobSet"};
  PodFailureRule fail{"FailJob", {}, "", "hetrun's verdicts and workers' own codes: fail it"};
  for (const ExitCodeRow& row : ExitCodeTable()) {
    const bool restarts = row.action == "RestartJob";
    if (row.kind == Kind::kEvent) {
      if (restarts && row.cell == "PodEvicted") evictions.pod_condition = "DisruptionTarget";
    } else if (row.kind == Kind::kCode) {
      if (row.code > 0) (restarts ? restart : fail).codes.push_back(row.code);
    } else {
      for (int code : RangeCodes(row.cell)) fail.codes.push_back(code);
    }
  }
  SortUnique(&restart.codes);
  SortUnique(&fail.codes);
  std::erase_if(fail.codes, [&](int code) {
    return std::binary_search(restart.codes.begin(), restart.codes.end(), code);
  });
  std::vector<PodFailureRule> rules;
  if (!evictions.pod_condition.empty()) rules.push_back(std::move(evictions));
  if (!restart.codes.empty()) rules.push_back(std::move(restart));
  if (!fail.codes.empty()) rules.push_back(std::move(fail));
  return rules;
}

}  // namespace hetrun::plan

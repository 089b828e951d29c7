#include "hetrun/memory/alloc_conf.h"

#include <cmath>
#include <cstdio>

#include "hetrun/base/units.h"

namespace hetrun::memory {
namespace {

constexpr std::string_view kFractionKey = "per_process_memory_fraction";

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace

bool TorchSupportsMemoryFraction(std::string_view torch_version) {
  // "MAJOR.MINOR[.PATCH][+local]": only the first two numbers matter.
  size_t dot = torch_version.find('.');
  if (dot == std::string_view::npos) return false;
  size_t end = torch_version.find_first_not_of("0123456789", dot + 1);
  auto major = ParseInt(torch_version.substr(0, dot));
  auto minor = ParseInt(torch_version.substr(
      dot + 1, end == std::string_view::npos ? std::string_view::npos : end - dot - 1));
  if (!major.ok() || !minor.ok()) return false;
  return *major > 2 || (*major == 2 && *minor >= 11);
}

double MemoryFraction(uint64_t ceiling_bytes, uint64_t device_bytes) {
  if (device_bytes == 0 || ceiling_bytes >= device_bytes) return 1.0;
  double fraction =
      std::floor(static_cast<double>(ceiling_bytes) / static_cast<double>(device_bytes) * 1e6) /
      1e6;
  // Rounding of the division may still leave fraction * device one byte over the ceiling.
  while (fraction > 0 &&
         fraction * static_cast<double>(device_bytes) > static_cast<double>(ceiling_bytes)) {
    fraction -= 1e-6;
  }
  return fraction < 0 ? 0.0 : fraction;
}

std::string FormatFraction(double fraction) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6f", fraction);
  return text;
}

Result<std::vector<AllocConfItem>> ParseAllocConf(std::string_view text,
                                                  std::string_view variable) {
  std::vector<AllocConfItem> items;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c != ',' || depth > 0) continue;
    std::string_view item = Trim(text.substr(start, i - start));
    start = i + 1;
    if (item.empty()) continue;
    size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      return InvalidArgumentError(std::string(variable) + "='" + std::string(text.substr(0, 200)) +
                                  "': item '" + std::string(item.substr(0, 64)) +
                                  "' is not KEY:VALUE");
    }
    items.push_back(
        {std::string(Trim(item.substr(0, colon))), std::string(Trim(item.substr(colon + 1)))});
  }
  if (depth != 0) {
    return InvalidArgumentError(std::string(variable) + "='" + std::string(text.substr(0, 200)) +
                                "': unbalanced '[' ']'");
  }
  return items;
}

Result<AllocConfMerge> MergeMemoryFraction(const Environment& env, double fraction) {
  AllocConfMerge merge;
  std::optional<std::string> current = env.Get("PYTORCH_CUDA_ALLOC_CONF");
  merge.variable = current ? "PYTORCH_CUDA_ALLOC_CONF" : "PYTORCH_ALLOC_CONF";
  if (!current) current = env.Get("PYTORCH_ALLOC_CONF");
  HETRUN_ASSIGN_OR_RETURN(std::vector<AllocConfItem> items,
                          ParseAllocConf(current.value_or(""), merge.variable));
  std::string merged;
  for (const AllocConfItem& item : items) {
    if (item.key == kFractionKey) {
      merge.note = merge.variable + " already sets " + item.key + ":" + item.value +
                   "; kept (hetrun's would be " + FormatFraction(fraction) + ")";
      return merge;
    }
    if (item.key == "backend" && item.value == "cudaMallocAsync") {
      merge.note = merge.variable +
                   " selects backend:cudaMallocAsync, which ignores per_process_memory_fraction; "
                   "the ceiling is passed in HETRUN_MEMORY_CEILING_BYTES only";
      return merge;
    }
    merged += item.key + ":" + item.value + ",";
  }
  merged += std::string(kFractionKey) + ":" + FormatFraction(fraction);
  merge.value = merged;
  return merge;
}

}  // namespace hetrun::memory

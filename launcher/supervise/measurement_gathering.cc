#include "supervise/measurement_gathering.h"

#include <dirent.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "hetrun/base/atomic_file.h"

namespace hetrun::launcher {
namespace {

// rank_<digits>.json names in `dir`, sorted; empty when the folder does not exist.
std::vector<std::string> RankFileNames(const std::string& dir) {
  std::vector<std::string> names;
  DIR* folder = ::opendir(dir.c_str());
  if (folder == nullptr) {
    if (errno != ENOENT) spdlog::warn("measurements: opendir({}): {}", dir, std::strerror(errno));
    return names;
  }
  while (const dirent* entry = ::readdir(folder)) {
    const std::string name = entry->d_name;
    if (name.size() > 10 && name.starts_with("rank_") && name.ends_with(".json") &&
        std::all_of(name.begin() + 5, name.end() - 5,
                    [](char c) { return c >= '0' && c <= '9'; })) {
      names.push_back(name);
    }
  }
  if (::closedir(folder) != 0)
    spdlog::warn("measurements: closedir({}): {}", dir, std::strerror(errno));
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<pipeline::Measurements> Merge(const std::vector<pipeline::Measurements>& parts,
                                            const std::vector<std::string>& names) {
  if (parts.empty()) return std::nullopt;
  std::vector<std::string> skipped;
  Result<pipeline::Measurements> merged = pipeline::MergeMeasurements(parts, names, skipped);
  for (const std::string& line : skipped) spdlog::warn("measurements: skipped {}", line);
  if (!merged.ok()) return std::nullopt;
  return std::move(*merged);
}

}  // namespace

std::optional<pipeline::Measurements> MergeRankFiles(const std::string& run_dir) {
  const std::string dir = run_dir + "/measurements";
  std::vector<pipeline::Measurements> parts;
  std::vector<std::string> names;
  for (const std::string& name : RankFileNames(dir)) {
    std::vector<std::string> dropped;
    Result<pipeline::Measurements> part =
        pipeline::LoadMeasurementsKeepingWindows(dir + "/" + name, dropped);
    for (const std::string& line : dropped)
      spdlog::warn("measurements: dropped a window: {}", line);
    if (!part.ok()) {
      spdlog::warn("measurements: skipped {}", part.status().message());
      continue;
    }
    parts.push_back(std::move(*part));
    names.push_back(dir + "/" + name);
  }
  return Merge(parts, names);
}

std::optional<std::string> MeasurementsWithin(pipeline::Measurements m, size_t max_bytes) {
  std::string text = pipeline::MeasurementsJson(m);
  size_t most = 0;
  for (const pipeline::RankMeasurements& rank : m.ranks) most = std::max(most, rank.windows.size());
  while (text.size() > max_bytes && most > 1) {
    most = (most + 1) / 2;
    for (pipeline::RankMeasurements& rank : m.ranks) {
      if (rank.windows.size() > most) {
        rank.windows.erase(rank.windows.begin(),
                           rank.windows.end() - static_cast<std::ptrdiff_t>(most));
      }
    }
    text = pipeline::MeasurementsJson(m);
    spdlog::warn("measurements: kept each rank's last {} windows to fit a {}-byte record", most,
                 max_bytes);
  }
  if (text.size() > max_bytes) return std::nullopt;
  return text;
}

std::optional<pipeline::Measurements> MergeNodeParts(
    const std::optional<pipeline::Measurements>& local,
    const std::vector<std::optional<std::string>>& others) {
  std::vector<pipeline::Measurements> parts;
  std::vector<std::string> names;
  if (local) {
    parts.push_back(*local);
    names.push_back("node 0's measurements");
  }
  for (size_t i = 0; i < others.size(); ++i) {
    if (!others[i]) continue;
    const std::string name = "node " + std::to_string(i + 1) + "'s measurements";
    std::vector<std::string> dropped;
    Result<pipeline::Measurements> part =
        pipeline::ParseMeasurementsKeepingWindows(*others[i], name, dropped);
    for (const std::string& line : dropped)
      spdlog::warn("measurements: dropped a window: {}", line);
    if (!part.ok()) {
      spdlog::warn("measurements: skipped {}", part.status().message());
      continue;
    }
    parts.push_back(std::move(*part));
    names.push_back(name);
  }
  return Merge(parts, names);
}

void SaveMeasurements(const pipeline::Measurements& m, const std::string& run_dir,
                      const std::string& out) {
  const std::string text = pipeline::MeasurementsJson(m);
  size_t windows = 0;
  for (const pipeline::RankMeasurements& rank : m.ranks) windows += rank.windows.size();
  const std::string merged = pipeline::MergedMeasurementsPath(run_dir);
  if (Status written = WriteFileAtomically(merged, text, "measurements"); !written.ok()) {
    spdlog::warn("{}", written.message());
  }
  if (out.empty()) {
    spdlog::info(
        "measurements of {} ranks ({} windows) in {} (removed with the run folder; "
        "--measurements-out FILE keeps them)",
        m.ranks.size(), windows, merged);
    return;
  }
  if (Status copied = WriteFileAtomically(out, text, "--measurements-out"); !copied.ok()) {
    spdlog::warn("{}", copied.message());
    return;
  }
  spdlog::info("measurements of {} ranks ({} windows) written to {}", m.ranks.size(), windows, out);
}

}  // namespace hetrun::launcher

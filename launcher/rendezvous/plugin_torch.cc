#include "rendezvous/plugin_torch.h"

#include "hetrun/base/input_file.h"

namespace hetrun::launcher {
namespace {

constexpr size_t kMaxSmallFile = 64 * 1024;

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

std::string_view Release(std::string_view version) {
  return version.substr(0, version.find('+'));
}

// The installed torch's folder: the record's when it holds a torch, else the interpreter's.
// Sets *where to the places looked in, for the message when there is none.
Result<std::filesystem::path> FindTorchDir(const std::filesystem::path& recorded,
                                           const TorchDirLookup& lookup, std::string* where) {
  std::error_code error;
  if (std::filesystem::exists(recorded / "version.py", error)) return recorded;
  *where = recorded.string() + " has no torch";
  if (!lookup) return NotFoundError(*where);
  Result<std::filesystem::path> found = lookup();
  if (!found.ok()) {
    *where += ", and " + found.status().message();
    return NotFoundError(*where);
  }
  if (!std::filesystem::exists(*found / "version.py", error)) {
    *where += ", and " + found->string() + " has no version.py";
    return NotFoundError(*where);
  }
  return *found;
}

}  // namespace

Result<PluginTorchRecord> ParsePluginTorchRecord(std::string_view text, std::string_view path) {
  PluginTorchRecord record;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = Trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (line.empty() || line.front() == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgumentError(std::string(path) + ": '" + std::string(line) +
                                  "' is not key=value");
    }
    const std::string_view key = Trim(line.substr(0, eq));
    const std::string_view value = Trim(line.substr(eq + 1));
    if (key == "torch_version") record.version = value;
    if (key == "torch_dir") record.dir = value;
  }
  if (record.version.empty() || record.dir.empty()) {
    return InvalidArgumentError(std::string(path) + ": needs torch_version= and torch_dir= lines");
  }
  return record;
}

Result<std::string> TorchPackageVersion(const std::filesystem::path& torch_dir) {
  const std::string path = (torch_dir / "version.py").string();
  HETRUN_ASSIGN_OR_RETURN(std::string text, ReadRegularFile(path, kMaxSmallFile, "torch version"));
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    std::string_view line = Trim(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (line.rfind("__version__", 0) != 0) continue;
    line = Trim(line.substr(std::string_view("__version__").size()));
    if (line.empty() || line.front() != '=') continue;
    line = Trim(line.substr(1));
    if (line.size() >= 2 && (line.front() == '\'' || line.front() == '"') &&
        line.back() == line.front()) {
      return std::string(line.substr(1, line.size() - 2));
    }
  }
  return InvalidArgumentError(path + ": no __version__ = '...' line");
}

bool SameTorchRelease(std::string_view built, std::string_view installed) {
  return !built.empty() && Release(built) == Release(installed);
}

Result<std::filesystem::path> CheckPluginTorch(const std::filesystem::path& plugin,
                                               const TorchDirLookup& lookup) {
  const std::filesystem::path record_path = plugin.parent_path() / kPluginTorchRecordName;
  Result<std::string> text = ReadRegularFile(record_path.string(), kMaxSmallFile, "torch record");
  if (!text.ok()) {
    return FailedPreconditionError(plugin.string() + " has no readable torch record (" +
                                   text.status().message() +
                                   "): a library from another build? Reinstall hetrun");
  }
  Result<PluginTorchRecord> record = ParsePluginTorchRecord(*text, record_path.string());
  if (!record.ok()) return FailedPreconditionError(record.status().message());
  std::filesystem::path recorded(record->dir);
  if (recorded.is_relative()) recorded = plugin.parent_path() / recorded;
  recorded = recorded.lexically_normal();
  const std::string built =
      "multi-node jobs load " + plugin.string() + ", built for torch " + record->version;
  std::string where;
  Result<std::filesystem::path> torch = FindTorchDir(recorded, lookup, &where);
  if (!torch.ok()) {
    return FailedPreconditionError(built + ", but no torch is installed (" + where +
                                   "): install torch " + std::string(Release(record->version)) +
                                   " beside hetrun");
  }
  Result<std::string> installed = TorchPackageVersion(*torch);
  if (!installed.ok()) return FailedPreconditionError(built + ": " + installed.status().message());
  if (!SameTorchRelease(record->version, *installed)) {
    return FailedPreconditionError(
        built + ", but the installed torch is " + *installed + " (" + torch->string() +
        "): the plugin links torch's C++ API, which differs between releases; install torch " +
        std::string(Release(record->version)) + ", or build hetrun against torch " +
        std::string(Release(*installed)) + " (pip install --no-build-isolation hetrun's source)");
  }
  return *torch / "lib";
}

}  // namespace hetrun::launcher

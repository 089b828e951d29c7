// `hetrun check`: the image-CI smoke test and the node preflight for kernel images. Every scanned
// file must carry SASS or PTX for every target GPU (exit 80 otherwise); on a node with GPUs the
// probe kernel runs on each GPU and every module is loaded through the driver to confirm.
#include <fmt/format.h>

#include <cxxopts.hpp>
#include <nlohmann/json.hpp>
#include <ostream>

#include "commands/cli_parse.h"
#include "commands/command.h"
#include "hetrun/arch/image_check.h"
#include "hetrun/base/exit_code.h"
#include "hetrun/job/inventory.h"
#include "preflight/driver_load.h"
#include "preflight/gpu_probe.h"
#include "preflight/torch_location.h"

namespace hetrun::launcher {
namespace {

using arch::ArchCheckReport;
using arch::ComputeCapability;

struct Targets {
  std::vector<ComputeCapability> list;
  std::vector<std::string> sources;  ///< per target: "--target-arch", "A100 (HETRUN_FAKE_GPUS)"
  bool real_gpus = false;            ///< probed, not declared
  std::vector<ProbedGpu> probed;
};

Result<Targets> ResolveTargets(const cxxopts::ParseResult& parsed, const Environment& env) {
  Targets targets;
  const std::string fake = parsed.count("fake-gpus") ? parsed["fake-gpus"].as<std::string>() : "";
  const bool declared = !fake.empty() || env.Get("HETRUN_FAKE_GPUS").has_value();
  if (!declared) {
    HETRUN_ASSIGN_OR_RETURN(targets.probed, ProbeGpusInChild());
    targets.real_gpus = !targets.probed.empty();
  }
  if (parsed.count("target-arch")) {
    Result<std::vector<ComputeCapability>> list =
        arch::ParseComputeCapabilityList(parsed["target-arch"].as<std::string>());
    if (!list.ok()) return UsageError("--target-arch: " + list.status().message());
    targets.list = *list;
    targets.sources.assign(targets.list.size(), "--target-arch");
    return targets;
  }
  std::vector<GpuInfo> gpus;
  std::string source;
  if (declared) {
    HETRUN_ASSIGN_OR_RETURN(Inventory inventory, LocalInventory(env, fake, nullptr));
    gpus = std::move(inventory.gpus);
    source = inventory.source_detail;
  } else {
    for (const ProbedGpu& gpu : targets.probed) {
      if (gpu.error.empty()) gpus.push_back(gpu.info);
    }
    source = "CUDA probe";
  }
  for (const GpuInfo& gpu : gpus) {
    ComputeCapability cc{gpu.major, gpu.minor};
    auto at = std::find(targets.list.begin(), targets.list.end(), cc);
    if (at == targets.list.end()) {
      targets.list.push_back(cc);
      targets.sources.push_back(fmt::format("{} ({})", gpu.name, source));
    }
  }
  if (targets.list.empty()) {
    return FailedPreconditionError(
        "hetrun check: no target GPUs: pass --target-arch 8.0,9.0, declare HETRUN_FAKE_GPUS / "
        "--fake-gpus, or run on a node with GPUs");
  }
  return targets;
}

std::string CellText(const arch::FileVerdict& verdict) {
  if (verdict.verdict == arch::Verdict::kPartial) {
    return fmt::format("partial {}/{}", verdict.sass + verdict.ptx_jit, verdict.modules);
  }
  return std::string(arch::VerdictName(verdict.verdict));
}

std::string_view FitName(arch::ImageFit fit) {
  switch (fit) {
    case arch::ImageFit::kSass:
      return "sass";
    case arch::ImageFit::kPtxJit:
      return "ptx-jit";
    case arch::ImageFit::kNone:
      return "none";
  }
  return "none";
}

void PrintTable(std::ostream& out, const ArchCheckReport& report, const Targets& targets) {
  out << "targets:\n";
  for (size_t t = 0; t < report.targets.size(); ++t) {
    out << fmt::format("  {:<5} {}\n", report.targets[t].ToString(), targets.sources[t]);
  }
  if (report.arch_list) {
    out << fmt::format("TORCH_CUDA_ARCH_LIST \"{}\":\n", report.arch_list->text);
    for (size_t t = 0; t < report.targets.size(); ++t) {
      const arch::ArchListCoverage& c = report.arch_list_coverage[t];
      out << fmt::format("  {:<5} {}{}\n", report.targets[t].ToString(), FitName(c.fit),
                         c.via.empty() ? " (no entry covers it)" : " via " + c.via);
    }
  }
  if (report.files.empty()) return;
  size_t width = 4;
  for (const arch::FileCheck& file : report.files) width = std::max(width, file.path.size());
  out << fmt::format("{:<{}}  {:>7}", "FILE", width, "MODULES");
  for (const ComputeCapability& target : report.targets) {
    out << fmt::format("  {:<16}", target.ToString());
  }
  out << "\n";
  for (const arch::FileCheck& file : report.files) {
    if (file.error) {
      out << fmt::format("{:<{}}  error: {}\n", file.path, width, file.error->message());
      continue;
    }
    out << fmt::format("{:<{}}  {:>7}", file.path, width, file.modules);
    for (const arch::FileVerdict& verdict : file.verdicts) {
      out << fmt::format("  {:<16}", CellText(verdict));
    }
    out << "\n";
  }
}

nlohmann::json ReportJson(const ArchCheckReport& report, const Status& outcome) {
  nlohmann::json json;
  json["ok"] = outcome.ok();
  json["strict"] = report.strict;
  json["targets"] = nlohmann::json::array();
  for (const ComputeCapability& target : report.targets)
    json["targets"].push_back(target.ToString());
  json["arch_list"] = nlohmann::json::object();
  if (report.arch_list) {
    nlohmann::json entries = nlohmann::json::array();
    for (const arch::ArchListEntry& entry : report.arch_list->entries) {
      entries.push_back(entry.ToString());
    }
    nlohmann::json coverage = nlohmann::json::object();
    for (size_t t = 0; t < report.targets.size(); ++t) {
      coverage[report.targets[t].ToString()] = {{"fit", FitName(report.arch_list_coverage[t].fit)},
                                                {"via", report.arch_list_coverage[t].via}};
    }
    json["arch_list"] = {{"text", report.arch_list->text},
                         {"entries", std::move(entries)},
                         {"coverage", std::move(coverage)}};
  }
  json["files"] = nlohmann::json::array();
  for (const arch::FileCheck& file : report.files) {
    nlohmann::json item = {{"file", file.path}, {"verdicts", nlohmann::json::object()}};
    if (file.error) {
      item["error"] = file.error->message();
    } else {
      item["modules"] = file.modules;
      nlohmann::json counts = nlohmann::json::object();
      for (size_t t = 0; t < report.targets.size(); ++t) {
        const arch::FileVerdict& v = file.verdicts[t];
        const std::string key = report.targets[t].ToString();
        item["verdicts"][key] = arch::VerdictName(v.verdict);
        counts[key] = {{"sass", v.sass}, {"ptx_jit", v.ptx_jit}, {"missing", v.missing}};
      }
      item["counts"] = std::move(counts);
    }
    json["files"].push_back(std::move(item));
  }
  json["memory"] = nlohmann::json::object();
  if (!outcome.ok()) json["error"] = outcome.message();
  return json;
}

// The probe kernel's result per GPU; an arch mismatch (the last) when it failed on a GPU.
Status ReportProbe(const Targets& targets, std::ostream& out, nlohmann::json* json) {
  Status outcome = Status::Ok();
  nlohmann::json probe = nlohmann::json::array();
  for (size_t i = 0; i < targets.probed.size(); ++i) {
    const ProbedGpu& gpu = targets.probed[i];
    if (gpu.error.empty()) {
      out << fmt::format("probe kernel: GPU {} {} ({}): ran the sm_{} image\n", i, gpu.info.name,
                         gpu.info.CapabilityString(), gpu.kernel_arch / 10);
    } else {
      out << fmt::format("probe kernel: GPU {}: failed: {}\n", i, gpu.error);
      outcome = ArchMismatchError(fmt::format("probe kernel failed on GPU {}: {}", i, gpu.error));
    }
    probe.push_back({{"gpu", i},
                     {"name", gpu.info.name},
                     {"capability", gpu.info.CapabilityString()},
                     {"kernel_arch", gpu.kernel_arch},
                     {"error", gpu.error}});
  }
  (*json)["probe"] = std::move(probe);
  return outcome;
}

// How many of `file`'s modules the offline verdict says GPU `device` runs (-1: not a target).
int ExpectedLoads(const Targets& targets, const ArchCheckReport& report,
                  const arch::FileCheck& file, int device) {
  if (device < 0 || static_cast<size_t>(device) >= targets.probed.size()) return -1;
  const ProbedGpu& gpu = targets.probed[device];
  const ComputeCapability cc{gpu.info.major, gpu.info.minor};
  int expected = -1;
  for (size_t t = 0; t < report.targets.size(); ++t) {
    if (report.targets[t] == cc) expected = file.verdicts[t].sass + file.verdicts[t].ptx_jit;
  }
  return expected;
}

// One file on one GPU as the driver saw it; an arch mismatch when it loads fewer modules than
// the offline verdict expected.
Status ReportDriverLoad(const DriverFileLoad& l, const arch::FileCheck& file, int expected,
                        std::ostream& out, nlohmann::json* results) {
  const bool agrees = expected < 0 || l.loaded >= expected;
  out << fmt::format("driver load: GPU {} {}: {} loaded, {} without image, {} other errors{}{}\n",
                     l.device, file.path, l.loaded, l.no_binary, l.other_errors,
                     agrees ? "" : fmt::format(" (offline verdict expected {} to load)", expected),
                     l.first_error.empty() ? "" : "; first: " + l.first_error);
  results->push_back({{"gpu", l.device},
                      {"file", file.path},
                      {"loaded", l.loaded},
                      {"no_binary", l.no_binary},
                      {"other_errors", l.other_errors},
                      {"expected", expected},
                      {"first_error", l.first_error}});
  if (agrees) return Status::Ok();
  return ArchMismatchError(
      fmt::format("the driver on GPU {} loads {} of the {} modules of {} "
                  "that the offline check expected to run ({})",
                  l.device, l.loaded, expected, file.path, l.first_error));
}

// On real GPUs: the probe kernel's result per GPU, and the driver's view of every module.
// Returns an error when the driver refuses a module the offline verdict said would run.
Status ConfirmOnDevices(const Targets& targets, const ArchCheckReport& report, bool load,
                        std::ostream& out, nlohmann::json* json) {
  if (!targets.real_gpus) {
    out << "probe kernel: skipped (no GPU)\ndriver load check: skipped (no GPU)\n";
    (*json)["probe"] = "skipped (no GPU)";
    (*json)["driver_load"] = "skipped (no GPU)";
    return Status::Ok();
  }
  Status outcome = ReportProbe(targets, out, json);
  std::vector<std::string> paths;
  std::vector<size_t> file_index;
  for (size_t f = 0; f < report.files.size(); ++f) {
    if (!report.files[f].error && report.files[f].modules > 0) {
      paths.push_back(report.files[f].path);
      file_index.push_back(f);
    }
  }
  if (!load || paths.empty()) {
    out << "driver load check: skipped" << (load ? " (no kernel modules)" : " (--no-driver-load)")
        << "\n";
    (*json)["driver_load"] = "skipped";
    return outcome;
  }
  Result<DriverLoadReport> loaded = LoadModulesInChild(paths, std::chrono::minutes(10));
  if (!loaded.ok()) return loaded.status();
  if (loaded->skipped) {
    out << "driver load check: skipped (" << loaded->skip_reason << ")\n";
    (*json)["driver_load"] = "skipped (" + loaded->skip_reason + ")";
    return outcome;
  }
  nlohmann::json results = nlohmann::json::array();
  for (const DriverFileLoad& l : loaded->loads) {
    const arch::FileCheck& file = report.files[file_index.at(l.file)];
    Status agrees =
        ReportDriverLoad(l, file, ExpectedLoads(targets, report, file, l.device), out, &results);
    if (!agrees.ok() && outcome.ok()) outcome = agrees;
  }
  (*json)["driver_load"] = std::move(results);
  return outcome;
}

void AddCheckOptions(cxxopts::Options& options) {
  options.positional_help("[PATH...]");
  options.add_options()("target-arch", "compute capabilities to check, e.g. 8.0,9.0",
                        cxxopts::value<std::string>())(
      "arch-list", "a TORCH_CUDA_ARCH_LIST to evaluate (default: $TORCH_CUDA_ARCH_LIST)",
      cxxopts::value<std::string>())("scan", "file or directory to scan (repeatable)",
                                     cxxopts::value<std::vector<std::string>>())(
      "torch",
      "scan the installed torch's lib/ (python in HETRUN_PYTHON; default: the python beside a "
      "pip-installed hetrun, else python3)")("torch-lib",
                                             "scan this torch lib/ directory (no Python needed)",
                                             cxxopts::value<std::string>())(
      "fake-gpus", "declared GPUs NAME:MAJOR.MINOR:USABLE_MIB,...", cxxopts::value<std::string>())(
      "strict", "also fail on partial coverage")("no-driver-load",
                                                 "on real GPUs, skip loading every module")(
      "json", "print JSON (keys: docs/reference/cli/check.md)")(
      "paths", "files or directories", cxxopts::value<std::vector<std::string>>())("h,help",
                                                                                   "this text");
  options.parse_positional({"paths"});
}

// --arch-list, else a non-empty TORCH_CUDA_ARCH_LIST, else none.
Result<std::optional<arch::ArchList>> ArchListToCheck(const cxxopts::ParseResult& parsed,
                                                      const Environment& env) {
  if (parsed.count("arch-list")) {
    Result<arch::ArchList> list =
        arch::ParseTorchCudaArchList(parsed["arch-list"].as<std::string>());
    if (!list.ok()) return UsageError("--arch-list: " + list.status().message());
    return std::optional<arch::ArchList>(*list);
  }
  if (std::optional<std::string> text = env.Get("TORCH_CUDA_ARCH_LIST"); text && !text->empty()) {
    HETRUN_ASSIGN_OR_RETURN(arch::ArchList list, arch::ParseTorchCudaArchList(*text));
    return std::optional<arch::ArchList>(std::move(list));
  }
  return std::optional<arch::ArchList>();
}

// The files and directories to scan: --scan, the positional paths, then --torch-lib or --torch.
Result<std::vector<std::string>> PathsToScan(const cxxopts::ParseResult& parsed,
                                             const Environment& env) {
  std::vector<std::string> paths;
  for (const char* key : {"scan", "paths"}) {
    if (parsed.count(key)) {
      for (const std::string& p : parsed[key].as<std::vector<std::string>>()) paths.push_back(p);
    }
  }
  if (parsed.count("torch-lib")) {
    paths.push_back(parsed["torch-lib"].as<std::string>());
  } else if (parsed.count("torch")) {
    HETRUN_ASSIGN_OR_RETURN(std::string lib, FindTorchLibDir(env));
    paths.push_back(lib);
  }
  return paths;
}

}  // namespace

Result<int> commands::Check(const CommandContext& context) {
  cxxopts::Options options(
      "hetrun check",
      "Check that every target GPU can run the CUDA kernels of the scanned files (exit 80 when a "
      "file has no image for a target). Targets default to the local GPUs (real or declared).");
  AddCheckOptions(options);
  HETRUN_ASSIGN_OR_RETURN(cxxopts::ParseResult parsed,
                          ParseSubcommandOptions(options, context.args));
  if (parsed.count("help")) {
    context.out << options.help();
    return kExitOk;
  }
  const bool json_output = parsed.count("json") > 0;
  const bool strict = parsed.count("strict") > 0;
  HETRUN_ASSIGN_OR_RETURN(std::optional<arch::ArchList> arch_list,
                          ArchListToCheck(parsed, context.env));
  HETRUN_ASSIGN_OR_RETURN(std::vector<std::string> paths, PathsToScan(parsed, context.env));
  if (paths.empty() && !arch_list) {
    return UsageError(
        "hetrun check: nothing to check: give --scan PATH, --torch, --torch-lib DIR "
        "or --arch-list (or set TORCH_CUDA_ARCH_LIST)");
  }

  HETRUN_ASSIGN_OR_RETURN(Targets targets, ResolveTargets(parsed, context.env));
  const ArchCheckReport report =
      arch::CheckKernelImages(arch::ScanKernelImages(paths), targets.list, strict, arch_list);
  Status outcome = report.Outcome();
  std::ostringstream device_text;
  nlohmann::json device_json = nlohmann::json::object();
  Status confirmed = ConfirmOnDevices(targets, report, parsed.count("no-driver-load") == 0,
                                      device_text, &device_json);
  if (outcome.ok() && !confirmed.ok()) outcome = confirmed;
  if (json_output) {
    nlohmann::json json = ReportJson(report, outcome);
    for (auto& [key, value] : device_json.items()) json[key] = value;
    context.out << json.dump(2) << "\n";
  } else {
    PrintTable(context.out, report, targets);
    context.out << device_text.str();
    context.out << (outcome.ok() ? "ok\n" : "FAILED: " + outcome.message() + "\n");
  }
  if (!outcome.ok()) return outcome;
  return kExitOk;
}

}  // namespace hetrun::launcher

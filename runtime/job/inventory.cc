#include "hetrun/job/inventory.h"

#include "hetrun/base/units.h"
#include "hetrun/job/gpu_model.h"

namespace hetrun {
namespace {

std::string Shown(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 80)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (text.size() > 80) out += "...";
  return out;
}

Result<GpuInfo> ParseOne(std::string_view entry, size_t index) {
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("GPU " + std::to_string(index) + " '" + Shown(entry) + "': " + why +
                                " (expected NAME:MAJOR.MINOR:USABLE_MIB, e.g. "
                                "A100-SXM4-80GB:8.0:81049)");
  };
  std::vector<std::string_view> fields = SplitOn(entry, ':');
  if (fields.size() != 3) return bad("needs 3 fields separated by ':'");
  GpuInfo gpu;
  gpu.name = std::string(fields[0]);
  if (gpu.name.empty()) return bad("empty name");
  std::vector<std::string_view> cc = SplitOn(fields[1], '.');
  if (cc.size() != 2) return bad("compute capability must be MAJOR.MINOR");
  auto major = ParseIntInRange(cc[0], 1, 99);
  auto minor = ParseIntInRange(cc[1], 0, 9);
  if (!major.ok() || !minor.ok()) return bad("compute capability must be MAJOR.MINOR");
  gpu.major = static_cast<int>(*major);
  gpu.minor = static_cast<int>(*minor);
  auto mib = ParseIntInRange(fields[2], 1, 64 * 1024 * 1024);  // up to 64 TiB
  if (!mib.ok()) return bad("usable memory must be a positive number of MiB");
  gpu.usable_bytes = static_cast<uint64_t>(*mib) << 20;
  gpu.family = FamilyForCapability(gpu.major, gpu.minor);
  gpu.model = NormalizeGpuModel(gpu.name, gpu.usable_bytes);
  return gpu;
}

}  // namespace

std::string GpuInfo::CapabilityString() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string FamilyForCapability(int major, int minor) {
  if (major >= 10) return "blackwell";
  if (major == 9) return "hopper";
  if (major == 8) return minor == 9 ? "ada" : "ampere";
  if (major == 7) return minor == 5 ? "turing" : "volta";
  if (major == 6) return "pascal";
  return "unknown";
}

Result<std::vector<GpuInfo>> ParseFakeGpus(std::string_view text) {
  if (text.empty()) return InvalidArgumentError("empty GPU list: declare at least one GPU");
  std::vector<GpuInfo> gpus;
  std::vector<std::string_view> entries = SplitOn(text, ',');
  constexpr size_t kMaxGpus = 1024;
  if (entries.size() > kMaxGpus) {
    return InvalidArgumentError("more than " + std::to_string(kMaxGpus) + " GPUs declared");
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    HETRUN_ASSIGN_OR_RETURN(GpuInfo gpu, ParseOne(entries[i], i));
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

std::string FormatFakeGpus(const std::vector<GpuInfo>& gpus) {
  std::string out;
  for (const GpuInfo& gpu : gpus) {
    if (!out.empty()) out += ',';
    out += gpu.name + ":" + gpu.CapabilityString() + ":" + std::to_string(gpu.usable_bytes >> 20);
  }
  return out;
}

Result<Inventory> LocalInventory(const Environment& env, std::string_view fake_flag,
                                 GpuProbe* probe) {
  Inventory inventory;
  if (!fake_flag.empty()) {
    auto gpus = ParseFakeGpus(fake_flag);
    // A flag's bad value is a usage error (64); the same value from the environment is a
    // configuration error (78), as for every setting (docs/ARCHITECTURE.md §4.1).
    if (!gpus.ok()) {
      return UsageError("--fake-gpus '" + Shown(fake_flag) + "': " + gpus.status().message());
    }
    inventory.gpus = std::move(gpus).value();
    inventory.source = InventorySource::kFake;
    inventory.source_detail = "--fake-gpus";
    return inventory;
  }
  if (std::optional<std::string> declared = env.Get("HETRUN_FAKE_GPUS")) {
    auto gpus = ParseFakeGpus(*declared);
    if (!gpus.ok()) {
      return InvalidArgumentError("HETRUN_FAKE_GPUS='" + Shown(*declared) +
                                  "' (environment): " + gpus.status().message());
    }
    inventory.gpus = std::move(gpus).value();
    inventory.source = InventorySource::kFake;
    inventory.source_detail = "HETRUN_FAKE_GPUS";
    return inventory;
  }
  if (probe != nullptr) {
    HETRUN_ASSIGN_OR_RETURN(inventory.gpus, probe->Probe());
    inventory.source = InventorySource::kProbe;
    inventory.source_detail = "CUDA probe";
  }
  return inventory;
}

}  // namespace hetrun

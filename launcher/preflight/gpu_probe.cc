#include "preflight/gpu_probe.h"

#include <sstream>

#include "hetrun/base/units.h"
#include "hetrun/job/gpu_model.h"
#include "preflight/child_output.h"
#ifdef HETRUN_WITH_KERNELS
#include "hetrun/kernels.h"
#endif

namespace hetrun::launcher {
namespace {

#ifdef HETRUN_WITH_KERNELS
// Runs in the child: probe every device, one line each.
std::string ChildProbe() {
  std::ostringstream out;
  Result<int> count = kernels::DeviceCount();
  if (count.ok()) {
    for (int d = 0; d < *count; ++d) {
      Result<kernels::ProbeResult> probe = kernels::RunProbe(d);
      if (probe.ok()) {
        out << "gpu " << d << ' ' << probe->major << ' ' << probe->minor << ' '
            << probe->kernel_arch << ' ' << probe->free_bytes << ' ' << probe->total_bytes << ' '
            << probe->name << '\n';
      } else {
        out << "err " << d << ' ' << probe.status().ToString() << '\n';
      }
    }
  }
  return out.str();
}
#endif

class SystemGpuProbe final : public GpuProbe {
 public:
  Result<std::vector<GpuInfo>> Probe() override {
    HETRUN_ASSIGN_OR_RETURN(std::vector<ProbedGpu> probed, ProbeGpusInChild());
    std::vector<GpuInfo> gpus;
    for (ProbedGpu& gpu : probed) gpus.push_back(std::move(gpu.info));
    return gpus;
  }
};

}  // namespace

Result<std::vector<ProbedGpu>> ParseProbeOutput(const std::string& text) {
  std::vector<ProbedGpu> gpus;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string kind;
    int index = -1;
    fields >> kind >> index;
    if (kind == "gpu") {
      ProbedGpu gpu;
      fields >> gpu.info.major >> gpu.info.minor >> gpu.kernel_arch >> gpu.info.usable_bytes >>
          gpu.info.total_bytes;
      std::getline(fields >> std::ws, gpu.info.name);
      if (fields.fail() && !fields.eof()) {
        return InternalError("GPU probe: malformed line '" + line.substr(0, 120) + "'");
      }
      gpu.info.family = FamilyForCapability(gpu.info.major, gpu.info.minor);
      gpu.info.model = NormalizeGpuModel(gpu.info.name, gpu.info.total_bytes);
      gpus.push_back(std::move(gpu));
    } else if (kind == "err") {
      ProbedGpu gpu;
      std::getline(fields >> std::ws, gpu.error);
      gpu.info.name = "GPU " + std::to_string(index);
      gpus.push_back(std::move(gpu));
    } else if (!line.empty()) {
      return InternalError("GPU probe: malformed line '" + line.substr(0, 120) + "'");
    }
  }
  return gpus;
}

Result<std::vector<ProbedGpu>> ProbeGpusInChild() {
#ifndef HETRUN_WITH_KERNELS
  return std::vector<ProbedGpu>();
#else
  // A wedged driver must not hang the launcher: the probe gets two minutes.
  constexpr std::chrono::seconds kProbeTimeout{120};
  HETRUN_ASSIGN_OR_RETURN(
      std::string text,
      OutputOfForkedChild("GPU probe", kProbeTimeout, ChildProbe, " (is the NVIDIA driver hung?)"));
  return ParseProbeOutput(text);
#endif
}

std::unique_ptr<GpuProbe> MakeSystemGpuProbe() {
  return std::make_unique<SystemGpuProbe>();
}

}  // namespace hetrun::launcher

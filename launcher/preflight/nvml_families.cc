#include "preflight/nvml_families.h"

#include <dlfcn.h>

#include <chrono>

#include "hetrun/job/gpu_model.h"
#include "hetrun/job/inventory.h"

namespace hetrun::launcher {
namespace {

// The few NVML entry points used, with the C signatures of nvml.h (NVML_SUCCESS is 0; a device
// handle is an opaque pointer).
using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlCount = int (*)(unsigned int*);
using NvmlHandle = int (*)(unsigned int, void**);
using NvmlCapability = int (*)(void*, int*, int*);
using NvmlName = int (*)(void*, char*, unsigned int);
struct NvmlMemory {  // nvmlMemory_t
  unsigned long long total, free, used;
};
using NvmlMemoryInfo = int (*)(void*, NvmlMemory*);
struct NvmlPciInfo {  // nvmlPciInfo_t (v3)
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
using NvmlPci = int (*)(void*, NvmlPciInfo*);

template <typename F>
Result<F> Symbol(void* library, const char* name) {
  void* f = ::dlsym(library, name);
  if (f == nullptr) return InternalError(std::string("dlsym(libnvidia-ml.so.1, ") + name + ")");
  return reinterpret_cast<F>(f);
}

// The device's model (gpu_model.h): its product name and memory size, else its PCI device id.
// Either query failing leaves the other; both failing leaves the model unknown ("").
std::string ModelOf(void* library, void* device) {
  auto name = Symbol<NvmlName>(library, "nvmlDeviceGetName");
  auto memory = Symbol<NvmlMemoryInfo>(library, "nvmlDeviceGetMemoryInfo");
  auto pci = Symbol<NvmlPci>(library, "nvmlDeviceGetPciInfo_v3");
  std::string model;
  char text[96] = {};
  NvmlMemory bytes{};
  if (name.ok() && (*name)(device, text, sizeof(text) - 1) == 0) {
    const bool sized = memory.ok() && (*memory)(device, &bytes) == 0;
    model = NormalizeGpuModel(text, sized ? bytes.total : 0);
  }
  NvmlPciInfo info{};
  if (FindGpuModel(model) == nullptr && pci.ok() && (*pci)(device, &info) == 0) {
    if (const GpuModelSpec* known = GpuModelForPciDevice(info.pci_device_id)) {
      model = std::string(known->id);
    }
  }
  return model;
}

Result<NvmlFamilies> QueryDevices(void* library) {
  HETRUN_ASSIGN_OR_RETURN(auto count, Symbol<NvmlCount>(library, "nvmlDeviceGetCount_v2"));
  HETRUN_ASSIGN_OR_RETURN(auto handle,
                          Symbol<NvmlHandle>(library, "nvmlDeviceGetHandleByIndex_v2"));
  HETRUN_ASSIGN_OR_RETURN(auto capability,
                          Symbol<NvmlCapability>(library, "nvmlDeviceGetCudaComputeCapability"));
  unsigned int n = 0;
  if (int rc = count(&n); rc != 0) {
    return UnavailableError("nvmlDeviceGetCount_v2 returned " + std::to_string(rc));
  }
  NvmlFamilies found;
  for (unsigned int i = 0; i < n; ++i) {
    void* device = nullptr;
    int major = 0, minor = 0;
    if (int rc = handle(i, &device); rc != 0) {
      return UnavailableError("nvmlDeviceGetHandleByIndex_v2(" + std::to_string(i) + ") returned " +
                              std::to_string(rc));
    }
    if (int rc = capability(device, &major, &minor); rc != 0) {
      return UnavailableError("nvmlDeviceGetCudaComputeCapability(" + std::to_string(i) +
                              ") returned " + std::to_string(rc));
    }
    found.families.push_back(FamilyForCapability(major, minor));
    found.models.push_back(ModelOf(library, device));
  }
  return found;
}

}  // namespace

Result<std::optional<NvmlFamilies>> ReadNvmlFamilies() {
  const auto start = std::chrono::steady_clock::now();
  void* library = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return std::optional<NvmlFamilies>();
  Result<NvmlFamilies> families = [&]() -> Result<NvmlFamilies> {
    HETRUN_ASSIGN_OR_RETURN(auto init, Symbol<NvmlInit>(library, "nvmlInit_v2"));
    HETRUN_ASSIGN_OR_RETURN(auto shutdown, Symbol<NvmlShutdown>(library, "nvmlShutdown"));
    if (int rc = init(); rc != 0) {
      return UnavailableError("nvmlInit_v2 returned " + std::to_string(rc));
    }
    Result<NvmlFamilies> devices = QueryDevices(library);
    shutdown();
    return devices;
  }();
  ::dlclose(library);
  if (!families.ok()) return families.status();
  NvmlFamilies result = std::move(*families);
  result.elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return std::optional<NvmlFamilies>(std::move(result));
}

std::optional<std::string> FamilyOfLocalRank(const std::vector<std::string>& families,
                                             const Environment& env, int local_rank) {
  if (families.empty() || local_rank < 0) return std::nullopt;
  bool uniform = true;
  for (const std::string& f : families) uniform = uniform && f == families.front();
  if (uniform) return families.front();
  const bool bus_order = env.Get("CUDA_DEVICE_ORDER").value_or("") == "PCI_BUS_ID";
  if (bus_order && !env.Get("CUDA_VISIBLE_DEVICES") &&
      static_cast<size_t>(local_rank) < families.size()) {
    return families[static_cast<size_t>(local_rank)];
  }
  return std::nullopt;
}

}  // namespace hetrun::launcher

#include "preflight/nvml_families.h"

#include <dlfcn.h>

#include <chrono>

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

template <typename F>
Result<F> Symbol(void* library, const char* name) {
  void* f = ::dlsym(library, name);
  if (f == nullptr) return InternalError(std::string("dlsym(libnvidia-ml.so.1, ") + name + ")");
  return reinterpret_cast<F>(f);
}

Result<std::vector<std::string>> QueryDevices(void* library) {
  HETRUN_ASSIGN_OR_RETURN(auto count, Symbol<NvmlCount>(library, "nvmlDeviceGetCount_v2"));
  HETRUN_ASSIGN_OR_RETURN(auto handle,
                          Symbol<NvmlHandle>(library, "nvmlDeviceGetHandleByIndex_v2"));
  HETRUN_ASSIGN_OR_RETURN(auto capability,
                          Symbol<NvmlCapability>(library, "nvmlDeviceGetCudaComputeCapability"));
  unsigned int n = 0;
  if (int rc = count(&n); rc != 0) {
    return UnavailableError("nvmlDeviceGetCount_v2 returned " + std::to_string(rc));
  }
  std::vector<std::string> families;
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
    families.push_back(FamilyForCapability(major, minor));
  }
  return families;
}

}  // namespace

Result<std::optional<NvmlFamilies>> ReadNvmlFamilies() {
  const auto start = std::chrono::steady_clock::now();
  void* library = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return std::optional<NvmlFamilies>();
  Result<std::vector<std::string>> families = [&]() -> Result<std::vector<std::string>> {
    HETRUN_ASSIGN_OR_RETURN(auto init, Symbol<NvmlInit>(library, "nvmlInit_v2"));
    HETRUN_ASSIGN_OR_RETURN(auto shutdown, Symbol<NvmlShutdown>(library, "nvmlShutdown"));
    if (int rc = init(); rc != 0) {
      return UnavailableError("nvmlInit_v2 returned " + std::to_string(rc));
    }
    Result<std::vector<std::string>> devices = QueryDevices(library);
    shutdown();
    return devices;
  }();
  ::dlclose(library);
  if (!families.ok()) return families.status();
  NvmlFamilies result;
  result.families = std::move(*families);
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

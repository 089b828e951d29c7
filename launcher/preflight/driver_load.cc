#include "preflight/driver_load.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <sstream>

#include "hetrun/arch/fatbin.h"
#include "preflight/child_output.h"

namespace hetrun::launcher {
namespace {

// The few driver API entry points used, declared by hand so nothing needs cuda.h or libcuda.
using CuResult = int;
using CuDevice = int;
using CuContext = void*;
using CuModule = void*;
constexpr CuResult kCudaSuccess = 0;
constexpr CuResult kCudaErrorNoBinaryForGpu = 209;

struct DriverApi {
  CuResult (*init)(unsigned) = nullptr;
  CuResult (*device_count)(int*) = nullptr;
  CuResult (*device_get)(CuDevice*, int) = nullptr;
  CuResult (*primary_retain)(CuContext*, CuDevice) = nullptr;
  CuResult (*primary_release)(CuDevice) = nullptr;
  CuResult (*set_current)(CuContext) = nullptr;
  CuResult (*module_load_data)(CuModule*, const void*) = nullptr;
  CuResult (*module_unload)(CuModule) = nullptr;
  CuResult (*error_name)(CuResult, const char**) = nullptr;
};

template <typename F>
bool Bind(void* library, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(library, name));
  return *fn != nullptr;
}

std::string ErrorName(const DriverApi& api, CuResult result) {
  const char* name = nullptr;
  if (api.error_name != nullptr && api.error_name(result, &name) == kCudaSuccess && name) {
    return fmt::format("{} ({})", name, result);
  }
  return fmt::format("CUDA driver error {}", result);
}

// Binds the driver API from libcuda.so.1 and initialises it, returning the device count; when
// that is not possible, writes the "skip" line and returns 0.
int OpenDriver(DriverApi* api, std::ostream& out) {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    out << "skip no GPU (libcuda.so.1 not found)\n";
    return 0;
  }
  const bool bound = Bind(library, "cuInit", &api->init) &&
                     Bind(library, "cuDeviceGetCount", &api->device_count) &&
                     Bind(library, "cuDeviceGet", &api->device_get) &&
                     Bind(library, "cuDevicePrimaryCtxRetain", &api->primary_retain) &&
                     (Bind(library, "cuDevicePrimaryCtxRelease_v2", &api->primary_release) ||
                      Bind(library, "cuDevicePrimaryCtxRelease", &api->primary_release)) &&
                     Bind(library, "cuCtxSetCurrent", &api->set_current) &&
                     Bind(library, "cuModuleLoadData", &api->module_load_data) &&
                     Bind(library, "cuModuleUnload", &api->module_unload);
  Bind(library, "cuGetErrorName", &api->error_name);
  if (!bound) {
    out << "skip libcuda.so.1 lacks a driver API entry point: " << dlerror() << "\n";
    return 0;
  }
  if (CuResult r = api->init(0); r != kCudaSuccess) {
    out << "skip no GPU (cuInit: " << ErrorName(*api, r) << ")\n";
    return 0;
  }
  int count = 0;
  if (CuResult r = api->device_count(&count); r != kCudaSuccess || count == 0) {
    out << "skip no GPU (cuDeviceGetCount: "
        << (r == kCudaSuccess ? "0 devices" : ErrorName(*api, r)) << ")\n";
    return 0;
  }
  return count;
}

// One file's kernel images, parsed once and mapped for the whole run (no elf: not checkable).
struct ParsedImages {
  std::optional<arch::ElfFile> elf;
  arch::FatbinFile fatbin;
};

std::vector<ParsedImages> ParseImages(const std::vector<std::string>& files) {
  std::vector<ParsedImages> parsed(files.size());
  for (size_t f = 0; f < files.size(); ++f) {
    Result<arch::ElfFile> elf = arch::ElfFile::Open(files[f]);
    if (!elf.ok()) continue;
    Result<arch::FatbinFile> read = arch::ReadFatbinFile(*elf);
    if (!read.ok()) continue;
    parsed[f].fatbin = std::move(read).value();
    parsed[f].elf.emplace(std::move(elf).value());
  }
  return parsed;
}

// Loads `bytes` as a module and unloads it again; the load's result (the unload's error goes
// into `first_error` when it is the first).
CuResult LoadAndUnload(const DriverApi& api, const uint8_t* bytes, std::string_view what,
                       std::string& first_error) {
  CuModule module = nullptr;
  const CuResult loaded = api.module_load_data(&module, bytes);
  if (loaded != kCudaSuccess) return loaded;
  if (CuResult u = api.module_unload(module); u != kCudaSuccess && first_error.empty()) {
    first_error = fmt::format("{}: cuModuleUnload: {}", what, ErrorName(api, u));
  }
  return loaded;
}

// Loads every container of one file on the current context: "LOADED NO_BINARY OTHER FIRST_ERROR".
// The containers in data sections are one module, loaded when any of them loads (the library
// picks one itself): tried in order until one does.
std::string LoadFile(const DriverApi& api, const ParsedImages& file) {
  int loaded = 0;
  int no_binary = 0;
  int other = 0;
  std::string first_error;
  auto count = [&](CuResult result, std::string_view what) {
    if (result == kCudaSuccess) {
      ++loaded;
      return;
    }
    (result == kCudaErrorNoBinaryForGpu ? no_binary : other) += 1;
    if (first_error.empty()) {
      first_error = fmt::format("{}: cuModuleLoadData: {}", what, ErrorName(api, result));
    }
  };
  const auto& containers = file.fatbin.containers;
  for (size_t c = 0; c < containers.size(); ++c) {
    if (containers[c].device_link_stub) continue;
    Result<std::span<const uint8_t>> bytes = arch::ContainerBytes(*file.elf, containers[c]);
    if (!bytes.ok()) continue;
    const std::string what = fmt::format("container {}", c);
    count(LoadAndUnload(api, bytes->data(), what, first_error), what);
  }
  if (!file.fatbin.embedded.empty()) {
    CuResult result = kCudaErrorNoBinaryForGpu;
    for (const arch::FatbinContainer& container : file.fatbin.embedded) {
      Result<std::span<const uint8_t>> bytes = arch::ContainerBytes(*file.elf, container);
      if (!bytes.ok()) continue;
      result = LoadAndUnload(api, bytes->data(), "embedded containers", first_error);
      if (result == kCudaSuccess) break;
    }
    count(result, fmt::format("{} embedded containers", file.fatbin.embedded.size()));
  }
  return fmt::format("{} {} {} {}", loaded, no_binary, other, first_error);
}

// Writes one "load D F ..." line per checkable file for device `d` (every file fails alike
// when the device's context cannot be made current).
void LoadOnDevice(const DriverApi& api, int d, const std::vector<ParsedImages>& files,
                  std::ostream& out) {
  CuDevice device = 0;
  CuContext context = nullptr;
  CuResult r = api.device_get(&device, d);
  if (r == kCudaSuccess) r = api.primary_retain(&context, device);
  if (r == kCudaSuccess) r = api.set_current(context);
  if (r != kCudaSuccess) {
    for (size_t f = 0; f < files.size(); ++f) {
      out << "load " << d << ' ' << f << " 0 0 1 device " << d << ": " << ErrorName(api, r) << "\n";
    }
    return;
  }
  for (size_t f = 0; f < files.size(); ++f) {
    if (files[f].elf) out << "load " << d << ' ' << f << ' ' << LoadFile(api, files[f]) << "\n";
  }
  api.set_current(nullptr);
  api.primary_release(device);
}

// Runs in the child: writes the protocol lines to `out`.
void LoadAll(const std::vector<std::string>& files, std::ostream& out) {
  DriverApi api;
  const int count = OpenDriver(&api, out);
  if (count == 0) return;
  out << "devices " << count << "\n";
  const std::vector<ParsedImages> parsed = ParseImages(files);
  for (int d = 0; d < count; ++d) LoadOnDevice(api, d, parsed, out);
}

}  // namespace

Result<DriverLoadReport> ParseDriverLoadOutput(const std::string& text) {
  DriverLoadReport report;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    if (kind == "skip") {
      report.skipped = true;
      std::getline(fields >> std::ws, report.skip_reason);
    } else if (kind == "devices") {
      fields >> report.devices;
    } else if (kind == "load") {
      DriverFileLoad load;
      fields >> load.device >> load.file >> load.loaded >> load.no_binary >> load.other_errors;
      if (fields.fail()) {
        return InternalError("driver load check: malformed line '" + line.substr(0, 120) + "'");
      }
      std::getline(fields >> std::ws, load.first_error);
      report.loads.push_back(std::move(load));
    } else if (!line.empty()) {
      return InternalError("driver load check: malformed line '" + line.substr(0, 120) + "'");
    }
  }
  return report;
}

Result<DriverLoadReport> LoadModulesInChild(const std::vector<std::string>& files,
                                            std::chrono::milliseconds timeout) {
  HETRUN_ASSIGN_OR_RETURN(std::string text,
                          OutputOfForkedChild("driver load check", timeout, [&files] {
                            std::ostringstream out;
                            LoadAll(files, out);
                            return out.str();
                          }));
  return ParseDriverLoadOutput(text);
}

}  // namespace hetrun::launcher

// tests/gpu: loads one arch-check fixture library (tests/runtime/arch/fixtures/kernel_a.cu) with
// dlopen and runs its kernel through the library's exported AddOneSelfTest, which launches with
// the library's own static CUDA runtime (the only one that sees the launch's error). Prints one
// line for tests/gpu/run.sh:
//   launch library=PATH result=CODE name=cudaErrorName failed_call=CALL
// Exit: 0 the kernel ran and wrote the right values, 1 a CUDA error (or wrong values), 2 usage,
// dlopen or dlsym failure.
//
//   gpu_launch_fixture LIBRARY [ELEMENTS]
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using SelfTest = int (*)(int, const char**);

// cudaGetErrorName does not create a context; -1 is the fixture's "wrong values".
const char* NameOf(int code) {
  if (code == -1) return "wrong_values";
  return cudaGetErrorName(static_cast<cudaError_t>(code));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: gpu_launch_fixture LIBRARY [ELEMENTS]\n");
    return 2;
  }
  int elements = 4096;
  if (argc == 3) {
    char* end = nullptr;
    const long parsed = std::strtol(argv[2], &end, 10);
    if (end == argv[2] || *end != '\0' || parsed < 1 || parsed > (1 << 26)) {
      std::fprintf(stderr, "gpu_launch_fixture: ELEMENTS must be 1..67108864, got '%s'\n", argv[2]);
      return 2;
    }
    elements = static_cast<int>(parsed);
  }
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "gpu_launch_fixture: dlopen %s: %s\n", argv[1], dlerror());
    return 2;
  }
  dlerror();
  auto self_test = reinterpret_cast<SelfTest>(dlsym(library, "AddOneSelfTest"));
  if (const char* error = dlerror(); error != nullptr || self_test == nullptr) {
    std::fprintf(stderr, "gpu_launch_fixture: dlsym AddOneSelfTest in %s: %s\n", argv[1],
                 error != nullptr ? error : "null symbol");
    return 2;
  }
  const char* failed_call = "none";
  const int result = self_test(elements, &failed_call);
  std::printf("launch library=%s result=%d name=%s failed_call=%s\n", argv[1], result,
              result == 0 ? "cudaSuccess" : NameOf(result), failed_call);
  std::fflush(stdout);
  // The library stays loaded: its static runtime tears down at exit, after main.
  return result == 0 ? 0 : 1;
}

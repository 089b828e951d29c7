// Uses the installed public headers and libraries; prints what it found and exits 0 when sane.
#include <hetrun/base/env.h>
#include <hetrun/base/status.h>
#include <hetrun/base/units.h>
#include <hetrun/base/version.h>

#include <cstdio>

#ifdef CONSUMER_WITH_TORCH
#include <hetrun/torch_info.h>
#endif

int main() {
  hetrun::Result<uint64_t> bytes = hetrun::ParseBytes("512MiB");
  if (!bytes.ok() || *bytes != (512ull << 20)) return 1;
  if (hetrun::EnvVarTable().empty()) return 2;
#ifdef CONSUMER_WITH_TORCH
  hetrun::TorchInfo torch = hetrun::GetTorchInfo();
  std::printf("consumer linked hetrun %s with libtorch %s\n", HETRUN_VERSION_STRING,
              torch.version.c_str());
  return torch.version.empty() ? 3 : 0;
#else
  std::printf("consumer linked hetrun %s (built without libtorch)\n", HETRUN_VERSION_STRING);
  return 0;
#endif
}

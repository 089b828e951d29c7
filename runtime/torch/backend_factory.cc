#include "backend_factory.h"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#ifdef HETRUN_HAVE_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <exception>

namespace hetrun::internal {

Result<c10::intrusive_ptr<c10d::Backend>> CreateBackend(
    const c10::intrusive_ptr<c10d::Store>& store, const BackendSpec& spec) {
  const char* name = spec.nccl ? "nccl" : "gloo";
  try {
    if (spec.nccl) {
#ifdef HETRUN_HAVE_NCCL
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = spec.timeout;
      return c10::intrusive_ptr<c10d::Backend>(
          c10::make_intrusive<c10d::ProcessGroupNCCL>(store, spec.rank, spec.size, options));
#else
      return FailedPreconditionError("hetrun_torch was built without NCCL headers: no GPU backend");
#endif
    }
    auto options = c10d::ProcessGroupGloo::Options::create(spec.timeout);
    options->devices = {spec.interface_host.empty()
                            ? c10d::ProcessGroupGloo::createDefaultDevice()
                            : c10d::ProcessGroupGloo::createDeviceForHostname(spec.interface_host)};
    // One worker thread per backend: the collectives here are issued one at a time.
    options->threads = 1;
    return c10::intrusive_ptr<c10d::Backend>(
        c10::make_intrusive<c10d::ProcessGroupGloo>(store, spec.rank, spec.size, options));
  } catch (const std::exception& e) {
    return UnavailableError(std::string("creating the ") + name + " backend (rank " +
                            std::to_string(spec.rank) + " of " + std::to_string(spec.size) +
                            "): " + e.what());
  }
}

}  // namespace hetrun::internal

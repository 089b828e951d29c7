// CPU emulation of a slower GPU (docs/ARCHITECTURE.md §5): HETRUN_EMULATE_SLOWDOWN=k makes a
// worker's compute region take k times its measured real time (the runtime sleeps the difference),
// so heterogeneity shows up in real timings. The timer still measures real elapsed time.
//
// Value grammar:
//   "3.17"                     one factor for this worker
//   "ampere=3.17,hopper=1.0"   a factor per GPU family, looked up with HETRUN_GPU_FAMILY (which
//                              `hetrun run` sets per worker from the inventory), so one variable
//                              serves a whole mixed node. "*=k" is the factor for other families.
// Every factor is finite and >= 1 (a region cannot be made faster than it is).
#pragma once

#include <string_view>

#include "hetrun/base/env.h"
#include "hetrun/base/status.h"

namespace hetrun {

/// The factor for a worker of GPU family `family` ("" when unknown). kInvalidArgument naming the
/// text when it does not parse, and naming the family when a map has no entry for it.
Result<double> ParseEmulatedSlowdown(std::string_view text, std::string_view family);

/// This worker's factor from HETRUN_EMULATE_SLOWDOWN and HETRUN_GPU_FAMILY; 1.0 when unset.
/// Errors name the variable.
Result<double> EmulatedSlowdownFromEnv(const Environment& env);

}  // namespace hetrun

// CPU binding of the local workers (`hetrun run --cpu-bind`, HETRUN_CPU_BIND).
//
// spread: the CPUs hetrun itself may run on (its affinity mask, which a container's cpuset
// already narrows) are dealt out to the local ranks in order. With at least as many CPUs as
// ranks, local rank i gets the i-th contiguous block of about N/R CPUs (the first N mod R blocks
// one larger); with fewer CPUs than ranks, local rank i gets CPU i mod N, so ranks i, i+N, ...
// share one. Workers then stop migrating between cores, and, when several share a core, every
// core carries the same mix of ranks. The blocks follow CPU numbers, not NUMA nodes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun::launcher {

enum class CpuBind { kNone, kSpread };

/// "none" or "spread"; anything else is kInvalidArgument naming the text.
Result<CpuBind> ParseCpuBind(std::string_view text);

/// The CPUs this process may run on (sched_getaffinity), ascending.
Result<std::vector<int>> AllowedCpus();

/// The CPUs of each of `ranks` local ranks under spread (see above). `cpus` must be non-empty
/// and `ranks` >= 1; otherwise every rank gets `cpus` unchanged.
std::vector<std::vector<int>> SpreadCpus(const std::vector<int>& cpus, int ranks);

/// "0-3,8,10-11": the form of /proc/PID/status Cpus_allowed_list and of taskset -c.
std::string CpuListText(const std::vector<int>& cpus);

}  // namespace hetrun::launcher

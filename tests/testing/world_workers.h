// Test support: one process per rank of a torch.distributed-style world on 127.0.0.1 (RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, a free MASTER_PORT; no GPU), run
// together and waited for.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "run_process.h"

namespace hetrun::testing {

/// Runs `argv` once per rank of a `world`-rank job, all at once; the results in rank order.
std::vector<ProcessResult> RunWorldWorkers(int world, const std::vector<std::string>& argv,
                                           std::chrono::milliseconds timeout);

}  // namespace hetrun::testing

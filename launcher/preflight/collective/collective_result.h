// A collective-check probe's result file as hetrun reads it (python -m hetrun.collective_check
// writes it; docs/how-to/collective-check.md): its size bound and the check of every field the
// verdict reads, so that a file with a field of the wrong type (a rank that is a string, from a
// store entry another client wrote) is a defined failure naming the field, never a crash.
//
// The probe summarises the wrong values (the first few in `wrong`, their count, every op's sizes
// in `wrong_sizes` and every rank in `wrong_ranks`), so its file grows with the job's size only
// by one short entry a rank; CollectiveResultLimit bounds it by that.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>

#include "hetrun/base/status.h"

namespace hetrun::launcher {

/// The most bytes hetrun reads of one probe's result file for a job of `world_size` ranks:
/// 256 KiB plus 1 KiB a rank (a summarised result of 128 ranks is about 20 KiB).
size_t CollectiveResultLimit(int world_size);

/// OK when every field the verdict reads has its type (and ranks lie in 0..world_size-1); else
/// kInvalidArgument naming the first field that does not ("wrong[3].rank is not an integer").
Status CheckCollectiveResult(const nlohmann::json& result, int world_size);

}  // namespace hetrun::launcher

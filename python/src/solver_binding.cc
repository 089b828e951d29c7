// The solver and the micro-batch plan: the same functions `hetrun simulate` and the C++ runtime
// call.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <tuple>
#include <vector>

#include "bindings.h"
#include "hetrun/tuner/micro_batch.h"
#include "hetrun/tuner/solver.h"
#include "status_errors.h"

namespace py = pybind11;

namespace hetrun::python {
namespace {

// fits: one (a_ms, c_ms, cap) per rank.
std::vector<int64_t> Solve(int64_t batch,
                           const std::vector<std::tuple<double, double, int64_t>>& fits) {
  std::vector<tuner::RankFit> ranks;
  ranks.reserve(fits.size());
  for (const auto& [a, c, cap] : fits) ranks.push_back(tuner::RankFit{a, c, cap, 0});
  return ValueOrThrow(tuner::SolveShares(batch, ranks));
}

}  // namespace

void BindSolver(py::module_& m) {
  m.def("solve_shares", &Solve, py::arg("batch"), py::arg("fits"),
        "Integer shares minimising max_r(a_r + c_r n_r) for fits [(a_ms, c_ms, cap), ...].");
  m.def(
      "plan_micro_batches",
      [](int64_t share, int64_t max_size) {
        tuner::MicroBatchPlan plan = ValueOrThrow(tuner::PlanMicroBatches(share, max_size));
        return std::make_tuple(plan.size, plan.count, plan.balanced);
      },
      py::arg("share"), py::arg("max_size"),
      "(size, count, balanced) for `share` samples in micro-batches of at most `max_size`.");
}

}  // namespace hetrun::python

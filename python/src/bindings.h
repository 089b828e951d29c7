// The pieces of the hetrun._core module, one function per concept (module.cc calls each).
#pragma once

#include <pybind11/pybind11.h>

namespace hetrun::python {

/// read_job(), beat(), emulated_slowdown(): the worker environment as the C++ runtime reads it.
void BindJob(pybind11::module_& m);
/// solve_shares(), plan_micro_batches(): the solver and the micro-batch plan.
void BindSolver(pybind11::module_& m);
/// WindowLoop: windows, warm-up, the controller and the per-window report.
void BindWindowLoop(pybind11::module_& m);
/// The pipeline layout file, the re-balance decision and the measurement log.
void BindPipeline(pybind11::module_& m);

}  // namespace hetrun::python

// hetrun._core: the torch-free core of hetrun for Python. The torch side (timing, the DDP
// communication hook, the all-gather, the sampler) is plain Python in the hetrun package.
#include <pybind11/pybind11.h>

#include "bindings.h"

PYBIND11_MODULE(_core, m) {
  m.doc() =
      "hetrun's torch-free core: worker environment, heartbeat, tuner windows and solver, pipeline "
      "re-balancer";
  m.attr("__version__") = HETRUN_VERSION_STRING;
  hetrun::python::BindJob(m);
  hetrun::python::BindSolver(m);
  hetrun::python::BindWindowLoop(m);
  pybind11::module_ pipeline =
      m.def_submodule("pipeline", "layout file, re-balancer, measurements");
  hetrun::python::BindPipeline(pipeline);
}

// The worker environment, read by the very functions the C++ runtime uses (Runtime::FromEnv):
// ReadWorkerIdentity (hetrun run, torchrun, Open MPI, MPICH), ReadGroupLayout (HETRUN_PLAN),
// EmulatedSlowdownFromEnv, the declared HETRUN_GPU_FAMILY and HETRUN_MEMORY_CEILING_BYTES.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "bindings.h"
#include "hetrun/base/env.h"
#include "hetrun/job/compute_stretch.h"
#include "hetrun/job/emulated_slowdown.h"
#include "hetrun/job/group_layout.h"
#include "hetrun/job/heartbeat.h"
#include "hetrun/job/worker_identity.h"
#include "status_errors.h"

namespace py = pybind11;

namespace hetrun::python {
namespace {

py::dict ReadJob() {
  // os.environ writes through to the process environment, so this sees the Python changes too.
  const Environment env = Environment::FromProcess();
  const WorkerIdentity id = ValueOrThrow(ReadWorkerIdentity(env));
  const GroupLayout layout = ValueOrThrow(ReadGroupLayout(env, id.world_size));
  const std::optional<uint64_t> ceiling = ValueOrThrow(env.GetBytes("HETRUN_MEMORY_CEILING_BYTES"));
  const double slowdown = ValueOrThrow(EmulatedSlowdownFromEnv(env));
  const int stage = layout.StageOf(id.rank);

  py::dict job;
  job["rank"] = id.rank;
  job["world_size"] = id.world_size;
  job["local_rank"] = id.local_rank;
  job["local_world_size"] = id.local_world_size;
  job["master_addr"] = id.master_addr;
  job["master_port"] = id.master_port;
  job["source"] = id.source;
  job["stage"] = stage;
  job["stage_ranks"] = layout.stages[static_cast<size_t>(stage)];
  job["layout_source"] = layout.source;
  const std::string family = env.Get("HETRUN_GPU_FAMILY").value_or("");
  job["family"] = family.empty() ? py::object(py::none()) : py::object(py::str(family));
  const std::string model = env.Get("HETRUN_GPU_MODEL").value_or("");
  job["model"] = model.empty() ? py::object(py::none()) : py::object(py::str(model));
  job["memory_ceiling_bytes"] = ceiling ? py::object(py::int_(*ceiling)) : py::object(py::none());
  job["emulated_slowdown"] = slowdown;
  return job;
}

// A heartbeat for one process: the environment is read once, so a beat is one utime() call.
class Heartbeat {
 public:
  Heartbeat() : env_(Environment::FromProcess()) {}
  void BeatOnce() const { ThrowIfError(Beat(env_)); }
  bool enabled() const { return !env_.Get("HETRUN_HEARTBEAT").value_or("").empty(); }

 private:
  Environment env_;
};

}  // namespace

void BindJob(py::module_& m) {
  m.def("read_job", &ReadJob,
        "The worker environment as the C++ runtime reads it (a dict). ValueError names the "
        "variable and its value when it is bad.");
  m.def(
      "beat", []() { ThrowIfError(Beat(Environment::FromProcess())); },
      "One heartbeat for `hetrun run --hang-timeout` (touches $HETRUN_HEARTBEAT); a no-op "
      "when the variable is unset.");
  py::class_<Heartbeat>(m, "Heartbeat")
      .def(py::init<>(), "Reads HETRUN_HEARTBEAT once.")
      .def("beat", &Heartbeat::BeatOnce, "Touches the heartbeat file; a no-op without one.")
      .def_property_readonly("enabled", &Heartbeat::enabled);
  m.def(
      "emulated_slowdown",
      []() { return ValueOrThrow(EmulatedSlowdownFromEnv(Environment::FromProcess())); },
      "This worker's HETRUN_EMULATE_SLOWDOWN factor (HETRUN_GPU_FAMILY picks a map's entry).");
  py::class_<EmulatedSlowdown>(m, "EmulatedSlowdown")
      .def("at", &EmulatedSlowdown::At, py::arg("step"),
           "The factor at 0-based step `step` (steps as the tuner counts them): W x S.")
      .def("whole_at", &EmulatedSlowdown::WholeAt, py::arg("step"),
           "The whole-region factors in force at `step`, multiplied (W).")
      .def("per_sample_at", &EmulatedSlowdown::PerSampleAt, py::arg("step"),
           "The per-sample ('/sample') factors in force at `step`, multiplied (S).")
      .def_property_readonly("constant", &EmulatedSlowdown::constant);
  py::class_<ComputeStretch>(
      m, "ComputeStretch",
      "How a CPU clock stretches a compute region: W x (t + (S - 1) x b x n), "
      "b fitted from the real times of past steps.")
      .def(py::init<>())
      .def("set_factors", &ComputeStretch::SetFactors, py::arg("whole"), py::arg("per_sample"))
      .def_property_readonly("whole", &ComputeStretch::whole)
      .def_property_readonly("per_sample", &ComputeStretch::per_sample)
      .def_property_readonly("active", &ComputeStretch::active)
      .def("target_seconds", &ComputeStretch::TargetSeconds, py::arg("real_s"), py::arg("samples"),
           "The seconds a region of `samples` samples with `real_s` real compute so far takes "
           "stretched.")
      .def("observe", &ComputeStretch::Observe, py::arg("samples"), py::arg("real_s"),
           "Records a finished step's sample count and real (unstretched) compute seconds.")
      .def_property_readonly("fixed_seconds", &ComputeStretch::FixedSeconds,
                             "The fitted fixed per-step cost; None before two distinct counts.")
      .def_property_readonly("per_sample_seconds", &ComputeStretch::PerSampleSeconds,
                             "The fitted cost of one sample; None before two distinct counts.");
  m.def(
      "emulated_slowdown_schedule",
      []() { return ValueOrThrow(EmulatedSlowdownScheduleFromEnv(Environment::FromProcess())); },
      "This worker's HETRUN_EMULATE_SLOWDOWN schedule (HETRUN_GPU_FAMILY and RANK pick its "
      "entries; rankN=k@stepS entries start at a step).");
  m.def(
      "parse_emulated_slowdown_schedule",
      [](const std::string& text, const std::string& family, int64_t rank) {
        return ValueOrThrow(ParseEmulatedSlowdownSchedule(text, family, rank));
      },
      py::arg("text"), py::arg("family") = "", py::arg("rank") = -1,
      "The HETRUN_EMULATE_SLOWDOWN schedule for a family and a global rank "
      "('ampere=3,hopper=1,rank1=2@step30').");
  m.def(
      "parse_emulated_slowdown",
      [](const std::string& text, const std::string& family) {
        return ValueOrThrow(ParseEmulatedSlowdown(text, family));
      },
      py::arg("text"), py::arg("family") = "",
      "The HETRUN_EMULATE_SLOWDOWN factor for a GPU family ('3.17' or 'ampere=3.17,hopper=1').");
}

}  // namespace hetrun::python

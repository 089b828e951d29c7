// tuner::WindowLoop for Python: the same windows, warm-up, min_share, dead band, speed-change
// detection and solver as the C++ runtime's TunerLoop and `hetrun simulate`. The boundary is driven
// in its two halves (close_step, apply_gathered) so the all-gather stays in Python over the user's
// torch.distributed group: one small uint8 tensor per window.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "hetrun/tuner/window_loop.h"
#include "status_errors.h"

namespace py = pybind11;

namespace hetrun::python {
namespace {

using tuner::RankWindow;
using tuner::WindowLoop;
using tuner::WindowLoopOptions;

py::dict RankWindowDict(const RankWindow& r) {
  py::dict d;
  d["a_ms"] = r.fit.a_ms;
  d["c_ms"] = r.fit.c_ms;
  d["cap"] = r.fit.cap;
  d["n"] = r.fit.n;
  d["sigma_ms"] = r.fit.sigma_ms;
  d["compute_ms"] = r.compute_ms;
  d["step_ms"] = r.step_ms;
  d["wait_ms"] = r.wait_ms;
  d["window_ms"] = r.window_ms;
  d["bookkeeping_ms"] = r.bookkeeping_ms;
  d["last_boundary_ms"] = r.last_boundary_ms;
  d["model"] = std::string(r.model, strnlen(r.model, sizeof(r.model)));
  return d;
}

py::dict ReportDict(const tuner::WindowReport& report) {
  py::dict d;
  d["window"] = report.window;
  py::list ranks;
  for (const RankWindow& r : report.ranks) ranks.append(RankWindowDict(r));
  d["ranks"] = ranks;
  d["shares_used"] = report.shares_used;
  d["shares_next"] = report.shares_next;
  if (report.decision) {
    py::dict decision;
    decision["changed"] = report.decision->changed;
    decision["predicted_current_ms"] = report.decision->predicted_current_ms;
    decision["predicted_best_ms"] = report.decision->predicted_best_ms;
    decision["predicted_next_ms"] = report.decision->predicted_next_ms;
    d["decision"] = decision;
  } else {
    d["decision"] = py::none();
  }
  d["tuner_ms"] = report.tuner_ms;
  d["overhead_ms"] = report.overhead_ms;
  d["overhead_fraction"] = report.overhead_fraction();
  d["optimal_compute_ms"] = report.optimal_compute_ms;
  d["achieved_compute_ms"] = report.achieved_compute_ms;
  d["efficiency"] = report.efficiency;
  d["samples_per_s"] = report.samples_per_s;
  d["ideal_samples_per_s"] = report.ideal_samples_per_s;
  py::list health;
  for (const tuner::FailSlowVerdict& v : report.health) {
    py::dict h;
    h["ratio"] = v.ratio;
    h["family_ratio"] = v.family_ratio;
    h["history_ratio"] = v.history_ratio;
    h["basis"] = std::string(v.basis);
    h["streak"] = v.streak;
    h["fail_slow"] = v.fail_slow;
    h["reported"] = v.reported;
    health.append(h);
  }
  d["health"] = health;
  return d;
}

// kwargs of the Python constructor -> options; unknown keys are a ValueError naming them.
// Each option is a reference into the options struct: one table, no per-key branches.
WindowLoopOptions OptionsFrom(int64_t batch, const py::kwargs& kwargs) {
  WindowLoopOptions o;
  o.batch = batch;
  tuner::ControllerOptions& c = o.controller;
  tuner::CostModelOptions& m = c.cost_model;
  const std::map<std::string, int64_t*> ints = {{"window", &c.window},
                                                {"warmup", &o.warmup},
                                                {"min_share", &o.min_share},
                                                {"cap", &o.cap},
                                                {"max_micro_batch", &o.max_micro_batch}};
  const std::map<std::string, double*> doubles = {{"dead_band", &c.dead_band},
                                                  {"noise_sigmas", &c.noise_sigmas},
                                                  {"min_gain", &c.min_gain},
                                                  {"max_step", &c.max_step},
                                                  {"max_relative_step", &c.max_relative_step},
                                                  {"forgetting", &m.forgetting},
                                                  {"min_relative_spread", &m.min_relative_spread},
                                                  {"change_sigmas", &m.change_sigmas},
                                                  {"change_floor", &m.change_floor},
                                                  {"local_width", &m.local_width},
                                                  {"min_slope_fraction", &m.min_slope_fraction},
                                                  {"slope_sigmas", &m.slope_sigmas}};
  for (const auto& [key_handle, value] : kwargs) {
    const std::string key = py::cast<std::string>(key_handle);
    if (auto i = ints.find(key); i != ints.end()) {
      *i->second = value.cast<int64_t>();
    } else if (auto d = doubles.find(key); d != doubles.end()) {
      *d->second = value.cast<double>();
    } else if (key == "max_points") {
      m.max_points = value.cast<int>();
    } else if (key == "tune") {
      o.tune = value.cast<bool>();
    } else if (key == "model") {
      o.model = value.cast<std::string>();
    } else if (key == "pool_families") {
      c.family_pool.enabled = value.cast<bool>();
    } else if (key == "initial") {
      o.initial = value.cast<std::vector<int64_t>>();
    } else {
      throw py::value_error("WindowLoop: unknown option '" + key + "'");
    }
  }
  ThrowIfError(tuner::ValidateControllerOptions(c));
  return o;
}

std::vector<tuner::Observation> Observations(
    const std::vector<std::pair<int64_t, double>>& measured) {
  std::vector<tuner::Observation> out;
  out.reserve(measured.size());
  for (const auto& [samples, ms] : measured) out.push_back(tuner::Observation{samples, ms});
  return out;
}

py::object CloseStep(WindowLoop& loop, const std::vector<std::pair<int64_t, double>>& measured,
                     double step_ms, double wait_ms, double hook_ms) {
  std::optional<RankWindow> record = ValueOrThrow(
      loop.CloseStep(Observations(measured), tuner::StepTimes{step_ms, wait_ms, hook_ms}));
  if (!record) return py::none();
  return py::bytes(reinterpret_cast<const char*>(&*record), sizeof(RankWindow));
}

py::dict ApplyGathered(WindowLoop& loop, const py::bytes& gathered) {
  std::string_view bytes = gathered;  // a view into the Python object, no copy
  tuner::WindowReport report = ValueOrThrow(
      loop.ApplyGathered(std::as_bytes(std::span<const char>(bytes.data(), bytes.size()))));
  return ReportDict(report);
}

}  // namespace

void BindWindowLoop(py::module_& m) {
  m.attr("RANK_WINDOW_BYTES") = sizeof(RankWindow);
  py::class_<WindowLoop>(m, "WindowLoop")
      .def(py::init([](int64_t batch, int rank, int ranks, const py::kwargs& kwargs) {
             return ValueOrThrow(WindowLoop::Create(OptionsFrom(batch, kwargs), rank, ranks));
           }),
           py::arg("batch"), py::arg("rank"), py::arg("ranks"),
           "Options as keywords: window, warmup, min_share, cap, max_micro_batch, tune, initial, "
           "model, "
           "pool_families, "
           "and the controller's and cost model's fields by name (hetrun/tuner/controller.h, "
           "cost_model.h).")
      .def_property_readonly("local_share", &WindowLoop::local_share)
      .def_property_readonly("shares", &WindowLoop::shares)
      .def_property_readonly("rank", &WindowLoop::rank)
      .def("close_step", &CloseStep, py::arg("measured"), py::arg("step_ms"),
           py::arg("wait_ms") = 0.0, py::arg("hook_ms") = 0.0,
           "Records one step ([(samples, compute_ms)], its times). At a window boundary returns "
           "this rank's record (bytes) to all-gather, else None.")
      .def("apply_gathered", &ApplyGathered, py::arg("gathered"),
           "Every rank's records in rank order -> the window's report (a dict); shares change.");
}

}  // namespace hetrun::python

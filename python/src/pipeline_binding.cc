// The torch-free pipeline core for Python (docs/how-to/python-pipelines.md): the layout
// file (HETRUN_PLAN) read, validated and rewritten atomically with its revision; the re-balance
// decision (pipeline::Rebalancer, the same fit, planner, threshold and hysteresis as the C++
// trainer's); and the measurement log that `hetrun run` gathers into measurements.json for
// `hetrun plan --measured`. Moving parameters and optimizer state is the trainer's part, in torch.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "hetrun/base/env.h"
#include "hetrun/pipeline/job_layout.h"
#include "hetrun/pipeline/layout_state.h"
#include "hetrun/pipeline/measurements.h"
#include "hetrun/pipeline/rebalance.h"
#include "status_errors.h"

namespace py = pybind11;

namespace hetrun::python {
namespace {

using pipeline::JobLayout;
using pipeline::MeasurementLog;
using pipeline::Measurements;
using pipeline::RankMeasurements;
using pipeline::RebalanceDecision;
using pipeline::RebalanceOptions;
using pipeline::Rebalancer;
using pipeline::StageLayout;
using pipeline::StageMeasurement;
using pipeline::WindowMeasurement;

// kwargs of Rebalancer(...) -> options (one table, no per-key branches); unknown keys and bad
// ranges are a ValueError naming them.
RebalanceOptions OptionsFrom(const py::kwargs& kwargs) {
  RebalanceOptions o;
  const std::map<std::string, double*> doubles = {{"threshold", &o.threshold},
                                                  {"return_factor", &o.return_factor},
                                                  {"noise_margin", &o.noise_margin}};
  const std::map<std::string, int64_t*> ints = {{"settle_windows", &o.settle_windows},
                                                {"history_windows", &o.history_windows},
                                                {"confirm_windows", &o.confirm_windows},
                                                {"min_windows", &o.min_windows}};
  for (const auto& [key_handle, value] : kwargs) {
    const std::string key = py::cast<std::string>(key_handle);
    if (auto d = doubles.find(key); d != doubles.end()) {
      *d->second = value.cast<double>();
    } else if (auto i = ints.find(key); i != ints.end()) {
      *i->second = value.cast<int64_t>();
    } else {
      throw py::value_error("Rebalancer: unknown option '" + key + "'");
    }
  }
  ThrowIfError(pipeline::ValidateRebalanceOptions(o));
  return o;
}

void BindLayoutTypes(py::module_& m) {
  py::class_<StageLayout>(m, "StageLayout")
      .def(py::init([](int64_t first_layer, int64_t layers, std::vector<int> ranks,
                       std::vector<std::string> families, std::vector<double> shares) {
             if (families.empty()) families.assign(ranks.size(), "");
             if (shares.empty()) shares.assign(ranks.size(), 1.0);
             return StageLayout{first_layer, layers, std::move(ranks), std::move(families),
                                std::move(shares)};
           }),
           py::arg("first_layer"), py::arg("layers"), py::arg("ranks"),
           py::arg("families") = std::vector<std::string>{},
           py::arg("shares") = std::vector<double>{},
           "One stage: its layers [first_layer, first_layer + layers) and its replicas' ranks "
           "(families default to '', shares to equal).")
      .def_readwrite("first_layer", &StageLayout::first_layer,
                     "Index of the stage's first model layer.")
      .def_readwrite("layers", &StageLayout::layers, "Number of model layers the stage holds.")
      .def_readwrite("ranks", &StageLayout::ranks,
                     "Global ranks of the stage's replicas, in replica order.")
      .def_readwrite("families", &StageLayout::families,
                     "GPU family of each replica (e.g. 'ampere'); may be empty.")
      .def_readwrite("shares", &StageLayout::shares,
                     "Relative share of every micro-batch per replica (default equal).")
      .def_property_readonly("replicas", &StageLayout::replicas, "Number of replicas (len(ranks)).")
      .def("__repr__", [](const StageLayout& s) {
        return "StageLayout(first_layer=" + std::to_string(s.first_layer) +
               ", layers=" + std::to_string(s.layers) +
               ", replicas=" + std::to_string(s.replicas()) + ")";
      });

  py::class_<JobLayout>(m, "JobLayout")
      .def(py::init<>(), "An empty layout; fill its fields, or use parse_job_layout().")
      .def_readwrite("num_layers", &JobLayout::num_layers,
                     "Model layers in all (the stages cover 0..num_layers-1).")
      .def_readwrite("layer_names", &JobLayout::layer_names,
                     "One name per model layer (may be empty).")
      .def_readwrite("micro_batches", &JobLayout::micro_batches, "Micro-batches per step (M).")
      .def_readwrite("min_share", &JobLayout::min_share,
                     "Fewest samples of a micro-batch one replica gets.")
      .def_readwrite("stages", &JobLayout::stages, "The stages in pipeline order (StageLayout).")
      .def_readwrite("revision", &JobLayout::revision, "0 as planned, + 1 per live layer move.")
      .def_readwrite("layer_costs", &JobLayout::layer_costs,
                     "The plan's relative cost per layer: the re-balancer's prior (may be empty).")
      .def_property(
          "schedule",
          [](const JobLayout& l) { return std::string(pipeline::ScheduleKindName(l.schedule)); },
          [](JobLayout& l, const std::string& text) {
            l.schedule = ValueOrThrow(pipeline::ParseScheduleKind(text));
          },
          "'1f1b' or 'gpipe'")
      .def_property_readonly("world_size", &JobLayout::world_size, "Ranks over every stage.")
      .def_property_readonly("counts", &pipeline::StageCounts, "Layers per stage.")
      .def("stage_of", &JobLayout::StageOf, py::arg("rank"), "The stage of `rank` (-1: none).")
      .def("replica_of", &JobLayout::ReplicaOf, py::arg("rank"),
           "The replica index of `rank` in its stage (-1: none).")
      .def("to_json", &pipeline::JobLayoutJson, "The layout file's JSON.")
      .def("__repr__", [](const JobLayout& l) {
        return "JobLayout(num_layers=" + std::to_string(l.num_layers) +
               ", split=" + pipeline::CountsText(pipeline::StageCounts(l)) +
               ", revision=" + std::to_string(l.revision) + ")";
      });
}

void BindLayoutFunctions(py::module_& m) {
  m.def(
      "parse_job_layout",
      [](const std::string& text, const std::string& source) {
        return ValueOrThrow(pipeline::ParseJobLayout(text, source));
      },
      py::arg("text"), py::arg("source") = "layout",
      "Parses and validates a layout file's JSON; ValueError names `source` and the JSON path.");
  m.def(
      "load_job_layout",
      [](const std::string& path) { return ValueOrThrow(pipeline::LoadJobLayout(path)); },
      py::arg("path"), "Reads, parses and validates the layout file at `path` (HETRUN_PLAN).");
  m.def(
      "validate_job_layout",
      [](const JobLayout& layout, const std::string& source) {
        ThrowIfError(pipeline::ValidateJobLayout(layout, source));
      },
      py::arg("layout"), py::arg("source") = "layout",
      "ValueError naming the stage and both sides of a conflict when the layout is not valid.");
  m.def(
      "write_job_layout_file",
      [](const JobLayout& layout, const std::string& path) {
        ThrowIfError(pipeline::WriteJobLayoutFile(layout, path));
      },
      py::arg("layout"), py::arg("path"),
      "Validates `layout` and writes it to `path` atomically (a unique temporary, fsync, rename).");
  m.def(
      "write_moved_layout",
      [](const JobLayout& layout, const std::string& layout_path, const std::string& state_path,
         int rank, int local_rank) {
        ThrowIfError(pipeline::WriteMovedLayout(layout, layout_path, state_path, rank, local_rank));
      },
      py::arg("layout"), py::arg("layout_path"), py::arg("state_path"), py::arg("rank"),
      py::arg("local_rank"),
      "After a live move: local rank 0 rewrites `layout_path` (HETRUN_PLAN), global rank 0 also "
      "`state_path` (HETRUN_LAYOUT_STATE, '' for none); both atomic.");
}

void BindDecisionTypes(py::module_& m) {
  py::class_<StageMeasurement>(m, "StageMeasurement")
      .def(py::init([](int64_t first_layer, int64_t layers, double forward_ms, double backward_ms,
                       std::vector<double> layer_ms) {
             return StageMeasurement{first_layer, layers, forward_ms, backward_ms,
                                     std::move(layer_ms)};
           }),
           py::arg("first_layer"), py::arg("layers"), py::arg("forward_ms"), py::arg("backward_ms"),
           py::arg("layer_ms") = std::vector<double>{},
           "One stage in one window (its slowest replica), ms per micro-batch.")
      .def_readwrite("first_layer", &StageMeasurement::first_layer,
                     "First layer of the stage in the measured window.")
      .def_readwrite("layers", &StageMeasurement::layers,
                     "Layers the stage held in the measured window.")
      .def_readwrite("forward_ms", &StageMeasurement::forward_ms,
                     "Forward ms per micro-batch of the stage's slowest replica.")
      .def_readwrite("backward_ms", &StageMeasurement::backward_ms,
                     "Backward ms per micro-batch of the stage's slowest replica.")
      .def_readwrite("layer_ms", &StageMeasurement::layer_ms,
                     "Optional forward + backward ms per layer of the stage.");

  py::class_<RebalanceDecision>(m, "RebalanceDecision")
      .def(py::init([](std::vector<int64_t> current, std::vector<int64_t> next) {
             RebalanceDecision d;
             d.move = current != next;
             d.current_counts = std::move(current);
             d.new_counts = std::move(next);
             d.reason = "forced: " + pipeline::CountsText(d.current_counts) + " -> " +
                        pipeline::CountsText(d.new_counts);
             return d;
           }),
           py::arg("current_counts"), py::arg("new_counts"),
           "A move decided elsewhere (a forced split), for Rebalancer.applied().")
      .def_readonly("move", &RebalanceDecision::move,
                    "True when the layers should move to new_counts.")
      .def_readonly("current_counts", &RebalanceDecision::current_counts, "Layers per stage now.")
      .def_readonly("new_counts", &RebalanceDecision::new_counts,
                    "Layers per stage of the best split for the measured speeds.")
      .def_readonly("predicted_current_ms", &RebalanceDecision::predicted_current_ms,
                    "Predicted ms per stage under the current split.")
      .def_readonly("predicted_new_ms", &RebalanceDecision::predicted_new_ms,
                    "Predicted ms per stage under the new split.")
      .def_readonly("predicted_current_iteration_ms",
                    &RebalanceDecision::predicted_current_iteration_ms,
                    "Predicted 1F1B iteration ms of the current split.")
      .def_readonly("predicted_new_iteration_ms", &RebalanceDecision::predicted_new_iteration_ms,
                    "Predicted 1F1B iteration ms of the new split.")
      .def_readonly("measured_current_iteration_ms",
                    &RebalanceDecision::measured_current_iteration_ms,
                    "Measured iteration ms of the current split (its windows' mean stage times).")
      .def_readonly("speed_standard_error", &RebalanceDecision::speed_standard_error,
                    "Relative standard error of the fitted speeds (the largest stage's).")
      .def_readonly("required_gain", &RebalanceDecision::required_gain,
                    "The gain a move had to show (threshold, noise margin, return factor).")
      .def_readonly("reason", &RebalanceDecision::reason, "One line saying why it moves or holds.")
      .def("__repr__",
           [](const RebalanceDecision& d) { return "RebalanceDecision(" + d.reason + ")"; });
}

void BindRebalancer(py::module_& m) {
  py::class_<Rebalancer>(m, "Rebalancer")
      .def(py::init([](const JobLayout& layout, const py::kwargs& kwargs) {
             return ValueOrThrow(Rebalancer::Create(layout, OptionsFrom(kwargs)));
           }),
           py::arg("layout"),
           "Options as keywords: threshold (0.05), settle_windows (1), history_windows (8), "
           "confirm_windows (2), min_windows (3), return_factor (2.0), noise_margin (0.5) "
           "(hetrun/pipeline/rebalance.h).")
      .def(
          "decide",
          [](Rebalancer& r, const std::vector<StageMeasurement>& window) {
            return r.Decide(window);
          },
          py::arg("window"),
          "One call per window with one StageMeasurement per stage (all-gathered, in stage "
          "order): the same decision on every rank that passes the same figures. Measurements "
          "of another split or with bad numbers hold, and the reason says why.")
      .def("applied", &Rebalancer::Applied, py::arg("decision"),
           "The move was carried out: the split is now decision.new_counts.")
      .def_property_readonly("current_counts", &Rebalancer::current_counts,
                             "Layers per stage the rebalancer believes current.")
      .def_property_readonly("moves", &Rebalancer::moves, "Moves applied so far.");
}

void BindMeasurementTypes(py::module_& m) {
  py::class_<WindowMeasurement>(m, "WindowMeasurement")
      .def(py::init([](int64_t window, int64_t revision, int64_t first_layer, int64_t layers,
                       int64_t samples, int64_t micro_batches, double forward_ms,
                       double backward_ms, std::vector<double> layer_ms) {
             return WindowMeasurement{window,     revision,    first_layer,
                                      layers,     samples,     micro_batches,
                                      forward_ms, backward_ms, std::move(layer_ms)};
           }),
           py::kw_only(), py::arg("window"), py::arg("revision") = 0, py::arg("first_layer"),
           py::arg("layers"), py::arg("samples") = 0, py::arg("micro_batches") = 0,
           py::arg("forward_ms"), py::arg("backward_ms"),
           py::arg("layer_ms") = std::vector<double>{},
           "One rank in one window; times per micro-batch slice in ms.")
      .def_readwrite("window", &WindowMeasurement::window,
                     "Window index (0-based) within the attempt.")
      .def_readwrite("revision", &WindowMeasurement::revision,
                     "Layout revision the window ran under.")
      .def_readwrite("first_layer", &WindowMeasurement::first_layer,
                     "First layer of this rank's stage.")
      .def_readwrite("layers", &WindowMeasurement::layers, "Layers of this rank's stage.")
      .def_readwrite("samples", &WindowMeasurement::samples, "This rank's samples in the window.")
      .def_readwrite("micro_batches", &WindowMeasurement::micro_batches,
                     "Micro-batches per step in the window.")
      .def_readwrite("forward_ms", &WindowMeasurement::forward_ms,
                     "Forward ms per micro-batch slice (compute, not waits).")
      .def_readwrite("backward_ms", &WindowMeasurement::backward_ms,
                     "Backward ms per micro-batch slice (compute, not waits).")
      .def_readwrite("layer_ms", &WindowMeasurement::layer_ms,
                     "Optional forward + backward ms per layer of the stage.")
      .def_readwrite("attempt", &WindowMeasurement::attempt,
                     "Restart attempt (TORCHELASTIC_RESTART_COUNT).");

  py::class_<RankMeasurements>(m, "RankMeasurements")
      .def_readonly("rank", &RankMeasurements::rank, "Global rank.")
      .def_readonly("stage", &RankMeasurements::stage, "The rank's stage.")
      .def_readonly("replica", &RankMeasurements::replica, "The rank's replica index in its stage.")
      .def_readonly("family", &RankMeasurements::family, "The rank's GPU family.")
      .def_readonly("windows", &RankMeasurements::windows,
                    "The rank's windows (WindowMeasurement), oldest first.");

  py::class_<Measurements>(m, "Measurements")
      .def_readonly("num_layers", &Measurements::num_layers, "Model layers in all.")
      .def_readonly("layer_names", &Measurements::layer_names,
                    "One name per model layer (may be empty).")
      .def_readonly("micro_batches", &Measurements::micro_batches, "Micro-batches per step.")
      .def_readonly("ranks", &Measurements::ranks, "Every rank's measurements (RankMeasurements).")
      .def("to_json", &pipeline::MeasurementsJson,
           "The measurements as JSON text (docs/reference/formats/measurements.md).")
      .def(
          "stage_windows",
          [](const Measurements& ms) { return pipeline::StageWindows(ms, nullptr); },
          "The complete windows as the re-balancer sees them: per window, one StageMeasurement "
          "per stage (its slowest replica).");
}

// Append: bad numbers are a ValueError (nothing appended); a failed write is a RuntimeWarning,
// once, and the log goes on in memory: measurements never stop training.
bool Append(MeasurementLog& log, const WindowMeasurement& window) {
  Status status = log.Append(window);
  if (status.ok()) return true;
  if (status.code() == StatusCode::kInvalidArgument) ThrowIfError(status);
  PyErr_WarnEx(PyExc_RuntimeWarning, status.ToString().c_str(), 1);
  return false;
}

void BindMeasurementLog(py::module_& m) {
  py::class_<MeasurementLog>(m, "MeasurementLog")
      .def(py::init([](const JobLayout& layout, int rank, std::string path, int64_t attempt) {
             return ValueOrThrow(MeasurementLog::Create(layout, rank, std::move(path), attempt));
           }),
           py::arg("layout"), py::arg("rank"), py::arg("path") = "", py::arg("attempt") = 0,
           "The log of `rank` in `layout`, rewriting `path` after every window ('' keeps it in "
           "memory); for attempt > 0 the windows of earlier attempts already in `path` are kept. "
           "ValueError when the rank is not in the layout.")
      .def_static(
          "from_environment",
          [](const JobLayout& layout, int rank) {
            return ValueOrThrow(
                MeasurementLog::FromEnvironment(Environment::FromProcess(), layout, rank));
          },
          py::arg("layout"), py::arg("rank"),
          "Writes $HETRUN_RUN_DIR/measurements/rank_<rank>.json (in memory only without "
          "HETRUN_RUN_DIR), the file `hetrun run` merges into measurements.json; attempt from "
          "TORCHELASTIC_RESTART_COUNT (a restarted worker keeps earlier attempts' windows).")
      .def("append", &Append, py::arg("window"),
           "Appends one window and rewrites the file atomically. ValueError (nothing appended) for "
           "any window the reader refuses: a non-finite or negative time, a negative index or "
           "count, layers outside the model; False with a RuntimeWarning when the file cannot be "
           "written (the log "
           "stops writing, training goes on).")
      .def_property_readonly("measurements", &MeasurementLog::measurements,
                             "The windows logged so far (Measurements).")
      .def_property_readonly(
          "path", &MeasurementLog::path,
          "The rank file it rewrites ($HETRUN_RUN_DIR/measurements/rank_R.json).");

  m.def(
      "parse_measurements",
      [](const std::string& text, const std::string& source) {
        return ValueOrThrow(pipeline::ParseMeasurements(text, source));
      },
      py::arg("text"), py::arg("source") = "measurements",
      "Parses a rank file or a merged measurements.json; ValueError names `source` and the path.");
  m.def(
      "load_measurements",
      [](const std::string& path) { return ValueOrThrow(pipeline::LoadMeasurements(path)); },
      py::arg("path"), "Reads and parses a rank file or a merged measurements.json.");
}

}  // namespace

void BindPipeline(py::module_& m) {
  BindLayoutTypes(m);
  BindLayoutFunctions(m);
  BindDecisionTypes(m);
  BindRebalancer(m);
  BindMeasurementTypes(m);
  BindMeasurementLog(m);
}

}  // namespace hetrun::python

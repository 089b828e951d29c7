#include "hetrun/pipeline/measured_plan.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "hetrun/base/input_file.h"
#include "hetrun/pipeline/plan_layout.h"

namespace hetrun::pipeline {
namespace {

using Json = nlohmann::ordered_json;

Status SourceError(std::string_view source, const std::string& path, const std::string& what) {
  return InvalidArgumentError(std::string(source) + ": " + path + ": " + what);
}

// The measurements belong to this model and pipeline.
Status CheckSameModel(const Measurements& m, std::string_view source, const plan::ModelSpec& model,
                      size_t stages) {
  const auto layers = static_cast<int64_t>(model.layers.size());
  if (m.num_layers != layers) {
    return SourceError(source, "$.num_layers",
                       std::to_string(m.num_layers) + " layers, but the model has " +
                           std::to_string(layers) + " (measurements of another model?)");
  }
  for (size_t l = 0; l < m.layer_names.size(); ++l) {
    if (m.layer_names[l] != model.layers[l].name) {
      return SourceError(source, "$.layer_names[" + std::to_string(l) + "]",
                         "'" + m.layer_names[l] + "', but the model's layer " + std::to_string(l) +
                             " is '" + model.layers[l].name + "' (measurements of another model?)");
    }
  }
  std::set<int> measured;
  for (const RankMeasurements& rank : m.ranks) measured.insert(rank.stage);
  if (!measured.empty() && *measured.rbegin() + 1 != static_cast<int>(stages)) {
    return SourceError(source, "$.ranks",
                       "the measurements have " + std::to_string(*measured.rbegin() + 1) +
                           " stages, the pipeline " + std::to_string(stages));
  }
  return Status::Ok();
}

// Replicas per stage in the measured run (distinct ranks).
std::vector<int64_t> MeasuredReplicas(const Measurements& m, size_t stages) {
  std::vector<int64_t> replicas(stages, 0);
  for (const RankMeasurements& rank : m.ranks) {
    if (rank.stage >= 0 && static_cast<size_t>(rank.stage) < stages) ++replicas[rank.stage];
  }
  for (int64_t& r : replicas) r = std::max<int64_t>(r, 1);
  return replicas;
}

std::vector<FamilySpeed> Families(const plan::ClusterSpec& cluster) {
  std::map<std::string, FamilySpeed> by_family;
  std::vector<std::string> order;
  for (size_t s = 0; s < cluster.stages.size(); ++s) {
    const plan::StageSlot& slot = cluster.stages[s];
    auto [it, fresh] = by_family.try_emplace(slot.family);
    if (fresh) order.push_back(slot.family);
    FamilySpeed& f = it->second;
    f.family = slot.family;
    auto datasheet = cluster.family_speed.find(slot.family);
    f.datasheet = datasheet != cluster.family_speed.end() ? datasheet->second : 0.0;
    f.cost_per_ms += slot.speed;
    f.stages.push_back(static_cast<int64_t>(s));
  }
  std::vector<FamilySpeed> families;
  for (const std::string& name : order) {
    FamilySpeed f = by_family[name];
    f.cost_per_ms /= static_cast<double>(f.stages.size());
    families.push_back(f);
  }
  // Scale to the datasheet: the known family with the lowest datasheet speed keeps its value.
  const FamilySpeed* reference = nullptr;
  for (const FamilySpeed& f : families) {
    if (f.datasheet > 0 && (!reference || f.datasheet < reference->datasheet)) reference = &f;
  }
  const double scale = reference ? reference->datasheet / reference->cost_per_ms
                                 : 1.0 / families.front().cost_per_ms;
  for (FamilySpeed& f : families) f.measured = f.cost_per_ms * scale;
  return families;
}

// Mean stage times over the windows of the last (measured) split.
std::vector<double> MeasuredStageMs(const std::vector<std::vector<StageMeasurement>>& windows) {
  const std::vector<StageMeasurement>& last = windows.back();
  std::vector<double> sum(last.size(), 0.0);
  int64_t n = 0;
  for (const std::vector<StageMeasurement>& w : windows) {
    bool same = true;
    for (size_t s = 0; s < w.size(); ++s) same = same && w[s].layers == last[s].layers;
    if (!same) continue;
    ++n;
    for (size_t s = 0; s < w.size(); ++s) sum[s] += w[s].forward_ms + w[s].backward_ms;
  }
  for (double& t : sum) t /= static_cast<double>(n);
  return sum;
}

std::string Fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

}  // namespace

Result<MeasuredPlan> PlanFromMeasurements(const Measurements& measurements, std::string_view source,
                                          plan::ModelSpec model, plan::ClusterSpec cluster) {
  const size_t stages = cluster.stages.size();
  HETRUN_RETURN_IF_ERROR(CheckSameModel(measurements, source, model, stages));
  std::vector<std::vector<StageMeasurement>> windows = StageWindows(measurements, nullptr);
  if (windows.empty()) {
    return SourceError(source, "$.ranks",
                       "no window in which every stage was measured (empty or incomplete "
                       "windows)");
  }
  JobLayout prior_layout;
  prior_layout.num_layers = static_cast<int64_t>(model.layers.size());
  for (const plan::LayerSpec& layer : model.layers) prior_layout.layer_costs.push_back(layer.cost);
  HETRUN_ASSIGN_OR_RETURN(SpeedFit fit, FitSpeeds(PriorCosts(prior_layout), windows));
  MeasuredPlan out;
  out.source = std::string(source);
  out.windows = static_cast<int64_t>(windows.size());
  for (size_t l = 0; l < model.layers.size(); ++l) model.layers[l].cost = fit.layer_costs[l];
  if (model.cost_unit_ms) model.cost_unit_ms = 1.0;  // times are now milliseconds
  std::vector<int64_t> replicas = MeasuredReplicas(measurements, stages);
  for (size_t s = 0; s < stages; ++s) {
    cluster.stages[s].speed = fit.stage_speeds[s] / static_cast<double>(replicas[s]);
  }
  out.families = Families(cluster);
  out.measured_stage_ms = MeasuredStageMs(windows);
  double sum = 0, max = 0;
  for (double t : out.measured_stage_ms) {
    sum += t;
    max = std::max(max, t);
  }
  out.measured_iteration_ms = sum + static_cast<double>(measurements.micro_batches - 1) * max;
  std::vector<int64_t> current;
  for (const StageMeasurement& m : windows.back()) current.push_back(m.layers);
  HETRUN_ASSIGN_OR_RETURN(out.plan, plan::PlanPipeline(model, cluster, current));
  out.model = std::move(model);
  out.cluster = std::move(cluster);
  return out;
}

void SpecsFromLayout(const JobLayout& layout, plan::ModelSpec* model, plan::ClusterSpec* cluster) {
  model->micro_batches = layout.micro_batches;
  std::vector<double> costs = layout.layer_costs;
  costs.resize(static_cast<size_t>(layout.num_layers), 1.0);
  for (int64_t l = 0; l < layout.num_layers; ++l) {
    std::string name = layout.layer_names.empty() ? "layer." + std::to_string(l)
                                                  : layout.layer_names[static_cast<size_t>(l)];
    model->layers.push_back({name, costs[static_cast<size_t>(l)], 0.0});
  }
  cluster->family_speed = plan::DefaultFamilySpeeds();
  for (size_t s = 0; s < layout.stages.size(); ++s) {
    const StageLayout& stage = layout.stages[s];
    plan::StageSlot slot;
    slot.task = "stage";
    slot.task_index = static_cast<int64_t>(s);
    slot.family =
        stage.families.empty() || stage.families[0].empty() ? "unknown" : stage.families[0];
    auto known = cluster->family_speed.find(slot.family);
    slot.speed = known != cluster->family_speed.end() ? known->second : 1.0;
    slot.memory_bytes = std::numeric_limits<double>::max();
    slot.gpus = stage.replicas();
    cluster->stages.push_back(slot);
  }
}

Result<JobLayout> LoadLayoutOrPlan(const std::string& path) {
  HETRUN_ASSIGN_OR_RETURN(std::string text, ReadRegularFile(path, kMaxJsonInputBytes, "plan"));
  HETRUN_RETURN_IF_ERROR(CheckJsonDepth(text, kMaxJsonDepth, path));
  nlohmann::json root = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_object() && root.contains("num_layers")) return ParseJobLayout(text, path);
  int64_t world = 0;
  if (root.is_object() && root.contains("stages") && root["stages"].is_array()) {
    for (const nlohmann::json& stage : root["stages"]) {
      auto replicas = stage.is_object() ? stage.find("replicas") : stage.end();
      world += replicas != stage.end() && replicas->is_number_integer()
                   ? std::clamp<int64_t>(replicas->get<int64_t>(), 0, 4096)
                   : 1;
    }
  }
  return LayoutFromPlan(text, path, static_cast<int>(std::min<int64_t>(world, 1 << 20)));
}

std::string MeasuredPlanText(const MeasuredPlan& m) {
  std::ostringstream out;
  const plan::SplitFigures& now = *m.plan.compared;
  const plan::SplitFigures& best = m.plan.best;
  out << "Measured re-plan from " << m.source << ": " << m.windows << " complete windows, "
      << m.cluster.stages.size() << " stages, " << m.model.layers.size() << " layers, "
      << m.model.micro_batches << " micro-batches (1F1B)\n\n";
  out << "family       datasheet  measured  cost/ms per GPU  stages\n";
  for (const FamilySpeed& f : m.families) {
    std::string stages;
    for (int64_t s : f.stages) stages += (stages.empty() ? "" : ",") + std::to_string(s);
    char line[256];
    std::snprintf(line, sizeof line, "%-12s %9s  %8.2f  %15.6g  %s\n", f.family.c_str(),
                  f.datasheet > 0 ? Fixed(f.datasheet, 2).c_str() : "-", f.measured, f.cost_per_ms,
                  stages.c_str());
    out << line;
  }
  out << "\nstage  family       replicas  measured ms  layers now  predicted ms  layers new  "
         "predicted ms\n";
  for (size_t s = 0; s < best.stages.size(); ++s) {
    char line[256];
    std::snprintf(line, sizeof line, "%5zu  %-12s %8lld  %11.3f  %10lld  %12.3f  %10lld  %12.3f\n",
                  s, m.cluster.stages[s].family.c_str(),
                  static_cast<long long>(m.cluster.stages[s].gpus), m.measured_stage_ms[s],
                  static_cast<long long>(now.stages[s].layers), now.stages[s].time,
                  static_cast<long long>(best.stages[s].layers), best.stages[s].time);
    out << line;
  }
  const double gain = 1.0 - best.iteration_time / now.iteration_time;
  out << "\nmeasured split " << now.CountsString() << ": predicted iteration "
      << Fixed(now.iteration_time, 3) << " ms (measured " << Fixed(m.measured_iteration_ms, 3)
      << " ms)\n";
  out << "new split      " << best.CountsString() << ": predicted iteration "
      << Fixed(best.iteration_time, 3) << " ms (" << Fixed(100 * gain, 1) << "% shorter)\n";
  out << "\nTimes are per micro-batch in milliseconds; iteration = sum + (M - 1) x max. "
         "`--json` gives the plan `hetrun run --plan` reads.\n";
  return out.str();
}

std::string MeasuredPlanJson(const MeasuredPlan& m) {
  Json out = Json::parse(plan::PlanJson(m.plan, m.model));
  Json families = Json::array();
  for (const FamilySpeed& f : m.families) {
    families.push_back({{"family", f.family},
                        {"datasheet_speed", f.datasheet},
                        {"measured_speed", f.measured},
                        {"cost_per_ms_per_gpu", f.cost_per_ms},
                        {"stages", f.stages}});
  }
  out["measured"] = {{"file", m.source},
                     {"windows", m.windows},
                     {"families", families},
                     {"measured_stage_ms", m.measured_stage_ms},
                     {"measured_iteration_ms", m.measured_iteration_ms},
                     {"current_split", m.plan.compared->CountsString()},
                     {"current_iteration_ms", m.plan.compared->iteration_time},
                     {"new_split", m.plan.best.CountsString()},
                     {"new_iteration_ms", m.plan.best.iteration_time}};
  return out.dump(2) + "\n";
}

}  // namespace hetrun::pipeline

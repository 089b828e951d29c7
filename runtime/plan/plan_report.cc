// PlanJson and PlanText: the plan as `hetrun plan --json` and as a table.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "hetrun/plan/pipeline_planner.h"

namespace hetrun::plan {
namespace {

using Json = nlohmann::ordered_json;

std::string LayerRange(const ModelSpec& model, const StageFigures& stage) {
  const auto& first = model.layers[static_cast<size_t>(stage.first_layer)];
  const auto& last = model.layers[static_cast<size_t>(stage.first_layer + stage.layers - 1)];
  return stage.layers == 1 ? first.name : first.name + " .. " + last.name;
}

Json StagesJson(const SplitFigures& split, const ModelSpec& model) {
  Json stages = Json::array();
  for (const StageFigures& stage : split.stages) {
    const auto& last = model.layers[static_cast<size_t>(stage.first_layer + stage.layers - 1)];
    stages.push_back(
        {{"stage", stage.stage},
         {"task", stage.slot.task},
         {"task_index", stage.slot.task_index},
         {"family", stage.slot.family},
         {"model", stage.slot.model},
         {"speed", stage.slot.speed},
         {"replicas", stage.slot.gpus},
         {"first_layer", stage.first_layer},
         {"layers", stage.layers},
         {"first_layer_name", model.layers[static_cast<size_t>(stage.first_layer)].name},
         {"last_layer_name", last.name},
         {"time", stage.time},
         {"transfer_time", stage.transfer_time},
         {"memory_bytes", stage.memory_bytes},
         {"memory_limit_bytes", stage.memory_limit_bytes},
         {"fits_memory", stage.fits_memory}});
  }
  return stages;
}

Json LinkJson(const std::optional<Link>& link) {
  if (!link) return nullptr;
  return {{"name", link->name}, {"gb_per_s", link->gb_per_s}};
}

Json BoundariesJson(const SplitFigures& split, const ModelSpec& model) {
  Json boundaries = Json::array();
  for (const BoundaryFigures& b : split.boundaries) {
    boundaries.push_back(
        {{"boundary", b.boundary},
         {"after_layer", b.after_layer},
         {"after_layer_name", model.layers[static_cast<size_t>(b.after_layer)].name},
         {"link", LinkJson(b.link)},
         {"bytes", b.bytes},
         {"forward_ms", b.forward_ms},
         {"backward_ms", b.backward_ms},
         {"forward_time", b.forward_time},
         {"backward_time", b.backward_time}});
  }
  return boundaries;
}

// The data-parallel groups' links and the job-wide one (docs/reference/cli/plan.md, links).
Json CollectiveLinksJson(const CollectiveLinks& links) {
  Json groups = Json::array();
  for (const GroupLink& group : links.groups) {
    groups.push_back({{"stage", group.stage},
                      {"replicas", group.replicas},
                      {"scope", group.replicas > 1 ? "pod" : "none"},
                      {"link", LinkJson(group.link)}});
  }
  Json job = {{"link", LinkJson(links.slowest)}, {"fastest_link", LinkJson(links.fastest)}};
  job["stage"] = links.slowest ? Json(links.slowest_stage) : Json(nullptr);
  return {{"data_parallel", groups}, {"job", job}};
}

Json SplitJson(const SplitFigures& split, const ModelSpec& model) {
  return {{"split", split.CountsString()},
          {"stages", StagesJson(split, model)},
          {"boundaries", BoundariesJson(split, model)},
          {"max_stage_time", split.max_stage_time},
          {"sum_stage_time", split.sum_stage_time},
          {"iteration_time", split.iteration_time},
          {"bubble_fraction", split.bubble_fraction},
          {"fits_memory", split.fits_memory}};
}

std::string Fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

void SummaryLine(std::ostringstream& out, std::string_view label, const SplitFigures& split,
                 const SplitFigures& best) {
  out << label << split.CountsString() << "): max stage " << Fixed(split.max_stage_time, 4)
      << ", iteration " << Fixed(split.iteration_time, 3) << ", bubble "
      << Fixed(100 * split.bubble_fraction, 1) << "%";
  if (best.iteration_time > 0 && &split != &best) {
    out << ", " << Fixed(split.iteration_time / best.iteration_time, 2) << "x the plan's time";
  }
  if (!split.fits_memory) out << ", DOES NOT FIT IN MEMORY";
  out << "\n";
}

std::string LinkText(const std::optional<Link>& link) {
  if (!link) return "not given";
  std::string gb = Fixed(link->gb_per_s, link->gb_per_s < 10 ? 3 : 1);
  return link->name.find("GB/s") != std::string::npos ? link->name
                                                      : link->name + " " + gb + " GB/s";
}

void BoundaryLines(std::ostringstream& out, const SplitFigures& split, const ModelSpec& model) {
  const char* format = "%-10s %-28s  %-23s  %14s  %7s  %7s\n";
  char line[512];
  std::snprintf(line, sizeof line, format, "boundary", "after layer", "link", "MB/micro-batch",
                "fwd ms", "bwd ms");
  out << "\n" << line;
  for (const BoundaryFigures& b : split.boundaries) {
    std::string between = std::to_string(b.boundary) + " -> " + std::to_string(b.boundary + 1);
    std::snprintf(line, sizeof line, format, between.c_str(),
                  model.layers[static_cast<size_t>(b.after_layer)].name.c_str(),
                  LinkText(b.link).c_str(), Fixed(b.bytes / 1e6, 2).c_str(),
                  Fixed(b.forward_ms, 3).c_str(), Fixed(b.backward_ms, 3).c_str());
    out << line;
  }
}

void CollectiveLines(std::ostringstream& out, const CollectiveLinks& links) {
  out << "\ndata-parallel groups (each stage's replicas share its pod):\n";
  for (const GroupLink& group : links.groups) {
    out << "  stage " << group.stage << ": " << group.replicas << " replica"
        << (group.replicas == 1 ? ", no group\n" : "s, " + LinkText(group.link) + "\n");
  }
  out << "job-wide collectives (every pod): ";
  if (!links.slowest) {
    out << "network not given\n";
    return;
  }
  out << LinkText(links.slowest) << ", the slowest pod's network (stage " << links.slowest_stage
      << ")";
  if (links.fastest && links.fastest->gb_per_s > links.slowest->gb_per_s) {
    out << "; the fastest pod has " << LinkText(links.fastest) << ", "
        << Fixed(links.fastest->gb_per_s / links.slowest->gb_per_s, 1) << "x more";
  }
  out << "\n";
}

}  // namespace

std::string PlanJson(const PipelinePlan& plan, const ModelSpec& model) {
  Json out = {{"stages", StagesJson(plan.best, model)},
              {"max_stage_time", plan.best.max_stage_time},
              {"even_split_max_stage_time", plan.even.max_stage_time},
              {"split", plan.best.CountsString()},
              {"micro_batches", plan.micro_batches},
              {"micro_batch_size", plan.micro_batch_size},
              {"layers", model.layers.size()},
              {"sum_stage_time", plan.best.sum_stage_time},
              {"iteration_time", plan.best.iteration_time},
              {"bubble_fraction", plan.best.bubble_fraction},
              {"boundaries", BoundariesJson(plan.best, model)},
              {"links", CollectiveLinksJson(plan.links)},
              {"even_split", SplitJson(plan.even, model)}};
  if (plan.compared) out["compare_split"] = SplitJson(*plan.compared, model);
  // What `hetrun run --plan` gives the workers (docs/reference/formats/layout.md).
  Json names = Json::array();
  Json costs = Json::array();  // relative cost per layer: the live re-balancer's prior
  for (const LayerSpec& layer : model.layers) {
    names.push_back(layer.name);
    costs.push_back(layer.cost);
  }
  out["layer_names"] = names;
  out["layer_costs"] = costs;
  return out.dump(2) + "\n";
}

std::string PlanText(const PipelinePlan& plan, const ModelSpec& model) {
  std::ostringstream out;
  out << "Pipeline plan: " << model.layers.size() << " layers over " << plan.best.stages.size()
      << " stages, " << plan.micro_batches << " micro-batches (1F1B)\n\n";
  out << "stage  task                      family     speed  layers  range                         "
         "   time      memory\n";
  for (const StageFigures& stage : plan.best.stages) {
    char line[512];
    std::snprintf(line, sizeof line, "%5lld  %-24s  %-9s  %5.2f  %6lld  %-30s  %8.4f  %7.2f GB\n",
                  static_cast<long long>(stage.stage), stage.slot.task.c_str(),
                  stage.slot.family.c_str(), stage.slot.speed, static_cast<long long>(stage.layers),
                  LayerRange(model, stage).c_str(), stage.time, stage.memory_bytes / 1e9);
    out << line;
  }
  if (model.HasActivationBytes()) BoundaryLines(out, plan.best, model);
  if (plan.links.any_given) CollectiveLines(out, plan.links);
  out << "\n";
  SummaryLine(out, "plan  (", plan.best, plan.best);
  SummaryLine(out, "even  (", plan.even, plan.best);
  if (plan.compared) SummaryLine(out, "given (", *plan.compared, plan.best);
  out << "\nTimes are per micro-batch in the model's cost unit; iteration = sum + (M - 1) x max.\n";
  if (model.HasActivationBytes()) {
    out << "A stage's time includes sending its activations forward and their gradients back "
           "(cost unit = "
        << Fixed(model.cost_unit_ms.value_or(0), 3) << " ms).\n";
  }
  return out.str();
}

}  // namespace hetrun::plan

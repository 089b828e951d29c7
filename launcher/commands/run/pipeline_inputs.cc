#include "commands/run/pipeline_inputs.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "commands/setting.h"
#include "hetrun/pipeline/layout_state.h"
#include "hetrun/pipeline/node_layout.h"
#include "hetrun/pipeline/plan_layout.h"
#include "preflight/layout_state_resume.h"

namespace hetrun::launcher {
namespace {

/// Across nodes: the layout assembled from every launcher's stage entry (exchanged at the
/// rendezvous); nullopt when no node has one. Every node assembles the same layout from the same
/// records, or fails with the same error (exit 78, naming both nodes).
Result<std::optional<pipeline::JobLayout>> LayoutFromRecords(const std::vector<NodeRecord>& records,
                                                             int world_size) {
  bool any = false;
  std::vector<pipeline::NodeStage> entries;
  for (const NodeRecord& r : records) {
    any = any || r.stage >= 0;
    entries.push_back({NodeLabel(r), r.stage, r.stage_first_layer, r.stage_layers, r.ranks,
                       r.gpus.empty() ? std::string() : r.gpus.front().family, r.micro_batches});
  }
  if (!any || records.size() < 2) return std::optional<pipeline::JobLayout>();
  HETRUN_ASSIGN_OR_RETURN(pipeline::JobLayout layout,
                          pipeline::AssembleLayout(entries, world_size));
  spdlog::info(
      "pipeline of {} stages assembled from the {} nodes' HETRUN_STAGE entries, {} micro-batches "
      "({})",
      layout.stages.size(), records.size(), layout.micro_batches,
      records.front().micro_batches > 0 ? "HETRUN_MICRO_BATCHES" : "one per stage");
  return std::optional<pipeline::JobLayout>(std::move(layout));
}

/// --checkpoint-dir DIR: an existing folder this user may write, or one its writable parent can
/// hold (the trainer makes it); across nodes on the volume of --layout-state, the storage every
/// node shares (same st_dev as the layout state's folder). Never creates anything.
Status CheckCheckpointDir(const std::string& dir, const RunPlan& plan) {
  const std::string what = "--checkpoint-dir " + dir;
  struct stat info {};
  std::string folder = dir;
  if (::stat(dir.c_str(), &info) != 0) {
    if (errno != ENOENT) return ErrnoError("stat", dir, errno).WithContext(what);
    folder = std::filesystem::path(dir).parent_path().string();
    if (::stat(folder.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
      return InvalidArgumentError(what + ": it does not exist and its folder " + folder +
                                  " is not a directory");
    }
  } else if (!S_ISDIR(info.st_mode)) {
    return InvalidArgumentError(what + ": is not a directory");
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    return InvalidArgumentError(what + ": " + folder + " is not writable by this user (" +
                                std::strerror(errno) + ")");
  }
  const int nnodes = plan.topology.nnodes.value;
  if (nnodes == 1) return Status::Ok();
  auto state = plan.stage_vars.find("HETRUN_LAYOUT_STATE");
  const std::string rule = ": with " + std::to_string(nnodes) +
                           " nodes it must be on shared storage, the volume of --layout-state";
  if (state == plan.stage_vars.end()) {
    return InvalidArgumentError(what + rule + " (HETRUN_LAYOUT_STATE), which is not given");
  }
  const std::string state_folder = std::filesystem::path(state->second).parent_path().string();
  struct stat shared {};
  if (::stat(state_folder.c_str(), &shared) != 0) {
    return ErrnoError("stat", state_folder, errno).WithContext("--layout-state's folder");
  }
  if (shared.st_dev != info.st_dev) {
    return InvalidArgumentError(what + rule + " " + state->second +
                                ", but it is on another filesystem");
  }
  return Status::Ok();
}

}  // namespace

Status ReadPipelinePlan(const cxxopts::ParseResult& parsed, RunPlan& plan) {
  if (!parsed.count("plan")) return Status::Ok();
  const std::string path = parsed["plan"].as<std::string>();
  if (plan.topology.nnodes.value != 1) {
    return InvalidArgumentError("--plan " + path +
                                " runs a pipeline on one machine, but the job has " +
                                std::to_string(plan.topology.nnodes.value) +
                                " nodes (across nodes each pod's HETRUN_STAGE entries make the "
                                "layout)");
  }
  HETRUN_ASSIGN_OR_RETURN(plan.layout,
                          pipeline::LoadLayoutFromPlan(path, plan.topology.world_size));
  std::string stages;
  for (const pipeline::StageLayout& stage : plan.layout->stages) {
    stages += (stages.empty() ? "" : ", ") + std::to_string(stage.replicas()) + "x layers " +
              std::to_string(stage.first_layer) + ":" + std::to_string(stage.layers);
  }
  spdlog::info("pipeline of {} stages from --plan {} ({}), {} micro-batches",
               plan.layout->stages.size(), path, stages, plan.layout->micro_batches);
  return Status::Ok();
}

Result<std::string> WriteLayoutFile(const pipeline::JobLayout& layout, const std::string& dir) {
  const std::string path = dir + "/layout.json";
  HETRUN_RETURN_IF_ERROR(pipeline::WriteJobLayoutFile(layout, path));
  return path;
}

Status ReadLayoutState(const cxxopts::ParseResult& parsed, const Environment& env, RunPlan& plan) {
  HETRUN_ASSIGN_OR_RETURN(
      std::string path, Setting<std::string>(parsed, "layout-state", env, "HETRUN_LAYOUT_STATE", "",
                                             ParseMeasurementsOut));
  if (path.empty()) return Status::Ok();
  path = std::filesystem::absolute(path).lexically_normal().string();
  plan.stage_vars["HETRUN_LAYOUT_STATE"] = path;
  if (MembershipOf(plan.topology).member != 0) return Status::Ok();
  plan.preflight.layout_state_path = path;
  plan.preflight.layout_state = ReadLayoutStateForStart(path);
  if (MembershipOf(plan.topology).members == 1) {
    ResumeFromLayoutState(plan.layout, plan.preflight.layout_state, path);
  }
  return Status::Ok();
}

Status CheckModelLayers(const RunPlan& plan) {
  if (plan.model_layers == 0) return Status::Ok();
  if (!plan.layout) {
    return InvalidArgumentError(
        "--model-layers " + std::to_string(plan.model_layers) +
        " (HETRUN_MODEL_LAYERS) checks a pipeline layout, and this run has none (no --plan, no "
        "HETRUN_STAGE)");
  }
  if (plan.layout->num_layers == plan.model_layers) return Status::Ok();
  return InvalidArgumentError(
      "the pipeline layout has " + std::to_string(plan.layout->num_layers) + " layers (split " +
      pipeline::SplitText(*plan.layout) + ", revision " + std::to_string(plan.layout->revision) +
      "), the model " + std::to_string(plan.model_layers) +
      " (--model-layers, HETRUN_MODEL_LAYERS): a plan or layout state of another model?");
}

Status SettleJobLayout(RunPlan& plan, const std::vector<NodeRecord>& records,
                       const std::string& run_dir) {
  bool changed = false;
  if (!plan.layout) {
    HETRUN_ASSIGN_OR_RETURN(plan.layout, LayoutFromRecords(records, plan.topology.world_size));
    changed = plan.layout.has_value();
  }
  if (!records.empty()) {
    changed = ResumeFromLayoutState(plan.layout, records.front().layout_state,
                                    records.front().layout_state_path) ||
              changed;
  }
  HETRUN_RETURN_IF_ERROR(CheckModelLayers(plan));
  if (changed) {
    HETRUN_ASSIGN_OR_RETURN(plan.stage_vars["HETRUN_PLAN"], WriteLayoutFile(*plan.layout, run_dir));
  }
  return Status::Ok();
}

Status ReadReplan(const cxxopts::ParseResult& parsed, const Environment& env, RunPlan& plan) {
  SupervisorOptions& supervision = plan.supervision;
  supervision.replan_restart = parsed.count("replan-restart") > 0;
  HETRUN_ASSIGN_OR_RETURN(
      plan.torchtitan_names,
      Setting<plan::TorchtitanNames>(
          parsed, "torchtitan-names", env, "HETRUN_TORCHTITAN_NAMES", plan::TorchtitanNames{},
          [](std::string_view text) { return plan::ParseTorchtitanNames(text, "the names"); }));
  HETRUN_ASSIGN_OR_RETURN(
      supervision.max_replans,
      Setting<int>(parsed, "max-replans", env, "HETRUN_MAX_REPLANS", 3, IntInRange(0, 1000)));
  HETRUN_ASSIGN_OR_RETURN(
      std::string dir, Setting<std::string>(parsed, "checkpoint-dir", env, "HETRUN_CHECKPOINT_DIR",
                                            "", [](std::string_view text) -> Result<std::string> {
                                              if (text.empty())
                                                return InvalidArgumentError("is empty");
                                              return std::string(text);
                                            }));
  if (dir.empty()) {
    if (!supervision.replan_restart) return Status::Ok();
    return UsageError(
        "hetrun run --replan-restart needs --checkpoint-dir DIR (HETRUN_CHECKPOINT_DIR): the "
        "folder of the checkpoint every worker saves before it exits 82");
  }
  dir = std::filesystem::absolute(dir).lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  HETRUN_RETURN_IF_ERROR(CheckCheckpointDir(dir, plan));
  supervision.checkpoint_dir = dir;
  plan.stage_vars["HETRUN_CHECKPOINT_DIR"] = dir;
  return Status::Ok();
}

}  // namespace hetrun::launcher

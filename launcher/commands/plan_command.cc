// `hetrun plan --cluster FILE --model FILE [--json] [--compare-split N,N,...]
//              [--emit volcano [--strict-homogeneous] | --emit jobset [--kueue-queue NAME]
//               [--restart recreate|in-place] |
//               --emit megatron [--one-per-line] | --emit torchtitan [--torchtitan-names E:L:H]]
//              [--k8s-version X.Y] [--feature-gates NAME=true,...] [--output FILE]]`,
// `hetrun plan --measured FILE (--cluster FILE --model FILE | --plan FILE) [--json]`:
// the layer split of a pipeline over mixed GPU stages that minimises the slowest stage, its 1F1B
// figures next to an even split (and a hand split), and the matching Volcano Job, JobSet (with
// its Kueue queues) or Megatron-LM pipeline arguments.
#include <cerrno>
#include <cxxopts.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>

#include "commands/cli_parse.h"
#include "commands/command.h"
#include "hetrun/base/exit_code.h"
#include "hetrun/pipeline/measured_plan.h"
#include "hetrun/plan/cluster_spec.h"
#include "hetrun/plan/jobset.h"
#include "hetrun/plan/k8s_target.h"
#include "hetrun/plan/kueue_queues.h"
#include "hetrun/plan/links_fragment.h"
#include "hetrun/plan/megatron_layout.h"
#include "hetrun/plan/model_spec.h"
#include "hetrun/plan/pipeline_planner.h"
#include "hetrun/plan/torchtitan_args.h"
#include "hetrun/plan/volcano_job.h"

namespace hetrun::launcher {
namespace {

Status WriteOutput(const std::string& path, const std::string& text, std::ostream& out) {
  if (path.empty() || path == "-") {
    out << text;
    return Status::Ok();
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return ErrnoError("open", path, errno);
  file << text;
  file.close();
  if (!file) return ErrnoError("write", path, errno);
  return Status::Ok();
}

// Volcano names pods <job>-<task>-<index>; Kubernetes needs that to be a label (<= 63). JobSet's
// webhook checks its Job pods' names <jobset>-<job>-<index>-<pod>-xxxxx (the Job's 5-character
// suffix) as DNS-1035 labels: at most 63 and the JobSet's name starting with a letter
// (kubernetes-sigs/jobset pkg/webhooks/jobset_webhook.go).
Status CheckPodNames(const plan::ClusterSpec& cluster, bool jobset) {
  if (jobset && !cluster.job_name.empty() &&
      (cluster.job_name.front() < 'a' || cluster.job_name.front() > 'z')) {
    return InvalidArgumentError("JobSet name '" + cluster.job_name +
                                "' must start with a letter (JobSet's webhook: DNS-1035 labels)");
  }
  for (const plan::StageSlot& slot : cluster.stages) {
    std::string pod = cluster.job_name + "-" + slot.task + "-" + std::to_string(slot.task_index) +
                      (jobset ? "-0-xxxxx" : "");
    if (pod.size() > 63) {
      return InvalidArgumentError("pod name '" + pod +
                                  "' is longer than 63 characters: shorten "
                                  "the job name (--name) or the task name");
    }
  }
  return Status::Ok();
}

Status ApplyJobFlags(const cxxopts::ParseResult& parsed, plan::ClusterSpec* cluster) {
  if (parsed.count("name")) {
    std::string name = parsed["name"].as<std::string>();
    if (!plan::IsDnsLabel(name)) {
      return UsageError("--name '" + name +
                        "' must be an RFC 1123 label (lower-case, digits, '-')");
    }
    cluster->job_name = name;
  }
  if (parsed.count("namespace")) {
    std::string ns = parsed["namespace"].as<std::string>();
    if (!plan::IsDnsLabel(ns))
      return UsageError("--namespace '" + ns + "' must be an RFC 1123 label");
    cluster->namespace_name = ns;
  }
  if (parsed.count("queue")) cluster->queue = parsed["queue"].as<std::string>();
  if (parsed.count("image")) cluster->image = parsed["image"].as<std::string>();
  const std::string emit = parsed.count("emit") ? parsed["emit"].as<std::string>() : "";
  auto text = [&](const char* flag) {
    return parsed.count(flag) ? parsed[flag].as<std::string>() : std::string();
  };
  HETRUN_ASSIGN_OR_RETURN(
      cluster->k8s,
      plan::ParseK8sTarget(text("k8s-version"), text("feature-gates"), text("restart"), emit));
  return CheckPodNames(*cluster, emit == "jobset");
}

void AddPlanOptions(cxxopts::Options& options) {
  options.add_options()("cluster", "cluster JSON: stages in pipeline order",
                        cxxopts::value<std::string>())(
      "links",
      "measured links over the cluster file's network/nvlink: the fragment `hetrun run "
      "--check-collectives` wrote (--check-collectives-out)",
      cxxopts::value<std::string>())("model", "model JSON: layers with cost and bytes",
                                     cxxopts::value<std::string>())("json",
                                                                    "print the plan as JSON")(
      "compare-split", "also evaluate this split: layers per stage, e.g. 8,12,12,12,12,8",
      cxxopts::value<std::string>())(
      "emit",
      "print instead of the plan: volcano (a Volcano Job), jobset "
      "(a Kubernetes JobSet), megatron (Megatron-LM's pipeline "
      "arguments) or torchtitan (torchtitan's overrides, --torchtitan-version)",
      cxxopts::value<std::string>())(
      "kueue-queue",
      "with --emit jobset: queue the JobSet in this Kueue LocalQueue and add the Kueue "
      "ResourceFlavors, ClusterQueue and LocalQueue to apply once",
      cxxopts::value<std::string>())(
      "torchtitan-names",
      "with --emit torchtitan: EMBEDDING:LAYER:HEAD module names ({} = the layer index; default "
      "tok_embeddings:layers.{}:norm,lm_head)",
      cxxopts::value<std::string>())(
      "k8s-version",
      "with --emit volcano|jobset: the Kubernetes version X.Y the manifests target (1.31-1.37; "
      "default 1.31, the oldest the emitted fields need). From 1.35 the trainer restarts in "
      "place on exit 75",
      cxxopts::value<std::string>())(
      "feature-gates",
      "with --k8s-version: alpha gates the cluster has turned on, NAME=true,... "
      "(ContainerRestartRules on 1.34, RestartAllContainersOnContainerExits on 1.35)",
      cxxopts::value<std::string>())(
      "restart",
      "with --emit jobset: recreate (default) or in-place (JobSet's InPlaceRestart; Kubernetes "
      "1.36, or 1.35 with RestartAllContainersOnContainerExits)",
      cxxopts::value<std::string>())(
      "torchtitan-version",
      "with --emit torchtitan: whose keys, 0.3.0 (samples) or main (tokens, needs the model "
      "file's sequence_length; default: the torchtitan installed beside hetrun, else 0.3.0)",
      cxxopts::value<std::string>())(
      "one-per-line",
      "with --emit megatron: one argument a line, unquoted, no comments (for mapfile -t ARGS)")(
      "strict-homogeneous",
      "with --emit volcano: one gang task on one GPU family (data/tensor parallel)")(
      "family", "with --strict-homogeneous: the family (default: the fastest)",
      cxxopts::value<std::string>())("name", "Volcano job name", cxxopts::value<std::string>())(
      "namespace", "Volcano job namespace", cxxopts::value<std::string>())(
      "queue", "Volcano queue", cxxopts::value<std::string>())("image", "container image",
                                                               cxxopts::value<std::string>())(
      "measured",
      "re-plan from a run's measurements.json: speeds fitted from the measured stage times "
      "(with --cluster/--model, or --plan)",
      cxxopts::value<std::string>())(
      "plan",
      "with --measured: the run's layout or `hetrun plan --json` output instead of "
      "--cluster/--model",
      cxxopts::value<std::string>())("o,output", "write to FILE instead of stdout",
                                     cxxopts::value<std::string>())("h,help", "this text");
}

// --emit's value and the flags that go with one kind of output only.
Status CheckEmitFlags(const cxxopts::ParseResult& parsed, const std::string& emit) {
  if (!emit.empty() && emit != "volcano" && emit != "jobset" && emit != "megatron" &&
      emit != "torchtitan") {
    return UsageError("--emit '" + emit + "': one of volcano, jobset, megatron, torchtitan");
  }
  if (parsed.count("one-per-line") && emit != "megatron") {
    return UsageError("--one-per-line goes with --emit megatron");
  }
  for (const char* flag : {"torchtitan-names", "torchtitan-version"}) {
    if (parsed.count(flag) && emit != "torchtitan") {
      return UsageError(std::string("--") + flag + " goes with --emit torchtitan");
    }
  }
  if (parsed.count("kueue-queue")) {
    std::string queue = parsed["kueue-queue"].as<std::string>();
    if (emit != "jobset") return UsageError("--kueue-queue goes with --emit jobset");
    if (!plan::IsDnsLabel(queue)) {
      return UsageError("--kueue-queue '" + queue +
                        "' must be an RFC 1123 label (lower-case, digits, '-'; at most 63)");
    }
  }
  for (const char* flag : {"k8s-version", "feature-gates", "restart"}) {
    if (parsed.count(flag) && emit != "volcano" && emit != "jobset") {
      return UsageError(std::string("--") + flag + " goes with --emit volcano or --emit jobset");
    }
  }
  if (emit == "jobset" && parsed.count("queue")) {
    return UsageError("--queue is Volcano's queue; a JobSet is queued with --kueue-queue");
  }
  return Status::Ok();
}

// The flags that need or exclude each other.
Status CheckPlanFlags(const cxxopts::ParseResult& parsed) {
  if (!parsed.unmatched().empty()) {
    return UsageError("hetrun plan takes no positional arguments, got '" + parsed.unmatched()[0] +
                      "'");
  }
  if (parsed.count("plan") && !parsed.count("measured")) {
    return UsageError("--plan goes with --measured");
  }
  if (parsed.count("plan") && (parsed.count("cluster") || parsed.count("model"))) {
    return UsageError("--plan replaces --cluster and --model: give one or the other");
  }
  if (!parsed.count("cluster") && !parsed.count("plan")) {
    return UsageError("hetrun plan needs --cluster FILE");
  }
  if (parsed.count("links") && !parsed.count("cluster")) {
    return UsageError("--links goes with --cluster: it replaces the cluster file's links");
  }
  if (parsed.count("measured") && (parsed.count("emit") || parsed.count("compare-split"))) {
    return UsageError("--measured re-plans from the measured split: no --emit or --compare-split");
  }
  std::string emit = parsed.count("emit") ? parsed["emit"].as<std::string>() : "";
  HETRUN_RETURN_IF_ERROR(CheckEmitFlags(parsed, emit));
  bool homogeneous = parsed.count("strict-homogeneous") > 0;
  if (homogeneous && emit != "volcano") {
    return UsageError("--strict-homogeneous goes with --emit volcano");
  }
  if (parsed.count("family") && !homogeneous) {
    return UsageError("--family goes with --strict-homogeneous");
  }
  if (!emit.empty() && (parsed.count("json") || parsed.count("compare-split"))) {
    return UsageError(
        "--emit prints a job or arguments; --json and --compare-split describe a plan");
  }
  return Status::Ok();
}

// The strict-homogeneous gang job on --family (default: the cluster's fastest).
Result<std::string> HomogeneousOutput(const cxxopts::ParseResult& parsed,
                                      const plan::ClusterSpec& cluster) {
  std::string family = parsed.count("family") ? parsed["family"].as<std::string>() : "";
  if (!family.empty() && !cluster.family_speed.contains(family)) {
    return InvalidArgumentError("--family '" + family + "' is not a family of the cluster file");
  }
  return plan::HomogeneousJobYaml(cluster, family);
}

// --emit torchtitan: the plan's split as torchtitan's overrides, with --torchtitan-names.
Result<std::string> TorchtitanOutput(const cxxopts::ParseResult& parsed,
                                     const plan::PipelinePlan& result,
                                     const plan::ModelSpec& model) {
  plan::TorchtitanNames names;
  if (parsed.count("torchtitan-names")) {
    HETRUN_ASSIGN_OR_RETURN(names,
                            plan::ParseTorchtitanNames(parsed["torchtitan-names"].as<std::string>(),
                                                       "--torchtitan-names"));
  }
  std::string version;
  if (parsed.count("torchtitan-version")) {
    HETRUN_ASSIGN_OR_RETURN(
        version, plan::ParseTorchtitanVersion(parsed["torchtitan-version"].as<std::string>()));
  } else {
    // The torchtitan of the virtualenv hetrun is installed in (bin/hetrun -> bin/..), else 0.3.0.
    std::error_code error;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
    version = plan::TorchtitanKeysFor(
        error ? "" : plan::InstalledTorchtitanVersion(exe.parent_path().parent_path().string()));
  }
  HETRUN_ASSIGN_OR_RETURN(plan::TorchtitanArgs args,
                          plan::TorchtitanArgsFor(result.best, model, names, version));
  return plan::TorchtitanArgumentsText(args, result.best, model, names);
}

// The pipeline plan of --model over the cluster: text, JSON (--json), its Volcano Job or its
// Megatron-LM arguments (--emit).
Result<std::string> PipelineOutput(const cxxopts::ParseResult& parsed,
                                   const plan::ClusterSpec& cluster) {
  if (!parsed.count("model")) return UsageError("hetrun plan needs --model FILE");
  HETRUN_ASSIGN_OR_RETURN(plan::ModelSpec model,
                          plan::LoadModelSpec(parsed["model"].as<std::string>()));
  std::optional<std::vector<int64_t>> compare;
  if (parsed.count("compare-split")) {
    HETRUN_ASSIGN_OR_RETURN(
        compare, plan::ParseSplit(parsed["compare-split"].as<std::string>(),
                                  static_cast<int64_t>(model.layers.size()),
                                  static_cast<int64_t>(cluster.stages.size()), "--compare-split"));
  }
  std::optional<std::span<const int64_t>> compare_span;
  if (compare) compare_span = std::span<const int64_t>(*compare);
  HETRUN_ASSIGN_OR_RETURN(plan::PipelinePlan result,
                          plan::PlanPipeline(model, cluster, compare_span));
  std::string emit = parsed.count("emit") ? parsed["emit"].as<std::string>() : "";
  if (emit == "megatron") {
    HETRUN_ASSIGN_OR_RETURN(plan::MegatronLayout layout,
                            plan::MegatronLayoutFor(result.best, model));
    return parsed.count("one-per-line") ? plan::MegatronArgumentLines(layout)
                                        : plan::MegatronArgumentsText(layout, result.best, model);
  }
  if (emit == "torchtitan") return TorchtitanOutput(parsed, result, model);
  if (emit == "jobset") {
    std::string queue = parsed.count("kueue-queue") ? parsed["kueue-queue"].as<std::string>() : "";
    std::string text = plan::JobSetYaml(result, cluster, queue);
    if (!queue.empty()) text += "---\n" + plan::KueueQueuesYaml(cluster, queue);
    return text;
  }
  if (!emit.empty()) return plan::PipelineJobYaml(result, cluster);
  return parsed.count("json") ? plan::PlanJson(result, model) : plan::PlanText(result, model);
}

// --measured FILE: the plan over speeds fitted from a run's measurements (hetrun/pipeline/
// measured_plan.h), from --cluster/--model or from --plan's layout.
Result<std::string> MeasuredOutput(const cxxopts::ParseResult& parsed) {
  plan::ModelSpec model;
  plan::ClusterSpec cluster;
  if (parsed.count("plan")) {
    HETRUN_ASSIGN_OR_RETURN(pipeline::JobLayout layout,
                            pipeline::LoadLayoutOrPlan(parsed["plan"].as<std::string>()));
    pipeline::SpecsFromLayout(layout, &model, &cluster);
  } else {
    if (!parsed.count("model")) return UsageError("hetrun plan needs --model FILE");
    HETRUN_ASSIGN_OR_RETURN(cluster, plan::LoadClusterSpec(parsed["cluster"].as<std::string>()));
    HETRUN_ASSIGN_OR_RETURN(model, plan::LoadModelSpec(parsed["model"].as<std::string>()));
  }
  const std::string path = parsed["measured"].as<std::string>();
  HETRUN_ASSIGN_OR_RETURN(pipeline::Measurements measurements, pipeline::LoadMeasurements(path));
  HETRUN_ASSIGN_OR_RETURN(
      pipeline::MeasuredPlan measured,
      pipeline::PlanFromMeasurements(measurements, path, std::move(model), std::move(cluster)));
  return parsed.count("json") ? pipeline::MeasuredPlanJson(measured)
                              : pipeline::MeasuredPlanText(measured);
}

}  // namespace

Result<int> commands::Plan(const CommandContext& context) {
  cxxopts::Options options(
      "hetrun plan",
      "Split a model's layers over pipeline stages on mixed GPU generations: the split that "
      "minimises the slowest stage (exact), its 1F1B iteration time and bubble, next to an even "
      "split, with the links its boundaries cross; optionally the Volcano Job or the JobSet "
      "(with its Kueue queues) that runs it, or the split as Megatron-LM pipeline arguments.");
  AddPlanOptions(options);
  HETRUN_ASSIGN_OR_RETURN(cxxopts::ParseResult parsed,
                          ParseSubcommandOptions(options, context.args));
  if (parsed.count("help")) {
    context.out << options.help();
    return kExitOk;
  }
  HETRUN_RETURN_IF_ERROR(CheckPlanFlags(parsed));
  if (parsed.count("measured")) {
    HETRUN_ASSIGN_OR_RETURN(std::string measured, MeasuredOutput(parsed));
    std::string output = parsed.count("output") ? parsed["output"].as<std::string>() : "";
    HETRUN_RETURN_IF_ERROR(WriteOutput(output, measured, context.out));
    return kExitOk;
  }
  HETRUN_ASSIGN_OR_RETURN(plan::ClusterSpec cluster,
                          plan::LoadClusterSpec(parsed["cluster"].as<std::string>()));
  if (parsed.count("links")) {
    const std::string links = parsed["links"].as<std::string>();
    HETRUN_ASSIGN_OR_RETURN(plan::LinksFragment fragment, plan::LoadLinksFragment(links));
    HETRUN_RETURN_IF_ERROR(plan::ApplyLinksFragment(fragment, links, &cluster));
  }
  HETRUN_RETURN_IF_ERROR(ApplyJobFlags(parsed, &cluster));
  HETRUN_ASSIGN_OR_RETURN(std::string text, parsed.count("strict-homogeneous")
                                                ? HomogeneousOutput(parsed, cluster)
                                                : PipelineOutput(parsed, cluster));
  std::string output = parsed.count("output") ? parsed["output"].as<std::string>() : "";
  HETRUN_RETURN_IF_ERROR(WriteOutput(output, text, context.out));
  return kExitOk;
}

}  // namespace hetrun::launcher

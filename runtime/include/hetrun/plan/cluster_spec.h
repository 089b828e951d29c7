// The pipeline slots a plan fills: stages in pipeline order, each a Volcano task replica on a GPU
// family with a relative speed and a memory limit, read from a JSON file
// (docs/reference/cli/plan.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hetrun/base/status.h"
#include "hetrun/plan/k8s_target.h"
#include "hetrun/plan/links.h"

namespace hetrun::plan {

/// One pipeline stage (one pod) after `count` has been expanded.
struct StageSlot {
  std::string task;        ///< Volcano task name (RFC 1123 label)
  int64_t task_index = 0;  ///< this stage's index among its task's stages = the pod's VC_TASK_INDEX
  std::string family;      ///< GPU family label value: "ampere", "hopper", ...
  double speed = 0;        ///< relative compute speed of the model, else of the family (> 0)
  double memory_bytes = 0;  ///< most bytes of layers the stage may hold (> 0)
  int64_t gpus = 1;  ///< replicas of the stage (data-parallel ranks): `gpus`, else gpus_per_pod
  std::optional<Link> network{};  ///< the pod's inter-node link (stage boundaries, job collectives)
  std::optional<Link> nvlink{};   ///< GPU-to-GPU link inside the pod (the stage's replicas)
  std::string model{};  ///< GPU model ("h100-pcie", hetrun/job/gpu_model.h); "" when not named
};

struct ClusterSpec {
  std::vector<StageSlot> stages;                    ///< in pipeline order, at least one
  std::map<std::string, double> family_speed;       ///< defaults merged with the file's entries
  std::map<std::string, double> model_speed;        ///< DefaultModelSpeeds() and the file's
  std::string label_key = "nvidia.com/gpu.family";  ///< node label the families are values of
  std::optional<double> memory_ceiling_bytes;       ///< job-wide ceiling; caps every stage's memory

  // Volcano Job settings (defaults are documented placeholders; flags override).
  std::string job_name = "hetrun-pipeline";
  std::string namespace_name;  ///< empty: no metadata.namespace (kubectl's current namespace)
  std::string queue = "default";
  std::string image = "registry.example.com/ai/hetrun-trainer:latest";
  int64_t gpus_per_pod = 8;
  std::vector<std::string> command = {"python3", "/workspace/train.py"};  ///< the trainer, after --

  // Volcano network-topology-aware scheduling (HyperNodes): the highest tier the job's pods may
  // span (highestTierAllowed) and "hard" or "soft"; unset: no networkTopology is written.
  std::optional<int64_t> network_tier;
  std::string network_mode;  ///< "hard" or "soft"; empty: soft for a pipeline, hard for a gang

  /// The Kubernetes version the manifests target (--k8s-version, --feature-gates, --restart):
  /// the trainer's restart rules (hetrun/plan/restart_rules.h).
  K8sTarget k8s;

  /// Task names in order of first appearance (the job's task order).
  std::vector<std::string> TaskOrder() const;
};

/// Datasheet defaults: dense BF16 tensor throughput relative to an A100 SXM (312 TFLOP/s):
/// ampere 1.0, hopper 3.17 (H100 SXM, 989 TFLOP/s). Measured ratios belong in the file.
std::map<std::string, double> DefaultFamilySpeeds();

/// The speed table per GPU model (hetrun/job/gpu_model.h's KnownGpuModels: each figure with its
/// source), on the same scale: dense BF16 tensor TFLOP/s over an A100 SXM's 312.
std::map<std::string, double> DefaultModelSpeeds();

/// Most pipeline stages a cluster may expand to.
inline constexpr int64_t kMaxStages = 256;

/// Parses the cluster JSON:
///   {"family_speed": {"ampere": 1.0, "hopper": 3.17}, "label_key": "nvidia.com/gpu.family",
///    "stages": [{"task": "heavy-stage-workers", "family": "hopper", "count": 4,
///                "memory_bytes": 8.0e10, "gpus": 4, "network": "ib-400g", "nvlink": "nvlink4"},
///               ...]}
/// A stage entry names a `family`, a `model` ("h100-pcie", "a100-sxm4-40gb": a model of the
/// table or of the file's `model_speed`), or both: a model's speed is the model's, its family
/// the table's (a model outside the table needs `family`, which must agree with the table's
/// otherwise). `model_speed` (optional) overrides or adds models' speeds as `family_speed` does.
/// `gpus` (optional): the replicas of each stage of the entry; default gpus_per_pod (at least 1).
/// `network` / `nvlink` (optional, per entry or top-level as the default of every entry): a name
/// of NetworkLinkTable() / NvlinkTable() or a number of GB/s per direction (> 0); an unknown
/// name is an error suggesting the nearest known one.
/// memory_bytes (and memory_ceiling_bytes) take a number or a size string ("80GiB").
/// `network_tier` (optional, an integer >= 1) and `network_mode` (optional, "hard" or "soft",
/// only with network_tier): the Volcano Job's networkTopology.
/// Errors are kInvalidArgument and name `source` and the JSON path ("$.stages[2].family").
Result<ClusterSpec> ParseClusterSpec(std::string_view json_text, std::string_view source);

/// Reads and parses `path`.
Result<ClusterSpec> LoadClusterSpec(const std::string& path);

/// True when `name` is an RFC 1123 label (Volcano task names): [a-z0-9]([-a-z0-9]*[a-z0-9])?,
/// <= 63.
bool IsDnsLabel(std::string_view name);

}  // namespace hetrun::plan

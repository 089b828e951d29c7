// JobSet (docs/ARCHITECTURE.md §4.1, the JobSet level): a JobSet of one replicated job per
// pipeline task, one pod per Job. JobSet labels every pod with its JobSet's name, its Job's index
// in the replicated job, its global index over all replicated jobs and the JobSet's restart
// attempt; the emitted pods read those labels into HETRUN_JOBSET_* through the downward API. With
// network.enableDNSHostnames every pod is reachable as <jobset>-<job>-<index>-<pod>.<subdomain>
// (the subdomain defaults to the JobSet's name).
#include <numeric>
#include <string>

#include "hetrun/base/units.h"
#include "job/topology_internal.h"

namespace hetrun::topology_internal {
namespace {

constexpr std::string_view kVars[] = {"HETRUN_JOBSET_NAME", "HETRUN_JOBSET_JOB_INDEX",
                                      "HETRUN_JOBSET_GLOBAL_INDEX", "HETRUN_JOBSET_RESTART_ATTEMPT",
                                      "HETRUN_JOBSET_REPLICAS"};

// A variable filled from a pod label is empty when the label is absent: read as unset.
std::optional<std::string> NonEmpty(const Environment& env, std::string_view name) {
  std::optional<std::string> value = env.Get(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

Result<std::optional<int>> LabelInt(const Environment& env, std::string_view name,
                                    std::string_view label, int64_t max) {
  if (!NonEmpty(env, name)) return std::optional<int>();
  return ReadEnvInt(env, name, std::string(name) + ", JobSet label " + std::string(label), 0, max);
}

// HETRUN_TASK_ORDER and HETRUN_JOBSET_REPLICAS: the replicated jobs and their Jobs.
Result<std::vector<TaskInfo>> ReadTasks(const Environment& env) {
  std::optional<std::string> replicas = NonEmpty(env, "HETRUN_JOBSET_REPLICAS");
  if (!replicas) return std::vector<TaskInfo>();
  std::optional<std::string> order = NonEmpty(env, "HETRUN_TASK_ORDER");
  if (!order) {
    return BadValue("HETRUN_JOBSET_REPLICAS", *replicas, "environment",
                    "needs HETRUN_TASK_ORDER (the replicated jobs it counts, in order)");
  }
  std::vector<std::string_view> names = SplitOn(*order, ',');
  std::vector<std::string_view> counts = SplitOn(*replicas, ',');
  if (names.size() != counts.size()) {
    return BadValue("HETRUN_JOBSET_REPLICAS", *replicas, "environment",
                    "has " + std::to_string(counts.size()) + " entries but HETRUN_TASK_ORDER='" +
                        Shown(*order) + "' names " + std::to_string(names.size()) + " tasks");
  }
  std::vector<TaskInfo> tasks;
  for (size_t i = 0; i < names.size(); ++i) {
    auto count = ParseIntInRange(counts[i], 1, kMaxNodes);
    if (!count.ok()) {
      return BadValue("HETRUN_JOBSET_REPLICAS", *replicas, "environment",
                      "entry " + std::to_string(i) + ": " + count.status().message());
    }
    tasks.push_back(TaskInfo{std::string(names[i]), static_cast<int>(*count), {}});
  }
  return tasks;
}

// Host names of every pod, and node 0's, from the JobSet's name (the default subdomain).
void AddHosts(const std::string& jobset, JobSetPod* pod) {
  for (TaskInfo& task : pod->tasks) {
    for (int i = 0; i < task.replicas; ++i) {
      task.hosts.push_back(jobset + "-" + task.name + "-" + std::to_string(i) + "-0." + jobset);
    }
  }
  if (pod->tasks.empty()) return;
  pod->master_addr = Candidate<std::string>{
      pod->tasks.front().hosts.front(),
      "HETRUN_JOBSET_NAME, JobSet DNS host name <jobset>-<job>-0-0.<subdomain> of the first "
      "task in HETRUN_TASK_ORDER",
      kJobSetLevel};
}

// This pod's task (HETRUN_TASK, or the only one) and its offset in the order.
Result<int> OwnTaskOffset(const Environment& env, JobSetPod* pod) {
  std::optional<std::string> named = NonEmpty(env, "HETRUN_TASK");
  if (!named && pod->tasks.size() == 1) named = pod->tasks.front().name;
  if (!named) {
    return InvalidArgumentError(
        "HETRUN_TASK is not set (JobSet): the pod's replicated job decides its offset in "
        "HETRUN_TASK_ORDER");
  }
  int offset = 0;
  for (const TaskInfo& task : pod->tasks) {
    if (task.name == *named) {
      pod->task = Sourced<std::string>{*named, "HETRUN_TASK, JobSet replicated job"};
      return offset;
    }
    offset += task.replicas;
  }
  return BadValue(
      "HETRUN_TASK", *named, "environment",
      "not a task of HETRUN_TASK_ORDER='" + Shown(env.Get("HETRUN_TASK_ORDER").value_or("")) + "'");
}

// The node rank from the job index: the task's offset + its Job index (one pod per Job).
Status DerivedRank(const Environment& env, int job_index, JobSetPod* pod) {
  HETRUN_ASSIGN_OR_RETURN(
      std::optional<int> completion,
      ReadEnvInt(env, "JOB_COMPLETION_INDEX", "JOB_COMPLETION_INDEX, Kubernetes Indexed Job", 0,
                 kMaxNodes - 1));
  if (completion && *completion != 0) {
    return BadValue("JOB_COMPLETION_INDEX", std::to_string(*completion), "Kubernetes Indexed Job",
                    "hetrun runs one pod per Job of a JobSet (completions 1): expected 0");
  }
  HETRUN_ASSIGN_OR_RETURN(int offset, OwnTaskOffset(env, pod));
  const TaskInfo* task = nullptr;
  for (const TaskInfo& t : pod->tasks) task = t.name == pod->task->value ? &t : task;
  if (job_index >= task->replicas) {
    return BadValue("HETRUN_JOBSET_JOB_INDEX", std::to_string(job_index), "JobSet",
                    "must be less than the " + std::to_string(task->replicas) + " Jobs of task '" +
                        task->name + "' (HETRUN_JOBSET_REPLICAS)");
  }
  pod->task_index = Sourced<int>{job_index, "HETRUN_JOBSET_JOB_INDEX, JobSet label job-index"};
  pod->node_rank = Candidate<int>{offset + job_index,
                                  "HETRUN_JOBSET_JOB_INDEX + offset of task '" + task->name +
                                      "' in HETRUN_TASK_ORDER (HETRUN_JOBSET_REPLICAS), JobSet",
                                  kJobSetLevel};
  return Status::Ok();
}

}  // namespace

bool HasJobSet(const Environment& env) {
  for (std::string_view var : kVars) {
    if (NonEmpty(env, var)) return true;
  }
  return false;
}

Result<std::optional<JobSetPod>> ReadJobSetPod(const Environment& env) {
  if (!HasJobSet(env)) return std::optional<JobSetPod>();
  JobSetPod pod;
  HETRUN_ASSIGN_OR_RETURN(pod.tasks, ReadTasks(env));
  if (std::optional<std::string> name = NonEmpty(env, "HETRUN_JOBSET_NAME")) {
    HETRUN_RETURN_IF_ERROR(CheckHost("HETRUN_JOBSET_NAME", *name, "JobSet label jobset-name"));
    AddHosts(*name, &pod);
  }
  if (!pod.tasks.empty()) {
    int nodes = std::accumulate(pod.tasks.begin(), pod.tasks.end(), 0,
                                [](int sum, const TaskInfo& t) { return sum + t.replicas; });
    pod.nnodes =
        Candidate<int>{nodes, "HETRUN_JOBSET_REPLICAS, JobSet: Jobs of every task", kJobSetLevel};
  }
  HETRUN_ASSIGN_OR_RETURN(std::optional<int> job_index,
                          LabelInt(env, "HETRUN_JOBSET_JOB_INDEX", "job-index", kMaxNodes - 1));
  if (job_index && !pod.tasks.empty()) HETRUN_RETURN_IF_ERROR(DerivedRank(env, *job_index, &pod));
  HETRUN_ASSIGN_OR_RETURN(std::optional<int> global, LabelInt(env, "HETRUN_JOBSET_GLOBAL_INDEX",
                                                              "job-global-index", kMaxNodes - 1));
  if (global) {
    if (pod.node_rank && pod.node_rank->value != *global) {
      return BadValue("HETRUN_JOBSET_GLOBAL_INDEX", std::to_string(*global), "JobSet",
                      "differs from the node rank " + std::to_string(pod.node_rank->value) +
                          " of " + pod.node_rank->source);
    }
    pod.node_rank = Candidate<int>{
        *global, "HETRUN_JOBSET_GLOBAL_INDEX, JobSet label job-global-index", kJobSetLevel};
  }
  HETRUN_ASSIGN_OR_RETURN(std::optional<int> attempt, LabelInt(env, "HETRUN_JOBSET_RESTART_ATTEMPT",
                                                               "restart-attempt", kMaxProcesses));
  if (attempt) {
    pod.incarnation =
        Sourced<int>{*attempt, "HETRUN_JOBSET_RESTART_ATTEMPT, JobSet label restart-attempt"};
  }
  return std::optional<JobSetPod>(std::move(pod));
}

}  // namespace hetrun::topology_internal

// Volcano svc + env plugins (docs/ARCHITECTURE.md §4.1 level 6): the job's tasks from VC_<TASK>_NUM
// / VC_<TASK>_HOSTS (or the svc plugin's <task>.host files), this pod's task and index, and from
// them the node count, node rank and master address.
//
// Names: the svc plugin writes VC_<TASK>_* with the task name upper-cased and '-' replaced by
// '_', and <task>.host with only the '-' replaced. Volcano task names are RFC 1123 labels
// ([a-z0-9-]), so both forms map back to the task name exactly.
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "hetrun/base/units.h"
#include "job/topology_internal.h"

namespace hetrun::topology_internal {
namespace {

constexpr std::string_view kSvc = "Volcano svc plugin";

std::string TaskFromKey(std::string_view key) {
  std::string name;
  for (char c : key) name += c == '_' ? '-' : static_cast<char>(std::tolower(c));
  return name;
}

std::string EnvKey(std::string_view task) {
  std::string key;
  for (char c : task) key += c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return key;
}

bool IsEnvKey(std::string_view key) {
  if (key.empty()) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool IsFileKey(std::string_view key) {
  if (key.empty()) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

struct RawTask {
  std::optional<int> num;
  std::optional<std::vector<std::string>> hosts;
};

Result<std::vector<std::string>> SplitHosts(std::string_view name, std::string_view text,
                                            std::string_view source, char sep) {
  std::vector<std::string> hosts;
  for (std::string_view part : SplitOn(text, sep)) {
    while (!part.empty() && (part.back() == '\r' || part.back() == ' ')) part.remove_suffix(1);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    if (part.empty()) {
      if (sep == '\n') continue;  // blank lines in a host file
      return BadValue(name, text, source, "empty host name in the list");
    }
    HETRUN_RETURN_IF_ERROR(CheckHost(name, part, source));
    hosts.emplace_back(part);
  }
  if (hosts.empty()) return BadValue(name, text, source, "lists no host");
  return hosts;
}

// Tasks from the environment, keyed by task name.
Result<std::map<std::string, RawTask>> TasksFromEnv(const Environment& env) {
  std::map<std::string, RawTask> tasks;
  for (const std::string& var : env.NamesWithPrefix("VC_")) {
    std::string_view rest = std::string_view(var).substr(3);
    bool is_num = rest.size() > 4 && rest.ends_with("_NUM");
    bool is_hosts = rest.size() > 6 && rest.ends_with("_HOSTS");
    if (!is_num && !is_hosts) continue;
    std::string_view key = rest.substr(0, rest.size() - (is_num ? 4 : 6));
    if (!IsEnvKey(key)) continue;  // not the svc plugin's spelling
    std::string value = env.Get(var).value_or("");
    RawTask& task = tasks[TaskFromKey(key)];
    std::string source = var + ", " + std::string(kSvc);
    if (is_num) {
      HETRUN_ASSIGN_OR_RETURN(task.num, ReadEnvInt(env, var, source, 0, kMaxNodes));
    } else {
      HETRUN_ASSIGN_OR_RETURN(task.hosts, SplitHosts(var, value, source, ','));
    }
  }
  return tasks;
}

Result<std::map<std::string, RawTask>> TasksFromFiles(
    const std::map<std::string, std::string>& files) {
  std::map<std::string, RawTask> tasks;
  for (const auto& [key, content] : files) {
    std::string file = key + ".host";
    if (!IsFileKey(key)) {
      return BadValue(file, "", "Volcano svc plugin host file",
                      "not a task's host file name (lower-case letters, digits and '_')");
    }
    std::string source = file + ", " + std::string(kSvc) + " file";
    HETRUN_ASSIGN_OR_RETURN(std::vector<std::string> hosts,
                            SplitHosts(file, content, source, '\n'));
    RawTask& task = tasks[TaskFromKey(key)];
    task.num = static_cast<int>(hosts.size());
    task.hosts = std::move(hosts);
  }
  return tasks;
}

// Default order: a task named "master" first, then by name (std::map order).
Result<std::vector<std::string>> TaskOrder(const Environment& env,
                                           const std::map<std::string, TaskInfo>& tasks,
                                           std::string* order_source) {
  std::vector<std::string> order;
  std::set<std::string> placed;
  if (std::optional<std::string> text = env.Get("HETRUN_TASK_ORDER")) {
    *order_source = "HETRUN_TASK_ORDER";
    for (std::string_view part : SplitOn(*text, ',')) {
      std::string name(part);
      if (!tasks.contains(name)) {
        std::string known;
        for (const auto& [task, info] : tasks) known += (known.empty() ? "" : ", ") + task;
        return BadValue("HETRUN_TASK_ORDER", *text, "environment",
                        "unknown task '" + Shown(name) + "' (tasks: " + known + ")");
      }
      if (!placed.insert(name).second) {
        return BadValue("HETRUN_TASK_ORDER", *text, "environment",
                        "task '" + name + "' is listed twice");
      }
      order.push_back(name);
    }
    if (order.size() < tasks.size()) *order_source += ", then master first, then by name";
  } else {
    *order_source = "default: master first, then by name";
  }
  if (tasks.contains("master") && !placed.contains("master")) {
    order.push_back("master");
    placed.insert("master");
  }
  for (const auto& [name, info] : tasks) {
    if (placed.insert(name).second) order.push_back(name);
  }
  return order;
}

struct HostnameMatch {
  std::string task;
  std::string job;
  int index = 0;
};

// Matches "<job>-<task>-<index>" (any domain part removed) against the known tasks; task names
// contain '-', so the longest matching task wins.
std::optional<HostnameMatch> MatchHostname(std::string_view hostname,
                                           const std::vector<TaskInfo>& tasks) {
  hostname = hostname.substr(0, hostname.find('.'));
  size_t dash = hostname.rfind('-');
  if (dash == std::string_view::npos) return std::nullopt;
  auto index = ParseIntInRange(hostname.substr(dash + 1), 0, kMaxNodes - 1);
  if (!index.ok() || hostname.substr(dash + 1).starts_with('-')) return std::nullopt;
  std::string_view head = hostname.substr(0, dash);  // <job>-<task>
  std::optional<HostnameMatch> best;
  for (const TaskInfo& task : tasks) {
    if (head.size() < task.name.size() + 2) continue;
    if (!head.ends_with("-" + task.name)) continue;
    if (best && best->task.size() >= task.name.size()) continue;
    best = HostnameMatch{task.name, std::string(head.substr(0, head.size() - task.name.size() - 1)),
                         static_cast<int>(*index)};
  }
  return best;
}

// VC_TASK_INDEX, or the deprecated VK_TASK_INDEX (the env plugin sets both to the same value).
Result<std::optional<Sourced<int>>> TaskIndexFromEnv(const Environment& env) {
  HETRUN_ASSIGN_OR_RETURN(
      std::optional<int> vc,
      ReadEnvInt(env, "VC_TASK_INDEX", "VC_TASK_INDEX, Volcano env plugin", 0, kMaxNodes - 1));
  HETRUN_ASSIGN_OR_RETURN(
      std::optional<int> vk,
      ReadEnvInt(env, "VK_TASK_INDEX", "VK_TASK_INDEX, Volcano env plugin (deprecated name)", 0,
                 kMaxNodes - 1));
  if (vc && vk && *vc != *vk) {
    return BadValue("VK_TASK_INDEX", std::to_string(*vk), "Volcano env plugin",
                    "differs from VC_TASK_INDEX=" + std::to_string(*vc));
  }
  if (vc)
    return std::optional<Sourced<int>>(Sourced<int>{*vc, "VC_TASK_INDEX, Volcano env plugin"});
  if (vk) {
    return std::optional<Sourced<int>>(
        Sourced<int>{*vk, "VK_TASK_INDEX, Volcano env plugin (deprecated name)"});
  }
  return std::optional<Sourced<int>>();
}

std::string NumSource(const VolcanoJob& job, const TaskInfo& task) {
  return job.tasks_source.starts_with("VC_") ? "VC_" + EnvKey(task.name) + "_NUM" : [&] {
    std::string file = task.name;
    std::replace(file.begin(), file.end(), '-', '_');
    return file + ".host";
  }();
}

// This pod's task and index, and from them its node rank.
Status ResolveOwnTask(const TopologyInputs& inputs, VolcanoJob* job) {
  const Environment& env = inputs.env;
  std::string hostname =
      inputs.hostname.empty() ? env.Get("HOSTNAME").value_or("") : inputs.hostname;
  std::optional<HostnameMatch> match = MatchHostname(hostname, job->tasks);
  if (std::optional<std::string> named = env.Get("HETRUN_TASK")) {
    auto it = std::find_if(job->tasks.begin(), job->tasks.end(),
                           [&](const TaskInfo& t) { return t.name == *named; });
    if (it == job->tasks.end()) {
      std::string known;
      for (const TaskInfo& t : job->tasks) known += (known.empty() ? "" : ", ") + t.name;
      return BadValue("HETRUN_TASK", *named, "environment",
                      "not a task of this Volcano job (tasks: " + known + ")");
    }
    job->task = Sourced<std::string>{*named, "HETRUN_TASK"};
    if (match && match->task != *named) match.reset();  // the hostname's index is another task's
  } else if (match) {
    job->task = Sourced<std::string>{match->task,
                                     "hostname '" + Shown(hostname) + "' = <job>-<task>-<index>"};
  } else {
    std::string known;
    for (const TaskInfo& t : job->tasks) known += (known.empty() ? "" : ", ") + t.name;
    job->own_task_error = BadValue(
        "HOSTNAME", hostname, "host name",
        "matches no Volcano task as <job>-<task>-<index> (tasks: " + known + "); set HETRUN_TASK");
    return Status::Ok();
  }

  HETRUN_ASSIGN_OR_RETURN(job->task_index, TaskIndexFromEnv(env));
  if (!job->task_index && match) {
    job->task_index = Sourced<int>{match->index, "hostname '" + Shown(hostname) + "' index"};
  }
  size_t own = 0;
  int before = 0;
  std::string before_text;
  for (; own < job->tasks.size() && job->tasks[own].name != job->task->value; ++own) {
    before += job->tasks[own].replicas;
    before_text += (before_text.empty() ? "" : " + ") + NumSource(*job, job->tasks[own]);
  }
  const TaskInfo& task = job->tasks[own];
  if (!job->task_index) {
    job->own_task_error = NotFoundError(
        "this pod's index in Volcano task '" + task.name +
        "' is unknown: VC_TASK_INDEX is not set (Volcano env plugin) and the host name '" +
        Shown(hostname) + "' has no <index>; set --node-rank or HETRUN_NODE_RANK");
    return Status::Ok();
  }
  if (job->task_index->value >= task.replicas) {
    return BadValue(job->task_index->source.substr(0, job->task_index->source.find(',')),
                    std::to_string(job->task_index->value), job->task_index->source,
                    "must be less than " + NumSource(*job, task) + "=" +
                        std::to_string(task.replicas) + " (replicas of task '" + task.name + "')");
  }
  std::string source = job->task_index->source.substr(0, job->task_index->source.find(','));
  if (!before_text.empty()) source += " + " + before_text;
  source += ", Volcano env/svc plugins: replicas of earlier tasks + index in task";
  job->node_rank = Candidate<int>{before + job->task_index->value, source, kVolcanoSvcLevel};
  return Status::Ok();
}

}  // namespace

Result<std::optional<VolcanoJob>> ReadVolcanoJob(const TopologyInputs& inputs) {
  const Environment& env = inputs.env;
  VolcanoJob job;
  using RawTasks = std::map<std::string, RawTask>;
  HETRUN_ASSIGN_OR_RETURN(RawTasks raw, TasksFromEnv(env));
  job.tasks_source = "VC_<TASK>_NUM/VC_<TASK>_HOSTS, Volcano svc plugin";
  if (raw.empty()) {
    HETRUN_ASSIGN_OR_RETURN(raw, TasksFromFiles(inputs.volcano_host_files));
    job.tasks_source = "<task>.host files, Volcano svc plugin";
  }
  if (raw.empty()) return std::optional<VolcanoJob>();

  std::map<std::string, TaskInfo> by_name;
  for (auto& [name, task] : raw) {
    TaskInfo info;
    info.name = name;
    std::string key = EnvKey(name);
    if (task.hosts && task.num && static_cast<int>(task.hosts->size()) != *task.num) {
      std::string hosts_var = "VC_" + key + "_HOSTS";
      std::string joined;
      for (const std::string& h : *task.hosts) joined += (joined.empty() ? "" : ",") + h;
      return BadValue(hosts_var, joined, hosts_var + ", " + std::string(kSvc),
                      "lists " + std::to_string(task.hosts->size()) + " hosts but VC_" + key +
                          "_NUM=" + std::to_string(*task.num));
    }
    info.replicas = task.num ? *task.num : static_cast<int>(task.hosts->size());
    if (task.hosts) info.hosts = std::move(*task.hosts);
    by_name.emplace(name, std::move(info));
  }
  HETRUN_ASSIGN_OR_RETURN(std::vector<std::string> order,
                          TaskOrder(env, by_name, &job.order_source));
  for (const std::string& name : order) job.tasks.push_back(std::move(by_name.at(name)));

  int64_t total = 0;
  std::string total_source;
  for (const TaskInfo& task : job.tasks) {
    total += task.replicas;
    total_source += (total_source.empty() ? "" : " + ") + NumSource(job, task);
  }
  if (total < 1 || total > kMaxNodes) {
    return BadValue(total_source, std::to_string(total), std::string(kSvc),
                    "the job's pods must number 1 to " + std::to_string(kMaxNodes));
  }
  job.nnodes = Candidate<int>{static_cast<int>(total), total_source + ", " + std::string(kSvc),
                              kVolcanoSvcLevel};

  const TaskInfo& first = job.tasks.front();
  if (!first.hosts.empty()) {
    job.master_addr = Candidate<std::string>{
        first.hosts.front(),
        "first host of task '" + first.name + "' (" +
            (job.tasks_source.starts_with("VC_") ? "VC_" + EnvKey(first.name) + "_HOSTS"
                                                 : NumSource(job, first)) +
            "), " + std::string(kSvc),
        kVolcanoSvcLevel};
  }
  HETRUN_RETURN_IF_ERROR(ResolveOwnTask(inputs, &job));
  return std::optional<VolcanoJob>(std::move(job));
}

}  // namespace hetrun::topology_internal

// The JobSet and Kueue documents hetrun writes (`hetrun plan --emit jobset [--kueue-queue]`), and
// the ones in examples/jobset/, parsed back and checked against the JobSet and Kueue CRDs'
// schemas (tests/data/jobset/, tests/data/kueue/) and the admission rules the schemas cannot
// express (tests/testing/scheduler_admission.h); the exit-code mapping derived from the table.
#include "hetrun/plan/jobset.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "hetrun/base/exit_code.h"
#include "hetrun/job/topology.h"
#include "hetrun/plan/cluster_spec.h"
#include "hetrun/plan/kueue_queues.h"
#include "hetrun/plan/model_spec.h"
#include "hetrun/plan/pod_failure_policy.h"
#include "hetrun/plan/volcano_job.h"
#include "openapi_validator.h"
#include "run_process.h"
#include "scheduler_admission.h"
#include "yaml_json.h"

namespace hetrun::plan {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kData = fs::path(HETRUN_SOURCE_DIR) / "tests" / "data";

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const json& Schema(const std::string& kind) {
  static const std::map<std::string, json>* schemas = [] {
    auto* map = new std::map<std::string, json>;
    auto load = [&](const std::string& kind, const fs::path& file, const std::string& version) {
      (*map)[kind] = testing::CrdSchema(testing::YamlToJson(ReadFile(kData / file)), version);
    };
    load("JobSet", "jobset/jobset-crd.yaml", "v1alpha2");
    load("ResourceFlavor", "kueue/kueue-resourceflavors-crd.yaml", "v1beta2");
    load("ClusterQueue", "kueue/kueue-clusterqueues-crd.yaml", "v1beta2");
    load("LocalQueue", "kueue/kueue-localqueues-crd.yaml", "v1beta2");
    return map;
  }();
  return schemas->at(kind);
}

std::string Joined(const std::vector<std::string>& errors) {
  std::string out;
  for (const std::string& error : errors) out += error + "\n";
  return out;
}

std::vector<json> Documents(const std::string& yaml) {
  std::vector<json> docs;
  size_t start = 0;
  while (true) {
    size_t at = yaml.find("\n---\n", start);
    docs.push_back(testing::YamlToJson(
        yaml.substr(start, at == std::string::npos ? std::string::npos : at + 1 - start)));
    if (at == std::string::npos) return docs;
    start = at + 5;
  }
}

// Every document valid for its kind: schema and admission; returns the kinds in order.
std::vector<std::string> ExpectValidDocuments(const std::string& yaml, const std::string& what) {
  std::vector<std::string> kinds;
  for (const json& doc : Documents(yaml)) {
    std::string kind = doc.value("kind", "");
    kinds.push_back(kind);
    if (kind == "NetworkPolicy") continue;
    EXPECT_EQ(Joined(testing::ValidateOpenApi(Schema(kind), doc)), "") << what << ": " << kind;
    std::string admission = kind == "JobSet" ? Joined(testing::JobSetAdmissionErrors(doc))
                                             : Joined(testing::KueueAdmissionErrors(doc));
    EXPECT_EQ(admission, "") << what << ": " << kind;
    EXPECT_EQ(doc["apiVersion"],
              kind == "JobSet" ? "jobset.x-k8s.io/v1alpha2" : "kueue.x-k8s.io/v1beta2")
        << what;
  }
  return kinds;
}

struct Seed {
  ModelSpec model;
  ClusterSpec cluster;
  PipelinePlan plan;
};

Seed LoadSeed() {
  Seed seed;
  seed.model = *LoadModelSpec(HETRUN_SOURCE_DIR "/examples/plan/seed-model.json");
  seed.cluster = *LoadClusterSpec(HETRUN_SOURCE_DIR "/examples/plan/seed-cluster.json");
  seed.plan = *PlanPipeline(seed.model, seed.cluster);
  return seed;
}

std::map<std::string, json> EnvOf(const json& replicated_job) {
  std::map<std::string, json> env;
  const json& container = replicated_job["template"]["spec"]["template"]["spec"]["containers"][0];
  for (const json& var : container["env"]) env[var["name"]] = var;
  return env;
}

TEST(JobSetTest, SchemasAreTheServedVersions) {
  EXPECT_TRUE(Schema("JobSet")["properties"]["spec"]["properties"].contains("replicatedJobs"));
  EXPECT_TRUE(
      Schema("ClusterQueue")["properties"]["spec"]["properties"].contains("resourceGroups"));
}

TEST(JobSetTest, SeedPlanIsAValidJobSetWithOneReplicatedJobPerTask) {
  Seed seed = LoadSeed();
  std::string yaml = JobSetYaml(seed.plan, seed.cluster, "");
  EXPECT_EQ(ExpectValidDocuments(yaml, "jobset"),
            (std::vector<std::string>{"JobSet", "NetworkPolicy"}));
  std::vector<json> docs = Documents(yaml);
  const json& spec = docs[0]["spec"];
  EXPECT_FALSE(docs[0]["metadata"]["labels"].contains(kKueueQueueLabel));
  EXPECT_EQ(spec["network"]["enableDNSHostnames"], true);
  ASSERT_EQ(spec["replicatedJobs"].size(), 2u);
  const json& light = spec["replicatedJobs"][0];
  EXPECT_EQ(light["name"], "light-stage-workers");
  EXPECT_EQ(light["replicas"], 2);
  const json& job = light["template"]["spec"];
  EXPECT_EQ(job["completions"], 1);
  EXPECT_EQ(job["parallelism"], 1);
  EXPECT_EQ(job["backoffLimit"], 0);
  const json& pod = job["template"]["spec"];
  EXPECT_EQ(pod["restartPolicy"], "Never");
  EXPECT_EQ(pod["terminationGracePeriodSeconds"], 60);
  EXPECT_EQ(pod["nodeSelector"]["nvidia.com/gpu.family"], "ampere");
  EXPECT_EQ(pod["volumes"][0]["emptyDir"]["medium"], "Memory");
  EXPECT_EQ(pod["containers"][0]["ports"][0]["containerPort"], 9400);
  std::map<std::string, json> env = EnvOf(light);
  EXPECT_EQ(env["HETRUN_STAGE"]["value"], "0,5");
  EXPECT_EQ(env["HETRUN_TASK_ORDER"]["value"], "light-stage-workers,heavy-stage-workers");
  EXPECT_EQ(env["HETRUN_JOBSET_REPLICAS"]["value"], "2,4");
  EXPECT_EQ(env["HETRUN_JOB_SECRET"]["valueFrom"]["secretKeyRef"]["name"],
            "balanced-heterogeneous-pipeline-hetrun-secret");
  EXPECT_EQ(env["HETRUN_JOBSET_GLOBAL_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.labels['jobset.sigs.k8s.io/job-global-index']");
  EXPECT_EQ(env["HETRUN_JOBSET_RESTART_ATTEMPT"]["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.labels['jobset.sigs.k8s.io/restart-attempt']");
  EXPECT_EQ(docs[1]["spec"]["podSelector"]["matchLabels"][kJobSetNameLabel],
            "balanced-heterogeneous-pipeline");
}

// The mapping, derived here from the table on its own: RestartJob codes and the PodEvicted event
// count (the JobSet restarts), every other code of the table and the 1-63 range fail the Job.
TEST(JobSetTest, PodFailurePolicyIsDerivedFromTheExitCodeTable) {
  std::set<int> restart;
  std::set<int> fail;
  bool evictions_restart = false;
  for (const ExitCodeRow& row : ExitCodeTable()) {
    if (row.kind == ExitCodeRow::Kind::kCode && row.code > 0) {
      (row.action == "RestartJob" ? restart : fail).insert(row.code);
    }
    if (row.kind == ExitCodeRow::Kind::kRange && row.cell == "1-63") {
      for (int code = 1; code <= 63; ++code) fail.insert(code);
    }
    if (row.kind == ExitCodeRow::Kind::kEvent && row.cell == "PodEvicted") {
      evictions_restart = row.action == "RestartJob";
    }
  }
  EXPECT_EQ(restart, (std::set<int>{75, 83, 143}));
  for (int code : {1, 63, 64, 70, 78, 80, 81, 84, 126, 127})
    EXPECT_TRUE(fail.contains(code)) << code;
  ASSERT_TRUE(evictions_restart);

  Seed seed = LoadSeed();
  json jobset = Documents(JobSetYaml(seed.plan, seed.cluster, ""))[0];
  for (const json& replicated : jobset["spec"]["replicatedJobs"]) {
    std::set<int> counted;
    std::set<int> failed;
    bool evictions_counted = false;
    for (const json& rule : replicated["template"]["spec"]["podFailurePolicy"]["rules"]) {
      if (rule.contains("onPodConditions")) {
        evictions_counted |=
            rule["action"] == "Count" && rule["onPodConditions"][0]["type"] == "DisruptionTarget";
        continue;
      }
      ASSERT_EQ(rule["onExitCodes"]["operator"], "In");
      for (int code : rule["onExitCodes"]["values"]) {
        (rule["action"] == "FailJob" ? failed : counted).insert(code);
        EXPECT_TRUE(rule["action"] == "FailJob" || rule["action"] == "Count") << rule.dump();
      }
    }
    EXPECT_EQ(counted, restart);
    EXPECT_EQ(failed, fail);
    EXPECT_TRUE(evictions_counted);
  }
  // PodFailurePolicy (a FailJob) fails the JobSet; anything else restarts it, as often as the
  // Volcano Job retries.
  const json& policy = jobset["spec"]["failurePolicy"];
  json volcano = Documents(PipelineJobYaml(seed.plan, seed.cluster))[0];
  EXPECT_EQ(policy["maxRestarts"], volcano["spec"]["maxRetry"]);
  EXPECT_EQ(JobSetMaxRestarts(), volcano["spec"]["maxRetry"]);
  ASSERT_EQ(policy["rules"].size(), 2u);
  EXPECT_EQ(policy["rules"][0]["action"], "FailJobSet");
  EXPECT_EQ(policy["rules"][0]["onJobFailureReasons"], json::array({"PodFailurePolicy"}));
  EXPECT_EQ(policy["rules"][1]["action"], "RestartJobSet");
  EXPECT_FALSE(policy["rules"][1].contains("onJobFailureReasons")) << "matches every failure";
}

TEST(JobSetTest, KueueQueueLabelsTheJobSetAndAddsOneFlavorPerFamily) {
  Seed seed = LoadSeed();
  std::string yaml = JobSetYaml(seed.plan, seed.cluster, "training") + "---\n" +
                     KueueQueuesYaml(seed.cluster, "training");
  EXPECT_EQ(ExpectValidDocuments(yaml, "jobset + kueue"),
            (std::vector<std::string>{"JobSet", "NetworkPolicy", "ResourceFlavor", "ResourceFlavor",
                                      "ClusterQueue", "LocalQueue"}));
  std::vector<json> docs = Documents(yaml);
  EXPECT_EQ(docs[0]["metadata"]["labels"][kKueueQueueLabel], "training");
  EXPECT_EQ(docs[2]["metadata"]["name"], "ampere");
  EXPECT_EQ(docs[2]["spec"]["nodeLabels"]["nvidia.com/gpu.family"], "ampere");
  EXPECT_EQ(docs[3]["spec"]["nodeLabels"]["nvidia.com/gpu.family"], "hopper");
  const json& group = docs[4]["spec"]["resourceGroups"][0];
  EXPECT_EQ(group["coveredResources"], json::array({"nvidia.com/gpu"}));
  // 2 ampere pods and 4 hopper pods of 8 GPUs each.
  EXPECT_EQ(group["flavors"][0]["resources"][0]["nominalQuota"], 16);
  EXPECT_EQ(group["flavors"][1]["resources"][0]["nominalQuota"], 32);
  EXPECT_EQ(docs[5]["metadata"]["name"], "training");
  EXPECT_EQ(docs[5]["spec"]["clusterQueue"], docs[4]["metadata"]["name"]);
}

// Each pod's environment as the downward API fills it (JobSet's labels), resolved: the node ranks
// are 0..5 in replicated-job order, and every pod finds node 0 at the same DNS name.
TEST(JobSetTest, EmittedPodsResolveToDistinctNodeRanksAndOneNodeZero) {
  Seed seed = LoadSeed();
  json jobset = Documents(JobSetYaml(seed.plan, seed.cluster, ""))[0];
  std::string name = jobset["metadata"]["name"];
  int global = 0;
  for (const json& replicated : jobset["spec"]["replicatedJobs"]) {
    for (int index = 0; index < replicated["replicas"].get<int>(); ++index, ++global) {
      std::map<std::string, std::string> labels = {
          {kJobSetNameLabel, name},
          {kJobSetJobIndexLabel, std::to_string(index)},
          {kJobSetGlobalIndexLabel, std::to_string(global)},
          {kJobSetRestartAttemptLabel, "0"}};
      std::map<std::string, std::string> vars = {{"JOB_COMPLETION_INDEX", "0"}};
      for (const auto& [var, entry] : EnvOf(replicated)) {
        if (entry.contains("value")) vars[var] = entry["value"];
        if (!entry.contains("valueFrom") || !entry["valueFrom"].contains("fieldRef")) continue;
        std::string path = entry["valueFrom"]["fieldRef"]["fieldPath"];
        std::string label = path.substr(path.find("['") + 2, path.find("']") - path.find("['") - 2);
        vars[var] = labels.at(label);
      }
      TopologyInputs in;
      in.env = Environment(vars);
      in.local_gpu_count = 8;
      Result<Topology> t = ResolveTopology(in);
      ASSERT_TRUE(t.ok()) << t.status().ToString();
      EXPECT_EQ(t->source, "jobset");
      EXPECT_EQ(t->nnodes.value, 6);
      EXPECT_EQ(t->node_rank.value, global);
      EXPECT_EQ(t->master_addr.value, name + "-light-stage-workers-0-0." + name);
      EXPECT_EQ(t->task_index->value, index);
    }
  }
  EXPECT_EQ(global, 6);
}

TEST(JobSetTest, AdmissionChecksCatchWhatTheSchemaCannot) {
  Seed seed = LoadSeed();
  json jobset = Documents(JobSetYaml(seed.plan, seed.cluster, ""))[0];
  json& job = jobset["spec"]["replicatedJobs"][0]["template"]["spec"];
  job["template"]["spec"]["restartPolicy"] = "OnFailure";
  json& rules = job["podFailurePolicy"]["rules"];
  rules[1]["onExitCodes"]["values"] = json::array({0, 75, 75, 256});
  jobset["spec"]["failurePolicy"]["rules"][1]["name"] = "restart-on-failure";
  std::string errors = Joined(testing::JobSetAdmissionErrors(jobset));
  EXPECT_NE(errors.find("restartPolicy: must be Never"), std::string::npos) << errors;
  EXPECT_NE(errors.find("0 cannot be used with In"), std::string::npos) << errors;
  EXPECT_NE(errors.find("ascending and unique"), std::string::npos) << errors;
  EXPECT_NE(errors.find("outside 0..255"), std::string::npos) << errors;
  EXPECT_NE(errors.find("'restart-on-failure' invalid"), std::string::npos) << errors;
  // The schema sees the duplicate (a list-type set), not 0 with In nor 256.
  std::string schema = Joined(testing::ValidateOpenApi(Schema("JobSet"), jobset));
  EXPECT_NE(schema.find("values[2]: duplicate entry"), std::string::npos) << schema;
  EXPECT_EQ(schema.find("values[0]"), std::string::npos) << schema;
  EXPECT_EQ(schema.find("values[3]"), std::string::npos) << schema;

  json queue = Documents(KueueQueuesYaml(seed.cluster, "q"))[2];
  queue["spec"]["resourceGroups"][0]["coveredResources"].push_back("cpu");
  queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = 4;
  std::string kueue = Joined(testing::KueueAdmissionErrors(queue));
  EXPECT_NE(kueue.find("not matching coveredResources"), std::string::npos) << kueue;
  EXPECT_NE(kueue.find("must be nil without a cohort"), std::string::npos) << kueue;
}

TEST(JobSetTest, ExamplesAreValidAsIs) {
  fs::path dir = fs::path(HETRUN_SOURCE_DIR) / "examples" / "jobset";
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    std::vector<std::string> kinds = ExpectValidDocuments(ReadFile(entry.path()), entry.path());
    EXPECT_EQ(kinds.front(), "JobSet") << entry.path();
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

TEST(JobSetTest, ExamplesAreWhatThePlannerWrites) {
  Seed seed = LoadSeed();
  EXPECT_EQ(ReadFile(fs::path(HETRUN_SOURCE_DIR) / "examples/jobset/heterogeneous-pipeline.yaml"),
            JobSetYaml(seed.plan, seed.cluster, ""))
      << "regenerate with: hetrun plan --cluster examples/plan/seed-cluster.json --model "
         "examples/plan/seed-model.json --emit jobset -o "
         "examples/jobset/heterogeneous-pipeline.yaml";
  EXPECT_EQ(
      ReadFile(fs::path(HETRUN_SOURCE_DIR) / "examples/jobset/heterogeneous-pipeline-kueue.yaml"),
      JobSetYaml(seed.plan, seed.cluster, "training") + "---\n" +
          KueueQueuesYaml(seed.cluster, "training"))
      << "regenerate with: hetrun plan --cluster examples/plan/seed-cluster.json --model "
         "examples/plan/seed-model.json --emit jobset --kueue-queue training -o "
         "examples/jobset/heterogeneous-pipeline-kueue.yaml";
}

testing::ProcessResult Plan(std::vector<std::string> args) {
  std::vector<std::string> argv = {
      HETRUN_BINARY, "plan",
      "--cluster",   HETRUN_SOURCE_DIR "/examples/plan/seed-cluster.json",
      "--model",     HETRUN_SOURCE_DIR "/examples/plan/seed-model.json"};
  argv.insert(argv.end(), args.begin(), args.end());
  testing::ProcessOptions options;
  options.env = std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}};
  return testing::RunProcess(argv, options);
}

TEST(JobSetTest, CommandLineEmissionIsValid) {
  testing::ProcessResult r =
      Plan({"--emit", "jobset", "--kueue-queue", "training", "--namespace", "ai-training"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectValidDocuments(r.out, "hetrun plan --emit jobset --kueue-queue");
  std::vector<json> docs = Documents(r.out);
  EXPECT_EQ(docs[0]["metadata"]["namespace"], "ai-training");
  EXPECT_EQ(docs.back()["metadata"]["namespace"], "ai-training");
}

TEST(JobSetTest, BadKueueFlagsAreUsageErrors) {
  struct Bad {
    std::vector<std::string> args;
    std::string error;
  };
  for (const Bad& bad : std::vector<Bad>{
           {{"--emit", "volcano", "--kueue-queue", "q"}, "--kueue-queue goes with --emit jobset"},
           {{"--emit", "jobset", "--kueue-queue", "Bad_Queue"}, "--kueue-queue 'Bad_Queue'"},
           {{"--emit", "jobset", "--queue", "q"}, "--queue is Volcano's queue"},
           {{"--emit", "slurm"}, "one of volcano, jobset, megatron"}}) {
    testing::ProcessResult r = Plan(bad.args);
    EXPECT_EQ(r.exit_code, 64) << bad.error;
    EXPECT_NE(r.err.find(bad.error), std::string::npos) << r.err;
  }
}

TEST(JobSetTest, TooLongPodHostNameIsRejected) {
  testing::ProcessResult r =
      Plan({"--emit", "jobset", "--name", "a-rather-long-job-name-for-a-pipeline-xx"});
  EXPECT_EQ(r.exit_code, 78) << r.err;
  EXPECT_NE(r.err.find("-0-xxxxx' is longer than 63"), std::string::npos) << r.err;
}

// JobSet's webhook counts the Job pod's 5-character suffix: a host name of 60 characters fits a
// label but its pod's name does not.
TEST(JobSetTest, PodNameWithTheJobsSuffixOver63IsRejected) {
  std::string name(60 - std::string("-light-stage-workers-0-0").size(), 'j');
  testing::ProcessResult r = Plan({"--emit", "jobset", "--name", name});
  EXPECT_EQ(r.exit_code, 78) << r.err;
  EXPECT_NE(r.err.find("-0-xxxxx' is longer than 63"), std::string::npos) << r.err;
  testing::ProcessResult volcano = Plan({"--emit", "volcano", "--name", name});
  EXPECT_EQ(volcano.exit_code, 0) << volcano.err;
}

TEST(JobSetTest, JobSetNameStartingWithADigitIsRejected) {
  testing::ProcessResult r = Plan({"--emit", "jobset", "--name", "7pipeline"});
  EXPECT_EQ(r.exit_code, 78) << r.err;
  EXPECT_NE(r.err.find("must start with a letter"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace hetrun::plan

// The Volcano manifests hetrun writes, and the ones in examples/volcano/, parsed back with
// yaml-cpp and checked against the Volcano Job CRD's schema and the admission webhook's rules.
#include "hetrun/plan/volcano_job.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "hetrun/base/exit_code.h"
#include "hetrun/plan/cluster_spec.h"
#include "hetrun/plan/model_spec.h"
#include "openapi_validator.h"
#include "run_process.h"
#include "yaml_json.h"

namespace hetrun::plan {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Volcano's published Job CRD, kept as test data (tests/data/volcano/README.md: source, license).
const fs::path kSchemaDir = fs::path(HETRUN_SOURCE_DIR) / "tests" / "data" / "volcano";

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const json* JobSchema() {
  static const json* schema = [] {
    fs::path crd = kSchemaDir / "volcano-batch-job-crd.yaml";
    return new json(testing::CrdSchema(testing::YamlToJson(ReadFile(crd)), "v1alpha1"));
  }();
  return schema;
}

std::string Joined(const std::vector<std::string>& errors) {
  std::string out;
  for (const std::string& error : errors) out += error + "\n";
  return out;
}

// The YAML documents of a manifest file ("---" lines between them).
std::vector<std::string> Documents(const std::string& yaml) {
  std::vector<std::string> docs;
  size_t start = 0;
  while (true) {
    size_t at = yaml.find("\n---\n", start);
    docs.push_back(
        yaml.substr(start, at == std::string::npos ? std::string::npos : at + 1 - start));
    if (at == std::string::npos) return docs;
    start = at + 5;
  }
}

// A NetworkPolicy that lets only the job's own pods reach them, and the monitoring namespace's
// pods the metrics port.
void ExpectJobOnlyNetworkPolicy(const std::string& yaml, const std::string& job_name,
                                const std::string& what) {
  json policy;
  ASSERT_NO_THROW(policy = testing::YamlToJson(yaml)) << what;
  EXPECT_EQ(policy["apiVersion"], "networking.k8s.io/v1") << what;
  EXPECT_EQ(policy["kind"], "NetworkPolicy") << what;
  json job_pods = {{"matchLabels", {{"volcano.sh/job-name", job_name}}}};
  json monitoring = {{"matchLabels", {{"kubernetes.io/metadata.name", "monitoring"}}}};
  EXPECT_EQ(policy["spec"]["podSelector"], job_pods) << what;
  EXPECT_EQ(policy["spec"]["policyTypes"], json::array({"Ingress"})) << what;
  EXPECT_EQ(policy["spec"]["ingress"],
            json::array({{{"from", json::array({{{"podSelector", job_pods}}})}},
                         {{"from", json::array({{{"namespaceSelector", monitoring}}})},
                          {"ports", json::array({{{"port", 9400}, {"protocol", "TCP"}}})}}}))
      << what;
}

// Every pod: a memory-backed /dev/shm, the metrics port declared, set and annotated.
void ExpectShmAndMetricsPort(const json& job, const std::string& what) {
  for (const json& task : job["spec"]["tasks"]) {
    const json& pod = task["template"];
    // The dshm volume first; an example may add ConfigMaps, mounted read-only (python-ddp.yaml:
    // its training script).
    const json& volumes = pod["spec"]["volumes"];
    ASSERT_TRUE(volumes.is_array() && !volumes.empty()) << what;
    EXPECT_EQ(volumes[0], json({{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}}}})) << what;
    for (size_t i = 1; i < volumes.size(); ++i) {
      EXPECT_TRUE(volumes[i].contains("configMap")) << what << ": " << volumes[i];
    }
    EXPECT_EQ(pod["metadata"]["annotations"]["prometheus.io/port"], "9400") << what;
    EXPECT_EQ(pod["metadata"]["annotations"]["prometheus.io/scrape"], "true") << what;
    for (const json& container : pod["spec"]["containers"]) {
      const json& mounts = container["volumeMounts"];
      ASSERT_EQ(mounts.size(), volumes.size()) << what;
      EXPECT_EQ(mounts[0], json({{"name", "dshm"}, {"mountPath", "/dev/shm"}})) << what;
      for (size_t i = 1; i < mounts.size(); ++i) {
        EXPECT_EQ(mounts[i].value("readOnly", false), true) << what << ": " << mounts[i];
      }
      EXPECT_EQ(container["ports"],
                json::array({{{"name", "metrics"}, {"containerPort", 9400}, {"protocol", "TCP"}}}))
          << what;
      bool port_set = false;
      for (const json& var : container["env"]) {
        port_set |= var["name"] == "HETRUN_METRICS_PORT" && var["value"] == "9400";
      }
      EXPECT_TRUE(port_set) << what;
    }
  }
}

void ExpectValidJob(const std::string& manifests, const std::string& what) {
  std::vector<std::string> docs = Documents(manifests);
  std::string yaml = docs[0];
  json job;
  ASSERT_NO_THROW(job = testing::YamlToJson(yaml)) << what;
  EXPECT_EQ(job["apiVersion"], "batch.volcano.sh/v1alpha1") << what;
  EXPECT_EQ(job["kind"], "Job") << what;
  EXPECT_EQ(Joined(testing::VolcanoAdmissionErrors(job)), "") << what;
  EXPECT_EQ(Joined(testing::ValidateOpenApi(*JobSchema(), job)), "") << what;
  ASSERT_EQ(docs.size(), 2u) << what << ": the job and its NetworkPolicy";
  ExpectJobOnlyNetworkPolicy(docs[1], job["metadata"]["name"], what);
  ExpectShmAndMetricsPort(job, what);
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

TEST(VolcanoJobTest, CrdSchemaIsTheJobsV1alpha1Schema) {
  ASSERT_TRUE(fs::exists(kSchemaDir / "volcano-batch-job-crd.yaml")) << kSchemaDir;
  EXPECT_TRUE(JobSchema()->contains("properties"));
  EXPECT_TRUE((*JobSchema())["properties"].contains("spec"));
}

TEST(VolcanoJobTest, PipelineJobIsAValidGangJob) {
  Seed seed = LoadSeed();
  std::string yaml = PipelineJobYaml(seed.plan, seed.cluster);
  ExpectValidJob(yaml, "pipeline job");
  json job = testing::YamlToJson(Documents(yaml)[0]);
  EXPECT_EQ(job["spec"]["minAvailable"], 6);
  EXPECT_EQ(job["spec"]["schedulerName"], "volcano");
  EXPECT_EQ(job["spec"]["queue"], "default");
  ASSERT_EQ(job["spec"]["tasks"].size(), 2u);
  const json& light = job["spec"]["tasks"][0];
  EXPECT_EQ(light["name"], "light-stage-workers");
  EXPECT_EQ(light["replicas"], 2);
  EXPECT_EQ(light["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.family"], "ampere");
  EXPECT_EQ(light["template"]["spec"]["restartPolicy"], "Never");
  const json& container = light["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["command"], json::array({"hetrun"}));
  std::map<std::string, json> env;
  for (const json& var : container["env"]) env[var["name"]] = var.value("value", json());
  EXPECT_EQ(env["HETRUN_STAGE"], "0,5");
  EXPECT_EQ(env["HETRUN_STAGE_LAYERS"], "0:4,60:4");
  EXPECT_EQ(env["HETRUN_STAGE_NAME"], "light-stage-workers");
  EXPECT_EQ(env["HETRUN_GPU_FAMILY"], "ampere");
  EXPECT_EQ(env["HETRUN_MICRO_BATCH"], "1");
  // The plan's M reaches every pod: without --plan the launchers assemble the layout with it.
  EXPECT_EQ(env["HETRUN_MICRO_BATCHES"], std::to_string(seed.plan.micro_batches));
  EXPECT_GT(seed.plan.micro_batches, 6) << "a seed whose M differs from its stage count";
  EXPECT_EQ(env["PIPELINE_STAGE_LAYERS"], "8");  // a string, unlike the seed's `value: 48`
  const json& heavy = job["spec"]["tasks"][1];
  EXPECT_EQ(heavy["replicas"], 4);
  EXPECT_EQ(heavy["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.family"], "hopper");
  // The header says how moved splits survive a job restart (a comment: no pod gets it unasked).
  EXPECT_NE(yaml.find("# Live layer moves survive a job restart when every pod sets "
                      "HETRUN_LAYOUT_STATE"),
            std::string::npos);
  EXPECT_EQ(env.count("HETRUN_LAYOUT_STATE"), 0u);
}

TEST(VolcanoJobTest, EveryPodGetsTheJobSecretAndAGracePeriodAboveHetrunsWorstCase) {
  Seed seed = LoadSeed();
  for (const std::string& yaml :
       {PipelineJobYaml(seed.plan, seed.cluster), HomogeneousJobYaml(seed.cluster, "")}) {
    json job = testing::YamlToJson(Documents(yaml)[0]);
    for (const json& task : job["spec"]["tasks"]) {
      const json& spec = task["template"]["spec"];
      // 30 s grace period + 15 s peer timeout (node 0's final wait) + margin.
      EXPECT_GT(spec["terminationGracePeriodSeconds"].get<int>(), 45);
      std::map<std::string, json> env;
      for (const json& var : spec["containers"][0]["env"]) env[var["name"]] = var;
      EXPECT_EQ(env["HETRUN_JOB_SECRET"]["valueFrom"]["secretKeyRef"],
                json({{"name", seed.cluster.job_name + "-hetrun-secret"}, {"key", "secret"}}));
      EXPECT_FALSE(env["HETRUN_JOB_SECRET"].contains("value")) << "never the secret itself";
      EXPECT_EQ(env["HETRUN_POD_GRACE_PERIOD"]["value"],
                std::to_string(spec["terminationGracePeriodSeconds"].get<int>()) + "s");
    }
    EXPECT_NE(
        yaml.find("kubectl create secret generic " + seed.cluster.job_name + "-hetrun-secret"),
        std::string::npos)
        << yaml;
  }
}

// Issue 28 item 7: the Job's version (raised by Volcano on every whole-job restart) reaches the
// launcher through the downward API and is bound into the store records' MAC.
TEST(VolcanoJobTest, EveryPodGetsTheIncarnationFromTheJobVersionAnnotation) {
  Seed seed = LoadSeed();
  for (const std::string& yaml :
       {PipelineJobYaml(seed.plan, seed.cluster), HomogeneousJobYaml(seed.cluster, "")}) {
    json job = testing::YamlToJson(Documents(yaml)[0]);
    for (const json& task : job["spec"]["tasks"]) {
      std::map<std::string, json> env;
      for (const json& var : task["template"]["spec"]["containers"][0]["env"]) {
        env[var["name"]] = var;
      }
      ASSERT_TRUE(env.count("HETRUN_INCARNATION")) << task.dump();
      EXPECT_EQ(env["HETRUN_INCARNATION"]["valueFrom"]["fieldRef"]["fieldPath"],
                "metadata.annotations['volcano.sh/job-version']");
    }
  }
}

// The `policies` hetrun's exit-code table asks for, as a parsed manifest writes them.
json TablePolicies() {
  json policies = json::array();
  for (const VolcanoPolicy& policy : VolcanoPolicies()) {
    if (policy.exit_code >= 0) {
      policies.push_back({{"exitCode", policy.exit_code}, {"action", policy.action}});
    } else {
      policies.push_back({{"event", policy.event}, {"action", policy.action}});
    }
  }
  return policies;
}

TEST(VolcanoJobTest, EmittedPoliciesAreTheExitCodeTables) {
  Seed seed = LoadSeed();
  json pipeline = testing::YamlToJson(Documents(PipelineJobYaml(seed.plan, seed.cluster))[0]);
  EXPECT_EQ(pipeline["spec"]["policies"], TablePolicies());
  json homogeneous = testing::YamlToJson(Documents(HomogeneousJobYaml(seed.cluster, ""))[0]);
  EXPECT_EQ(homogeneous["spec"]["policies"], TablePolicies());
  // And what the table says, as Volcano reads it: codes first, the catch-all last.
  const json& policies = pipeline["spec"]["policies"];
  std::map<int, std::string> actions;
  size_t last_code = 0, catch_all = 0;
  for (size_t i = 0; i < policies.size(); ++i) {
    if (policies[i].contains("exitCode")) {
      actions[policies[i]["exitCode"].get<int>()] = policies[i]["action"];
      last_code = i;
    } else if (policies[i]["event"] == "PodFailed") {
      catch_all = i;
    }
  }
  EXPECT_LT(last_code, catch_all);
  EXPECT_EQ(actions[75], "RestartJob");
  EXPECT_EQ(actions[143], "RestartJob");
  EXPECT_EQ(actions[64], "TerminateJob");
  EXPECT_EQ(actions[78], "TerminateJob");
  EXPECT_EQ(actions[80], "TerminateJob");
  EXPECT_EQ(actions[81], "AbortJob");
}

TEST(VolcanoJobTest, EveryExampleCarriesTheExitCodeTablesPolicies) {
  fs::path dir = fs::path(HETRUN_SOURCE_DIR) / "examples" / "volcano";
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    json job = testing::YamlToJson(Documents(ReadFile(entry.path()))[0]);
    EXPECT_EQ(job["spec"]["policies"], TablePolicies())
        << entry.path() << ": copy the policies of `hetrun exit-codes --json`";
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

TEST(VolcanoJobTest, TheVolcanoPagesPolicyBlockIsTheExitCodeTables) {
  std::string readme = ReadFile(fs::path(HETRUN_SOURCE_DIR) / "docs" / "how-to" / "volcano.md");
  size_t section = readme.find("\n## Volcano exit-code policies\n");
  ASSERT_NE(section, std::string::npos);
  size_t begin = readme.find("```yaml\n", section);
  ASSERT_NE(begin, std::string::npos);
  begin += 8;
  size_t end = readme.find("```", begin);
  json block = testing::YamlToJson(readme.substr(begin, end - begin));
  EXPECT_EQ(block["policies"], TablePolicies())
      << "docs/how-to/volcano.md's policies block differs from `hetrun exit-codes --json`";
  EXPECT_EQ(block["maxRetry"], 3);
}

TEST(VolcanoJobTest, StrictHomogeneousJobPinsEveryPodToOneFamily) {
  Seed seed = LoadSeed();
  std::string yaml = HomogeneousJobYaml(seed.cluster, "");
  ExpectValidJob(yaml, "homogeneous job");
  json job = testing::YamlToJson(Documents(yaml)[0]);
  EXPECT_EQ(job["spec"]["minAvailable"], 6);
  const json& task = job["spec"]["tasks"][0];
  EXPECT_EQ(task["replicas"], 6);
  const json& term = task["template"]["spec"]["affinity"]["nodeAffinity"]
                         ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0];
  EXPECT_EQ(term["matchExpressions"][0]["key"], "nvidia.com/gpu.family");
  EXPECT_EQ(term["matchExpressions"][0]["operator"], "In");
  EXPECT_EQ(term["matchExpressions"][0]["values"], json::array({"hopper"}));  // the fastest
}

TEST(VolcanoJobTest, QuotingSurvivesHostileStrings) {
  Seed seed = LoadSeed();
  seed.cluster.image = "registry:5000/a b:#tag";
  seed.cluster.queue = "true";
  seed.cluster.command = {"sh", "-c", "echo \"hi\": yes\n# not a comment", "null", "0x10", "*"};
  json job = testing::YamlToJson(Documents(PipelineJobYaml(seed.plan, seed.cluster))[0]);
  const json& container = job["spec"]["tasks"][0]["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["image"], "registry:5000/a b:#tag");
  EXPECT_EQ(job["spec"]["queue"], "true");
  json expected = json::array({"--nproc-per-node", "8", "--"});
  for (const std::string& word : seed.cluster.command) expected.push_back(word);
  EXPECT_EQ(container["args"], expected);
}

TEST(VolcanoJobTest, OutputIsDeterministic) {
  Seed seed = LoadSeed();
  EXPECT_EQ(PipelineJobYaml(seed.plan, seed.cluster), PipelineJobYaml(seed.plan, seed.cluster));
}

TEST(VolcanoJobTest, ValidatorRejectsTheSeedsUnquotedEnvValue) {
  // The seed article writes `value: 48`: an integer where Kubernetes wants a string.
  json job = testing::YamlToJson(R"(apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: balanced-heterogeneous-pipeline
spec:
  minAvailable: 1
  tasks:
  - replicas: 1
    name: heavy-stage-workers
    template:
      spec:
        nodeSelector:
          gpu.infra/family: hopper
        containers:
        - name: trainer
          env:
          - name: PIPELINE_STAGE_LAYERS
            value: 48
          bogusField: 1
)");
  std::string errors = Joined(testing::ValidateOpenApi(*JobSchema(), job));
  EXPECT_NE(errors.find("containers[0].env[0].value: expected string, got integer"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("containers[0].bogusField: unknown field"), std::string::npos) << errors;
  // And the admission checks catch a catch-all before an exit code.
  job["spec"]["policies"] = json::array({{{"event", "PodFailed"}, {"action", "AbortJob"}},
                                         {{"exitCode", 75}, {"action", "RestartJob"}}});
  std::string admission = Joined(testing::VolcanoAdmissionErrors(job));
  EXPECT_NE(admission.find("never matches"), std::string::npos) << admission;
  EXPECT_NE(admission.find("restartPolicy"), std::string::npos) << admission;
}

TEST(VolcanoJobTest, ExamplesAreValidAsIs) {
  fs::path dir = fs::path(HETRUN_SOURCE_DIR) / "examples" / "volcano";
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    ExpectValidJob(ReadFile(entry.path()), entry.path().string());
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

TEST(VolcanoJobTest, PipelineExampleIsWhatThePlannerWrites) {
  Seed seed = LoadSeed();
  EXPECT_EQ(ReadFile(fs::path(HETRUN_SOURCE_DIR) / "examples/volcano/heterogeneous-pipeline.yaml"),
            PipelineJobYaml(seed.plan, seed.cluster))
      << "regenerate with: hetrun plan --cluster examples/plan/seed-cluster.json --model "
         "examples/plan/seed-model.json --emit volcano -o "
         "examples/volcano/heterogeneous-pipeline.yaml";
}

TEST(VolcanoJobTest, HomogeneousExampleIsWhatThePlannerWrites) {
  ClusterSpec pool = *LoadClusterSpec(HETRUN_SOURCE_DIR "/examples/plan/hopper-pool.json");
  EXPECT_EQ(ReadFile(fs::path(HETRUN_SOURCE_DIR) / "examples/volcano/homogeneous-hopper.yaml"),
            HomogeneousJobYaml(pool, ""))
      << "regenerate with: hetrun plan --cluster examples/plan/hopper-pool.json --emit volcano "
         "--strict-homogeneous -o examples/volcano/homogeneous-hopper.yaml";
}

TEST(VolcanoJobTest, CommandLineEmissionIsValid) {
  for (bool homogeneous : {false, true}) {
    std::vector<std::string> argv = {
        HETRUN_BINARY, "plan",
        "--cluster",   HETRUN_SOURCE_DIR "/examples/plan/seed-cluster.json",
        "--emit",      "volcano",
        "--queue",     "training",
        "--namespace", "ai-training"};
    if (homogeneous) {
      argv.push_back("--strict-homogeneous");
    } else {
      argv.insert(argv.end(), {"--model", HETRUN_SOURCE_DIR "/examples/plan/seed-model.json"});
    }
    testing::ProcessOptions options;
    options.env = std::map<std::string, std::string>{{"PATH", "/usr/bin:/bin"}};
    testing::ProcessResult r = testing::RunProcess(argv, options);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ExpectValidJob(r.out, homogeneous ? "hetrun --strict-homogeneous" : "hetrun --emit volcano");
    json job = testing::YamlToJson(Documents(r.out)[0]);
    EXPECT_EQ(job["metadata"]["namespace"], "ai-training");
    EXPECT_EQ(job["spec"]["queue"], "training");
  }
}

TEST(VolcanoJobTest, NoNetworkTopologyWithoutTheClusterFieldsSoExamplesStayAsTheyWere) {
  Seed seed = LoadSeed();
  json pipeline = testing::YamlToJson(Documents(PipelineJobYaml(seed.plan, seed.cluster))[0]);
  json gang = testing::YamlToJson(Documents(HomogeneousJobYaml(seed.cluster, ""))[0]);
  EXPECT_FALSE(pipeline["spec"].contains("networkTopology"));
  EXPECT_FALSE(gang["spec"].contains("networkTopology"));
}

TEST(VolcanoJobTest, PipelineNetworkTopologyIsSoftUnlessTheClusterFileSaysHard) {
  Seed seed = LoadSeed();
  seed.cluster.network_tier = 2;
  std::string soft = PipelineJobYaml(seed.plan, seed.cluster);
  ExpectValidJob(soft, "pipeline, network tier 2");
  json job = testing::YamlToJson(Documents(soft)[0]);
  EXPECT_EQ(job["spec"]["networkTopology"], json({{"mode", "soft"}, {"highestTierAllowed", 2}}));
  EXPECT_NE(soft.find("# Volcano does not preempt other jobs for a job with a topology"),
            std::string::npos);
  EXPECT_NE(soft.find("Volcano 1.12 or later"), std::string::npos);
  EXPECT_NE(soft.find("off the fabric's oversubscribed upper tiers"), std::string::npos);

  seed.cluster.network_mode = "hard";
  std::string hard = PipelineJobYaml(seed.plan, seed.cluster);
  ExpectValidJob(hard, "pipeline, network tier 2 hard");
  EXPECT_EQ(testing::YamlToJson(Documents(hard)[0])["spec"]["networkTopology"]["mode"], "hard");
}

TEST(VolcanoJobTest, StrictHomogeneousNetworkTopologyIsAlwaysHard) {
  ClusterSpec pool = *LoadClusterSpec(HETRUN_SOURCE_DIR "/examples/plan/hopper-pool.json");
  pool.network_tier = 1;
  pool.network_mode = "soft";
  std::string yaml = HomogeneousJobYaml(pool, "");
  ExpectValidJob(yaml, "strict-homogeneous, network tier 1");
  json job = testing::YamlToJson(Documents(yaml)[0]);
  EXPECT_EQ(job["spec"]["networkTopology"], json({{"mode", "hard"}, {"highestTierAllowed", 1}}));
  EXPECT_NE(yaml.find("network_mode soft does not apply"), std::string::npos);
}

TEST(VolcanoJobTest, ValidatorRejectsAnUnknownNetworkTopologyMode) {
  Seed seed = LoadSeed();
  seed.cluster.network_tier = 1;
  json job = testing::YamlToJson(Documents(PipelineJobYaml(seed.plan, seed.cluster))[0]);
  job["spec"]["networkTopology"]["mode"] = "strict";
  job["spec"]["networkTopology"]["highestTierAllowed"] = -1;
  std::string errors = Joined(testing::ValidateOpenApi(*JobSchema(), job));
  EXPECT_NE(errors.find("networkTopology.mode: value \"strict\""), std::string::npos) << errors;
  EXPECT_NE(errors.find("highestTierAllowed: less than the minimum"), std::string::npos) << errors;
}

}  // namespace
}  // namespace hetrun::plan

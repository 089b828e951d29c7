"""Every object `hetrun plan --emit volcano|jobset` writes passes the validation layers of a
current API server (layers.py): its CRD's schema, its CRD's CEL rules (cel-python), and the
server's and webhooks' Go-side rules; core objects the core schema of the target version. Over
the shipped examples and a few hundred random plans, on every Kubernetes version hetrun emits for,
with the restart rules each version takes; and each layer refuses a broken object.

Run by ctest as manifests.validation (tests/CMakeLists.txt) with HETRUN_BIN set; by hand:
HETRUN_BIN=build/bin/hetrun .venv/bin/python -m pytest -q -s tests/manifests
"""

import json
import os
import random
import subprocess
from collections import Counter
from pathlib import Path

import pytest
import yaml

from crd_cel import CelLayer, CelStats
from crd_schema import CrdVersion
from k8s_version import Target
from layers import Checker

ROOT = Path(__file__).resolve().parents[2]
HETRUN = os.environ.get("HETRUN_BIN", str(ROOT / "build" / "bin" / "hetrun"))
EXAMPLES = sorted((ROOT / "examples" / "volcano").glob("*.yaml")) + sorted(
    (ROOT / "examples" / "jobset").glob("*.yaml"))
VERSIONS = ["1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37"]
RESTART_ALL = "RestartAllContainersOnContainerExits"
RANDOM_PLANS = 240

CEL = CelStats()  # shared by every checker: the summary counts all of them
_CHECKERS = {}


def checker(target):
    if target not in _CHECKERS:
        _CHECKERS[target] = Checker(target, CEL)
    return _CHECKERS[target]


def hetrun(*args, check=True):
    proc = subprocess.run([HETRUN, *map(str, args)], capture_output=True, text=True, timeout=60)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.parametrize("version", VERSIONS)
def test_shipped_examples_pass_every_layer(version):
    check = checker(Target.parse(version))
    for example in EXAMPLES:
        assert check.check_text(example.read_text()) == [], example


def random_case(rng, directory, index):
    """A random cluster and model file (valid input: the planner accepts it)."""
    families = rng.sample(["ampere", "hopper", "ada", "blackwell"], rng.randint(1, 3))
    speeds = {family: round(rng.uniform(0.5, 4.0), 2) for family in families}
    task_family = {f"t{rng.randint(0, 99)}-{family[:3]}": family for family in families}
    stages = [{"task": task, "family": family, "count": rng.randint(1, 3),
               "memory_bytes": 8.0e10} for task, family in task_family.items()]
    rng.shuffle(stages)
    cluster = {"family_speed": speeds, "gpus_per_pod": rng.choice([0, 1, 4, 8]), "stages": stages,
               "job_name": rng.choice(["j", "pipe"]) + str(rng.randint(0, 9999)),
               "label_key": rng.choice(["nvidia.com/gpu.family", "gpu-family", "a.b/c_d"]),
               "queue": rng.choice(["default", "q1"])}
    if rng.random() < 0.5:
        cluster["namespace"] = rng.choice(["ml", "team-7"])
    if rng.random() < 0.3:
        cluster["memory_ceiling_bytes"] = 7.0e10
    if rng.random() < 0.3:
        cluster["network_tier"] = rng.randint(1, 3)
    total = sum(stage["count"] for stage in stages)
    model = {"micro_batches": rng.randint(1, 16),
             "layers": [{"name": "embedding", "cost": 0.2, "bytes": 1.0e6},
                        {"name": "block", "repeat": total + rng.randint(0, 30), "cost": 1.0,
                         "bytes": 1.0e6}]}
    cluster_file = directory / f"cluster{index}.json"
    model_file = directory / f"model{index}.json"
    cluster_file.write_text(json.dumps(cluster))
    model_file.write_text(json.dumps(model))
    return cluster_file, model_file


# (flags, target) of the emissions a random plan takes: every version, the alpha gates, in-place.
TARGETS = [([], Target.parse("1.31"))] + [
    (["--k8s-version", v], Target.parse(v)) for v in VERSIONS[1:]] + [
    (["--k8s-version", "1.34", "--feature-gates", "ContainerRestartRules=true"],
     Target.parse("1.34", {"ContainerRestartRules"})),
    (["--k8s-version", "1.35", "--feature-gates", f"{RESTART_ALL}=true"],
     Target.parse("1.35", {RESTART_ALL}))]
EMITS = [["--emit", "volcano"], ["--emit", "volcano", "--strict-homogeneous"],
         ["--emit", "jobset"], ["--emit", "jobset", "--kueue-queue", "team-queue"]]


def test_random_plans_pass_every_layer(tmp_path):
    rng = random.Random(20261203)
    failures = []
    for index in range(RANDOM_PLANS):
        cluster_file, model_file = random_case(rng, tmp_path, index)
        flags, target = rng.choice(TARGETS)
        emit = rng.choice(EMITS)
        if emit[1] == "jobset" and target.version >= (1, 35) and target.enabled(RESTART_ALL) \
                and rng.random() < 0.5:
            emit = emit + ["--restart", "in-place"]
        out = hetrun("plan", "--cluster", cluster_file, "--model", model_file, *emit, *flags)
        errors = checker(target).check_text(out.stdout)
        if errors:
            failures.append((cluster_file.read_text(), emit + flags, errors[:5]))
    assert failures == []


def print_summary():
    objects = Counter()
    for c in _CHECKERS.values():
        objects.update(c.objects)
    server = sum(sum(c.server_checks.values()) for c in _CHECKERS.values())
    server_rules_used = {rule for c in _CHECKERS.values() for rule in c.server_checks}
    core = sum(c.core.validations for c in _CHECKERS.values())
    emitted = {k: r for k, r in CEL.rules.items() if k[1] in EMITTED_VERSIONS}
    evaluated = [k for k in emitted if k in CEL.evaluated_rules]
    print(f"\nmanifest validation: {sum(objects.values())} objects ({dict(objects)})")
    print(f"  CEL: {len(CEL.rules)} rules in the served CRD versions, {len(emitted)} in the "
          f"versions hetrun emits ({sum(r.transition for r in emitted.values())} transition "
          f"rules); {len(evaluated)} evaluated ({CEL.evaluations} evaluations), "
          f"{len(CEL.unevaluable)} cel-python could not evaluate")
    for key, reason in sorted(CEL.unevaluable.items()):
        print(f"    not evaluable: {key[0]} {key[1]} {key[2]}: {key[3]}: {reason}")
    for key in sorted(set(emitted) - set(evaluated) - set(CEL.unevaluable)):
        print(f"    no value to check (hetrun does not write the field): {key[0]} {key[2]}")
    print(f"  server rules: {len(server_rules_used)} rules, {server} rule checks; core schema: "
          f"{core} validations")


def trainer_containers(text):
    containers = []
    for obj in yaml.safe_load_all(text):
        if obj and obj["kind"] == "Job":
            containers += [t["template"]["spec"]["containers"][0] for t in obj["spec"]["tasks"]]
        if obj and obj["kind"] == "JobSet":
            containers += [j["template"]["spec"]["template"]["spec"]["containers"][0]
                           for j in obj["spec"]["replicatedJobs"]]
    return containers


SEED = ["--cluster", ROOT / "examples/plan/seed-cluster.json",
        "--model", ROOT / "examples/plan/seed-model.json"]


@pytest.mark.parametrize("emit", ["volcano", "jobset"])
@pytest.mark.parametrize("flags,expected", [
    ([], None), (["--k8s-version", "1.34"], None),
    (["--k8s-version", "1.34", "--feature-gates", "ContainerRestartRules=true"], "Restart"),
    (["--k8s-version", "1.35"], "Restart"), (["--k8s-version", "1.36"], "Restart")])
def test_containers_restart_in_place_on_75_only_from_1_35(emit, flags, expected):
    out = hetrun("plan", *SEED, "--emit", emit, *flags).stdout
    for container in trainer_containers(out):
        if expected is None:
            assert "restartPolicyRules" not in container and "restartPolicy" not in container
        else:
            assert container["restartPolicy"] == "Never"
            assert container["restartPolicyRules"] == [
                {"action": expected, "exitCodes": {"operator": "In", "values": [75]}}]


@pytest.mark.parametrize("flags", [["--k8s-version", "1.36"],
                                   ["--k8s-version", "1.35", "--feature-gates",
                                    f"{RESTART_ALL}=true"]])
def test_jobset_in_place_restart_restarts_all_containers_and_uses_in_place_restart(flags):
    out = hetrun("plan", *SEED, "--emit", "jobset", "--restart", "in-place", *flags).stdout
    jobset = next(obj for obj in yaml.safe_load_all(out) if obj["kind"] == "JobSet")
    assert jobset["spec"]["failurePolicy"]["restartStrategy"] == "InPlaceRestart"
    for job in jobset["spec"]["replicatedJobs"]:
        assert job["template"]["spec"]["podReplacementPolicy"] == "Failed"
        assert job["template"]["spec"]["backoffLimit"] == 2147483647
    for container in trainer_containers(out):
        assert container["restartPolicyRules"] == [
            {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [75]}}]


@pytest.mark.parametrize("args,named", [
    (["--emit", "jobset", "--restart", "in-place", "--k8s-version", "1.35"],
     ["--restart in-place", "1.35"]),
    (["--emit", "jobset", "--restart", "in-place"], ["--restart in-place", "1.31"]),
    (["--emit", "volcano", "--restart", "in-place", "--k8s-version", "1.36"],
     ["--restart in-place", "--emit volcano"]),
    (["--emit", "volcano", "--k8s-version", "1.34", "--feature-gates", f"{RESTART_ALL}=true"],
     [RESTART_ALL, "1.34"]),
    (["--emit", "volcano", "--k8s-version", "1.35", "--feature-gates",
      "ContainerRestartRules=true"], ["ContainerRestartRules", "1.35"]),
    (["--emit", "volcano", "--k8s-version", "1.30"], ["--k8s-version", "1.30"]),
    (["--emit", "megatron", "--k8s-version", "1.35"], ["--k8s-version", "--emit volcano"])])
def test_a_combination_the_version_cannot_take_is_refused_naming_both(args, named):
    proc = hetrun("plan", *SEED, *args, check=False)
    assert proc.returncode == 64, proc.stdout
    for word in named:
        assert word in proc.stderr


def emitted(emit, *flags):
    return list(yaml.safe_load_all(hetrun("plan", *SEED, "--emit", emit, *flags).stdout))


def test_the_crd_schema_layer_refuses_an_unknown_field():
    jobset = emitted("jobset")[0]
    jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["retries"] = 3
    errors = checker(Target()).check_object(jobset)
    assert any("[crd-schema]" in e and "retries" in e for e in errors), errors


def test_the_cel_layer_refuses_a_borrowing_limit_without_a_cohort():
    queue = next(o for o in emitted("jobset", "--kueue-queue", "q") if o["kind"] == "ClusterQueue")
    queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = 1
    errors = checker(Target()).check_object(queue)
    assert any("[crd-cel]" in e and "borrowingLimit" in e for e in errors), errors


def test_the_cel_layer_refuses_in_order_startup_with_depends_on():
    jobset = emitted("jobset")[0]
    jobset["spec"]["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
    jobset["spec"]["replicatedJobs"][1]["dependsOn"] = [
        {"name": jobset["spec"]["replicatedJobs"][0]["name"], "status": "Ready"}]
    errors = checker(Target()).check_object(jobset)
    assert any("[crd-cel]" in e and "InOrder" in e for e in errors), errors


def test_the_cel_layer_refuses_bad_tolerations_and_taints_on_a_flavor():
    flavor = next(o for o in emitted("jobset", "--kueue-queue", "q")
                  if o["kind"] == "ResourceFlavor")
    flavor["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists", "value": "x",
                                      "effect": "NoSchedule", "tolerationSeconds": 5}]
    flavor["spec"]["nodeTaints"] = [{"key": "gpu", "value": "x", "effect": "NoSchedule"}]
    errors = checker(Target()).check_object(flavor)
    assert any("[crd-cel]" in e and "tolerationSeconds" in e for e in errors), errors
    assert any("[crd-cel]" in e and "Exists" in e for e in errors), errors
    assert not any("nodeTaints" in e for e in errors), errors  # a valid taint passes


def test_the_core_schema_of_1_33_refuses_restart_rules():
    job = emitted("volcano", "--k8s-version", "1.35")[0]
    errors = checker(Target.parse("1.33")).check_object(job)
    assert any("[core-schema 1.33]" in e and "restartPolicyRules" in e for e in errors), errors
    assert any("[container.restartPolicy]" in e for e in errors), errors


@pytest.mark.parametrize("mutate,rule", [
    (lambda c: c.pop("restartPolicy"), "container.restartPolicyRules"),
    (lambda c: c["restartPolicyRules"][0].update(action="RestartAllContainers"),
     "container.restartPolicyRules"),
    (lambda c: c["restartPolicyRules"][0].pop("exitCodes"), "container.restartPolicyRules"),
    (lambda c: c["ports"][0].update(name="metrics-port-too-long"), "container.ports"),
    (lambda c: c["env"][0].update(name="1BAD"), "container.env"),
    (lambda c: c["resources"]["limits"].update({"nvidia.com/gpu": "1.5"}), "container.resources"),
])
def test_the_server_rules_layer_refuses_what_go_code_refuses(mutate, rule):
    job = emitted("volcano", "--k8s-version", "1.35")[0]
    mutate(job["spec"]["tasks"][0]["template"]["spec"]["containers"][0])
    errors = checker(Target.parse("1.35")).check_object(job)
    assert any(f"[{rule}]" in e for e in errors), errors


def test_the_server_rules_layer_refuses_unsorted_pod_failure_exit_codes():
    jobset = emitted("jobset")[0]
    rules = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["podFailurePolicy"]["rules"]
    codes = next(r for r in rules if "onExitCodes" in r)["onExitCodes"]
    codes["values"] = list(reversed(codes["values"]))
    errors = checker(Target()).check_object(jobset)
    assert any("[job.podFailurePolicy]" in e for e in errors), errors


def test_a_rule_cel_python_cannot_evaluate_is_listed_not_passed():
    schema = {"type": "object", "properties": {"url": {"type": "string"}},
              "x-kubernetes-validations": [{"rule": "isURL(self.url)", "message": "a URL"}]}
    stats = CelStats()
    layer = CelLayer(CrdVersion(Path("synthetic-crd.yaml"), "example.com", "Thing", "v1", True,
                                schema), stats)
    assert layer.errors({"url": "https://example.com"}) == []
    key = ("synthetic-crd.yaml", "v1", "openAPIV3Schema", "isURL(self.url)")
    assert key in stats.unevaluable and key not in stats.evaluated_rules
    assert stats.evaluations == 0


EMITTED_VERSIONS = ("v1alpha2", "v1beta2")  # JobSet's and Kueue's versions hetrun writes


def test_every_cel_rule_on_a_field_hetrun_fills_is_evaluated():
    check = checker(Target())
    for example in EXAMPLES:
        check.check_text(example.read_text())
    expected = {("jobset-crd.yaml", "openAPIV3Schema.spec"),
                ("jobset-crd.yaml", "openAPIV3Schema.spec.failurePolicy"),
                ("jobset-crd.yaml", "openAPIV3Schema.spec.network"),
                ("kueue-clusterqueues-crd.yaml", "openAPIV3Schema.spec"),
                ("kueue-clusterqueues-crd.yaml", "openAPIV3Schema.spec.resourceGroups[]"),
                ("kueue-clusterqueues-crd.yaml", "openAPIV3Schema.spec.flavorFungibility"),
                ("kueue-clusterqueues-crd.yaml", "openAPIV3Schema.spec.preemption"),
                ("kueue-localqueues-crd.yaml", "openAPIV3Schema.spec.clusterQueue"),
                ("kueue-resourceflavors-crd.yaml", "openAPIV3Schema.spec")}
    evaluated = {(key[0], key[2]) for key in CEL.evaluated_rules if key[1] in EMITTED_VERSIONS}
    assert expected <= evaluated, sorted(expected - evaluated)
    assert not any("compile" in reason for reason in CEL.unevaluable.values()), CEL.unevaluable


def test_restart_table_states_each_codes_fate_per_version():
    table = hetrun("exit-codes", "--restarts", "--markdown").stdout
    rows = {line.split(" | ")[0].strip("| "): line for line in table.splitlines()[2:]}
    assert "Restart: the container restarts in place" in rows["75"]
    assert "RestartAllContainers" in rows["75"]
    for permanent in ("78", "80", "84", "143", "83"):
        assert "in place, pod kept" not in rows[permanent], rows[permanent]
    assert "TerminateJob" in rows["78"] and "FailJobSet" in rows["78"]
    assert "RestartJob" in rows["143"] and "RestartJobSet" in rows["143"]
    print_summary()  # the module's last test: the counts over everything checked above

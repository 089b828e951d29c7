"""Every object `hetrun plan --emit volcano|jobset` writes through the validation layers a
current API server applies (docs/reference/validation.md):

  1. crd-schema   the CRD's OpenAPI v3 schema (crd_schema.py); core objects: the core schema of
                  the target Kubernetes version (core_schema.py, kubernetes-validate)
  2. crd-cel      the CRD's CEL rules, x-kubernetes-validations (crd_cel.py, cel-python)
  3. server       the API server's and the admission webhooks' Go-side rules for the fields
                  hetrun emits (server_rules.py, pod_rules.py, workload_rules.py)

Checker(target).check_text(yaml_text) returns every violation as "KIND/NAME PATH: what"; an object
of a kind no layer knows is a violation too (never passed unchecked). Checker.stats counts the
objects, rules and evaluations.
"""

from collections import Counter
from pathlib import Path

import yaml

import pod_rules  # noqa: F401  (registers the pod_template rules)
import server_rules
import workload_rules  # noqa: F401  (registers the workload rules)
from core_schema import CoreSchemaLayer
from crd_cel import CelLayer, CelStats
from crd_schema import SchemaLayer, load_crd

DATA = Path(__file__).resolve().parents[1] / "data"
CRD_FILES = ["volcano/volcano-batch-job-crd.yaml", "jobset/jobset-crd.yaml",
             "kueue/kueue-resourceflavors-crd.yaml", "kueue/kueue-clusterqueues-crd.yaml",
             "kueue/kueue-localqueues-crd.yaml"]
CORE_KINDS = {("networking.k8s.io/v1", "NetworkPolicy"): "network_policy", ("v1", "Secret"): None}


LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CRD_LAYERS = {}


def crd_layers(cel_stats):
    """The schema and CEL layers of every CRD, built once per CelStats (the CRDs do not depend
    on the Kubernetes version)."""
    if id(cel_stats) not in _CRD_LAYERS:
        layers = {}
        for name in CRD_FILES:
            for version in load_crd(DATA / name):
                layers[(version.api_version, version.kind)] = (
                    SchemaLayer(version), CelLayer(version, cel_stats))
        _CRD_LAYERS[id(cel_stats)] = (cel_stats, layers)
    return _CRD_LAYERS[id(cel_stats)][1]


class Checker:
    def __init__(self, target, cel_stats=None):
        self.target = target
        self.cel_stats = cel_stats if cel_stats is not None else CelStats()
        self.crds = crd_layers(self.cel_stats)
        self.core = CoreSchemaLayer(target)
        self.objects = Counter()
        self.server_checks = Counter()

    def check_text(self, text):
        errors = []
        for obj in yaml.load_all(text, Loader=LOADER):
            if obj is not None:
                errors += self.check_object(obj)
        return errors

    def check_object(self, obj):
        kind = (obj.get("apiVersion"), obj.get("kind"))
        name = f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
        self.objects[obj.get("kind")] += 1
        errors = self._server("meta", obj.get("metadata", {}), "metadata")
        if kind in self.crds:
            schema, cel = self.crds[kind]
            errors += schema.errors(obj) + cel.errors(obj)
            errors += self._workload(obj)
        elif kind in CORE_KINDS:
            errors += self.core.errors(obj, "")
            if CORE_KINDS[kind]:
                errors += self._server(CORE_KINDS[kind], obj.get("spec", {}), "spec")
        else:
            errors.append(f"no validation layer knows {kind[0]} {kind[1]}")
        return [f"{name} {error}" for error in errors]

    def _server(self, scope, value, path):
        for rule_id in server_rules.rules_applied(scope):
            self.server_checks[rule_id] += 1
        return server_rules.check(scope, value, self.target, path)

    def _pod_template(self, template, path):
        return self.core.pod_template_errors(template, path) + self._server(
            "pod_template", template, path)

    def _workload(self, obj):
        errors = []
        spec = obj.get("spec", {})
        if obj["kind"] == "Job":
            errors += self._server("volcano_job", spec, "spec")
            for index, task in enumerate(spec.get("tasks") or []):
                errors += self._pod_template(task.get("template", {}),
                                             f"spec.tasks[{index}].template")
        elif obj["kind"] == "JobSet":
            errors += self._server("jobset", obj, "")
            for index, job in enumerate(spec.get("replicatedJobs") or []):
                path = f"spec.replicatedJobs[{index}].template"
                job_template = job.get("template", {})
                errors += self.core.job_template_errors(job_template, path)
                errors += self._server("job_spec", job_template.get("spec", {}), f"{path}.spec")
                errors += self._pod_template(job_template.get("spec", {}).get("template", {}),
                                             f"{path}.spec.template")
        return errors

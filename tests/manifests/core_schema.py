"""Core API objects (NetworkPolicy, and the pod templates and Job templates inside the custom
resources) against the Kubernetes OpenAPI schemas of the target version, from kubernetes-validate
(pinned in pyproject.toml; its "-strict" schemas refuse unknown fields). A pod template is checked
as a v1 PodTemplate, a JobSet's Job template as a batch/v1 Job: the schema of that version knows
exactly the fields that version serves (restartPolicyRules from 1.34 on, for one)."""

import functools
import re

import jsonschema
import kubernetes_validate
from kubernetes_validate import utils
from referencing import Registry, Resource

SOURCE = f"kubernetes-validate {kubernetes_validate.version.__version__} (PyPI), " \
         "kubernetes-json-schema/vX.Y.0-local-strict"


@functools.lru_cache(maxsize=None)
def _validator(version, kind, api_version):
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    directory = f"kubernetes-json-schema/v{version[0]}.{version[1]}.0-local-strict"
    schema = utils.schema_contents(f"{directory}/{kind.lower()}-{group}.json", str(version))
    definitions = utils.schema_contents(f"{directory}/_definitions.json", str(version))
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


class CoreSchemaLayer:
    name = "core-schema"

    def __init__(self, target):
        self.target = target
        self.validations = 0

    def errors(self, obj, path):
        validator = _validator(self.target.version, obj["kind"], obj["apiVersion"])
        self.validations += 1
        return [f"{path}.{'.'.join(str(p) for p in e.absolute_path)}: {e.message[:300]} "
                f"[core-schema {self.target}]"
                for e in validator.iter_errors(obj)]

    def pod_template_errors(self, template, path):
        wrapped = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"},
                   "template": template}
        return [e.replace(f"{path}.template", path, 1) for e in self.errors(wrapped, path)]

    def job_template_errors(self, job_template, path):
        wrapped = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "t"},
                   "spec": job_template.get("spec", {})}
        return [e.replace(f"{path}.spec", f"{path}.spec", 1) for e in self.errors(wrapped, path)]

"""Layer 3 of the manifest checks: what the API server (and the schedulers' admission webhooks)
refuse in Go code, outside any schema, for the fields hetrun emits. Each rule names its source:
the Kubernetes validation code, the pull request that added it, or the webhook. Rules that depend
on the Kubernetes version or a feature gate take the target (k8s_version.Target).

RULES lists (id, scope, source, what); check(scope, value, target, path) runs the rules of a
scope and returns "PATH: what is wrong [rule id]" lines. The scopes: meta (every object's
metadata), pod_template, job_spec (a batch/v1 Job spec inside a JobSet), network_policy,
volcano_job, jobset.
"""

import re

CORE = "kubernetes/kubernetes pkg/apis/core/validation/validation.go"
BATCH = "kubernetes/kubernetes pkg/apis/batch/validation/validation.go"
NETWORKING = "kubernetes/kubernetes pkg/apis/networking/validation/validation.go"
META = ("kubernetes/apimachinery pkg/api/validation/objectmeta.go, "
        "pkg/apis/meta/v1/validation/validation.go, pkg/util/validation/validation.go")
RESTART_RULES = ("kubernetes/kubernetes PR #132642 (KEP-5307, validateContainerRestartPolicy in "
                 + CORE + "); KEP-5307: alpha 1.34, beta 1.35, GA 1.36")
RESTART_ALL = ("kubernetes/kubernetes PR #134345 (KEP-5532, gate "
               "RestartAllContainersOnContainerExits: alpha 1.35, beta 1.36), issue #137368")
NON_INIT_RESTART = CORE + " validateContainers: 'may not be set for non-init containers' (before "
NON_INIT_RESTART += "ContainerRestartRules)"
JOBSET_WEBHOOK = "kubernetes-sigs/jobset pkg/webhooks/jobset_webhook.go (ValidateCreate)"
VOLCANO_WEBHOOK = "volcano-sh/volcano pkg/webhooks/admission/jobs/validate/admit_job.go"

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
IANA_SVC_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
FIELD_PATHS = {"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
               "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP",
               "status.podIPs"}
SUBSCRIPTED = re.compile(r"^metadata\.(labels|annotations)\['([^']*)'\]$")
QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?\d+)?$")

RULES = []


def rule(rule_id, scope, source, what):
    """Registers a check function under its id, scope, source and description."""
    def register(function):
        RULES.append((rule_id, scope, source, what, function))
        return function
    return register


def check(scope, value, target, path):
    errors = []
    for rule_id, rule_scope, _source, _what, function in RULES:
        if rule_scope == scope:
            errors += [f"{where}: {message} [{rule_id}]"
                       for where, message in function(value, target, path)]
    return errors


def rules_applied(scope):
    return [rule_id for rule_id, rule_scope, *_ in RULES if rule_scope == scope]


# ---- metadata -------------------------------------------------------------------------------

def qualified_name_errors(key):
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        return "prefix must be a DNS-1123 subdomain"
    if not name or len(name) > 63 or not QUALIFIED_NAME.match(name):
        return "name part must be 1-63 alphanumerics, '-', '_' or '.', starting and ending " \
               "alphanumeric"
    return None


@rule("meta.name", "meta", META, "metadata.name is a DNS-1123 subdomain (at most 253)")
def _meta_name(meta, target, path):
    name = meta.get("name", "")
    if not name or len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
        yield f"{path}.name", f"'{name}' is not a DNS-1123 subdomain"


@rule("meta.namespace", "meta", META, "metadata.namespace is a DNS-1123 label (at most 63)")
def _meta_namespace(meta, target, path):
    namespace = meta.get("namespace")
    if namespace is not None and (len(namespace) > 63 or not DNS1123_LABEL.match(namespace)):
        yield f"{path}.namespace", f"'{namespace}' is not a DNS-1123 label"


@rule("meta.labels", "meta", META, "label keys are qualified names; values at most 63, "
      "alphanumerics, '-', '_', '.', starting and ending alphanumeric, or empty")
def _meta_labels(meta, target, path):
    for key, value in (meta.get("labels") or {}).items():
        problem = qualified_name_errors(key)
        if problem:
            yield f"{path}.labels[{key}]", problem
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
            yield f"{path}.labels[{key}]", f"value '{value}' is not a valid label value"


@rule("meta.annotations", "meta", META, "annotation keys are qualified names (lower-cased); "
      "all annotations together at most 256 KiB")
def _meta_annotations(meta, target, path):
    total = 0
    for key, value in (meta.get("annotations") or {}).items():
        problem = qualified_name_errors(key.lower())
        if problem:
            yield f"{path}.annotations[{key}]", problem
        if not isinstance(value, str):
            yield f"{path}.annotations[{key}]", "value must be a string"
            continue
        total += len(key) + len(value)
    if total > 256 * 1024:
        yield f"{path}.annotations", f"{total} bytes, more than 256 KiB"

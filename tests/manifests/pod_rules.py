"""The API server's Go-side rules on a pod template (server_rules.py's scope pod_template), for the
fields hetrun emits: the pod's restart policy and grace period, containers and their names,
images, variables, downward-API and secret references, ports, mounts, volumes, GPU limits, node
placement, and the container restart rules of KEP-5307/KEP-5532 by Kubernetes version."""

from server_rules import (CONFIG_KEY, CORE, DNS1123_LABEL, DNS1123_SUBDOMAIN, ENV_NAME,
                          FIELD_PATHS, IANA_SVC_NAME, LABEL_VALUE, NON_INIT_RESTART, QUANTITY,
                          RESTART_ALL, RESTART_RULES, SUBSCRIPTED, qualified_name_errors, rule)


def _containers(template, path):
    for index, container in enumerate(template.get("spec", {}).get("containers") or []):
        yield container, f"{path}.spec.containers[{index}]"


@rule("pod.restartPolicy", "pod_template", CORE + " validateRestartPolicy",
      "the pod's restartPolicy is Always, OnFailure or Never")
def _pod_restart_policy(template, target, path):
    policy = template.get("spec", {}).get("restartPolicy", "Always")
    if policy not in ("Always", "OnFailure", "Never"):
        yield f"{path}.spec.restartPolicy", f"unsupported value '{policy}'"


@rule("pod.terminationGracePeriodSeconds", "pod_template", CORE + " ValidatePodSpec",
      "terminationGracePeriodSeconds is not negative")
def _grace(template, target, path):
    grace = template.get("spec", {}).get("terminationGracePeriodSeconds")
    if grace is not None and grace < 0:
        yield f"{path}.spec.terminationGracePeriodSeconds", "must be >= 0"


@rule("pod.containers", "pod_template", CORE + " validateContainers, validateContainerCommon",
      "at least one container; names DNS-1123 labels, unique; an image")
def _container_names(template, target, path):
    containers = template.get("spec", {}).get("containers") or []
    if not containers:
        yield f"{path}.spec.containers", "required"
    seen = set()
    for container, where in _containers(template, path):
        name = container.get("name", "")
        if len(name) > 63 or not DNS1123_LABEL.match(name):
            yield f"{where}.name", f"'{name}' is not a DNS-1123 label"
        if name in seen:
            yield f"{where}.name", f"duplicate '{name}'"
        seen.add(name)
        if not container.get("image"):
            yield f"{where}.image", "required"


def _env_source_errors(source, where):
    kinds = [key for key in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef",
                             "fileKeyRef") if key in source]
    if len(kinds) != 1:
        yield where, f"exactly one source, got {kinds}"
    field_ref = source.get("fieldRef")
    if field_ref is not None:
        field_path = field_ref.get("fieldPath", "")
        subscripted = SUBSCRIPTED.match(field_path)
        if subscripted:
            problem = qualified_name_errors(subscripted.group(2).lower())
            if problem:
                yield f"{where}.fieldRef.fieldPath", f"key '{subscripted.group(2)}': {problem}"
        elif field_path not in FIELD_PATHS:
            yield f"{where}.fieldRef.fieldPath", f"unsupported field path '{field_path}'"
    secret = source.get("secretKeyRef")
    if secret is not None:
        if not secret.get("name") or not DNS1123_SUBDOMAIN.match(secret["name"]):
            yield f"{where}.secretKeyRef.name", "a DNS-1123 subdomain is required"
        key = secret.get("key", "")
        if not key or len(key) > 253 or not CONFIG_KEY.match(key):
            yield f"{where}.secretKeyRef.key", f"'{key}' is not a valid key"


@rule("container.env", "pod_template", CORE + " ValidateEnv, validateEnvVarValueFrom, "
      "validateDownwardAPIEnvFieldRef, validateSecretKeySelector",
      "variable names are C identifiers (or '-', '.'); value or valueFrom, not both; one "
      "source; downward-API paths the server knows, subscripts valid keys; secret refs named")
def _env(template, target, path):
    for container, where in _containers(template, path):
        for index, var in enumerate(container.get("env") or []):
            here = f"{where}.env[{index}]"
            if not ENV_NAME.match(var.get("name", "")):
                yield f"{here}.name", f"'{var.get('name')}' is not a valid variable name"
            if "valueFrom" in var:
                if var.get("value"):
                    yield here, "value and valueFrom are exclusive"
                yield from _env_source_errors(var["valueFrom"], f"{here}.valueFrom")


@rule("container.ports", "pod_template", CORE + " validateContainerPorts",
      "containerPort 1-65535; protocol TCP, UDP or SCTP; names IANA service names (at most 15, "
      "lower-case alphanumerics and '-', a letter, no '--'), unique in the container")
def _ports(template, target, path):
    for container, where in _containers(template, path):
        names = set()
        for index, port in enumerate(container.get("ports") or []):
            here = f"{where}.ports[{index}]"
            if not 1 <= int(port.get("containerPort", 0)) <= 65535:
                yield f"{here}.containerPort", "must be 1-65535"
            if port.get("protocol", "TCP") not in ("TCP", "UDP", "SCTP"):
                yield f"{here}.protocol", f"unsupported value '{port['protocol']}'"
            name = port.get("name")
            if name is not None:
                if (len(name) > 15 or not IANA_SVC_NAME.match(name) or "--" in name
                        or not any(c.isalpha() for c in name)):
                    yield f"{here}.name", f"'{name}' is not an IANA service name"
                if name in names:
                    yield f"{here}.name", f"duplicate '{name}'"
                names.add(name)


@rule("pod.volumes", "pod_template", CORE + " ValidateVolumes, ValidateVolumeMounts",
      "volume names DNS-1123 labels, unique, one source; emptyDir medium '', Memory or "
      "HugePages; every mount names a volume, has a path, paths unique")
def _volumes(template, target, path):
    spec = template.get("spec", {})
    names = set()
    for index, volume in enumerate(spec.get("volumes") or []):
        here = f"{path}.spec.volumes[{index}]"
        name = volume.get("name", "")
        if not DNS1123_LABEL.match(name) or len(name) > 63 or name in names:
            yield f"{here}.name", f"'{name}' is not a unique DNS-1123 label"
        names.add(name)
        if len([key for key in volume if key != "name"]) != 1:
            yield here, "exactly one volume source"
        medium = (volume.get("emptyDir") or {}).get("medium", "")
        if "emptyDir" in volume and not (medium in ("", "Memory") or medium.startswith("HugePages")):
            yield f"{here}.emptyDir.medium", f"unsupported value '{medium}'"
    for container, where in _containers(template, path):
        paths = set()
        for index, mount in enumerate(container.get("volumeMounts") or []):
            if mount.get("name") not in names:
                yield f"{where}.volumeMounts[{index}].name", f"volume '{mount.get('name')}' not found"
            mount_path = mount.get("mountPath", "")
            if not mount_path or mount_path in paths:
                yield f"{where}.volumeMounts[{index}].mountPath", "required and unique"
            paths.add(mount_path)


@rule("container.resources", "pod_template", CORE + " ValidateContainerResourceRequirements, "
      "validateResourceName, ValidateResourceQuantityValue",
      "limits are quantities; an extended resource (nvidia.com/gpu) is an integer, and its "
      "request, when given, equals its limit")
def _resources(template, target, path):
    for container, where in _containers(template, path):
        resources = container.get("resources") or {}
        limits = resources.get("limits") or {}
        requests = resources.get("requests") or {}
        for name, value in {**limits, **requests}.items():
            if not QUANTITY.match(str(value)):
                yield f"{where}.resources[{name}]", f"'{value}' is not a quantity"
            elif "/" in name and not name.startswith("kubernetes.io/") and not str(
                    value).isdigit():
                yield f"{where}.resources[{name}]", f"extended resource must be an integer"
        for name, value in requests.items():
            if "/" in name and name in limits and str(limits[name]) != str(value):
                yield f"{where}.resources.requests[{name}]", "must equal the limit (extended)"


@rule("pod.placement", "pod_template", CORE + " ValidatePodSpec (nodeSelector: ValidateLabels), "
      "validateNodeSelectorRequirement",
      "nodeSelector entries are labels; required node affinity has terms, In/NotIn with values, "
      "keys qualified names")
def _placement(template, target, path):
    spec = template.get("spec", {})
    for key, value in (spec.get("nodeSelector") or {}).items():
        problem = qualified_name_errors(key)
        if problem or len(str(value)) > 63 or not LABEL_VALUE.match(str(value)):
            yield f"{path}.spec.nodeSelector[{key}]", problem or f"value '{value}' invalid"
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        terms = required.get("nodeSelectorTerms") or []
        if not terms:
            yield f"{path}.spec.affinity", "nodeSelectorTerms required"
        for t, term in enumerate(terms):
            for e, expression in enumerate(term.get("matchExpressions") or []):
                here = f"{path}.spec.affinity.nodeSelectorTerms[{t}].matchExpressions[{e}]"
                operator = expression.get("operator")
                if operator in ("In", "NotIn") and not expression.get("values"):
                    yield here, f"{operator} needs values"
                if operator not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
                    yield here, f"unsupported operator '{operator}'"
                problem = qualified_name_errors(expression.get("key", ""))
                if problem:
                    yield f"{here}.key", problem


@rule("container.restartPolicy", "pod_template", NON_INIT_RESTART + "; " + RESTART_RULES,
      "a regular container's restartPolicy: refused before ContainerRestartRules (on by default "
      "from 1.35, gate from 1.34); then Always, OnFailure or Never")
def _container_restart_policy(template, target, path):
    for container, where in _containers(template, path):
        policy = container.get("restartPolicy")
        if policy is None:
            continue
        if not target.enabled("ContainerRestartRules"):
            yield f"{where}.restartPolicy", f"may not be set for non-init containers on {target}"
        elif policy not in ("Always", "OnFailure", "Never"):
            yield f"{where}.restartPolicy", f"unsupported value '{policy}'"


@rule("container.restartPolicyRules", "pod_template", RESTART_RULES + "; " + RESTART_ALL,
      "rules only where ContainerRestartRules is on, and only with the container's restartPolicy "
      "set; at most 20; action Restart, or RestartAllContainers where "
      "RestartAllContainersOnContainerExits is on; exitCodes required, operator In or NotIn, at "
      "most 255 values")
def _restart_rules(template, target, path):
    for container, where in _containers(template, path):
        rules = container.get("restartPolicyRules")
        if not rules:
            continue
        here = f"{where}.restartPolicyRules"
        if not target.enabled("ContainerRestartRules"):
            yield here, f"not accepted on {target} (ContainerRestartRules off)"
            continue
        if container.get("restartPolicy") is None:
            yield f"{where}.restartPolicy", "must be set when restartPolicyRules are"
        if len(rules) > 20:
            yield here, f"{len(rules)} rules, at most 20"
        actions = ["Restart"]
        if target.enabled("RestartAllContainersOnContainerExits"):
            actions.append("RestartAllContainers")
        for index, entry in enumerate(rules):
            if entry.get("action") not in actions:
                yield f"{here}[{index}].action", f"'{entry.get('action')}' is not one of " \
                                                 f"{actions} on {target}"
            codes = entry.get("exitCodes")
            if codes is None:
                yield f"{here}[{index}].exitCodes", "must be specified"
                continue
            if codes.get("operator") not in ("In", "NotIn"):
                yield f"{here}[{index}].exitCodes.operator", "must be In or NotIn"
            if len(codes.get("values") or []) > 255:
                yield f"{here}[{index}].exitCodes.values", "at most 255 values"

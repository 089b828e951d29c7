"""The Go-side rules on the workloads around hetrun's pod templates (server_rules.py's scopes
job_spec, network_policy, volcano_job and jobset): Kubernetes' Job and NetworkPolicy validation,
and the Volcano and JobSet admission webhooks, for the fields hetrun emits."""

from server_rules import (BATCH, DNS1035_LABEL, DNS1123_LABEL, IANA_SVC_NAME, JOBSET_WEBHOOK,
                          NETWORKING, VOLCANO_WEBHOOK, rule)


@rule("job.restartPolicy", "job_spec", BATCH + " validateJobSpec",
      "a Job's pod template restarts OnFailure or Never; Never when podFailurePolicy is set")
def _job_restart(spec, target, path):
    policy = spec.get("template", {}).get("spec", {}).get("restartPolicy")
    if policy not in ("OnFailure", "Never"):
        yield f"{path}.template.spec.restartPolicy", f"'{policy}': OnFailure or Never"
    if spec.get("podFailurePolicy") and policy != "Never":
        yield f"{path}.template.spec.restartPolicy", "must be Never with podFailurePolicy"


@rule("job.counts", "job_spec", BATCH + " validateJobSpec",
      "parallelism, completions and backoffLimit not negative; Indexed needs completions")
def _job_counts(spec, target, path):
    for key in ("parallelism", "completions", "backoffLimit"):
        if spec.get(key, 0) < 0:
            yield f"{path}.{key}", "must be >= 0"
    if spec.get("completionMode") == "Indexed" and spec.get("completions") is None:
        yield f"{path}.completions", "required with completionMode Indexed"


@rule("job.podReplacementPolicy", "job_spec", BATCH + " validateJobSpec (podReplacementPolicy)",
      "podReplacementPolicy Failed or TerminatingOrFailed; Failed with podFailurePolicy")
def _job_replacement(spec, target, path):
    policy = spec.get("podReplacementPolicy")
    if policy is None:
        return
    if policy not in ("Failed", "TerminatingOrFailed"):
        yield f"{path}.podReplacementPolicy", f"unsupported value '{policy}'"
    elif spec.get("podFailurePolicy") and policy != "Failed":
        yield f"{path}.podReplacementPolicy", "must be Failed with podFailurePolicy"


def _exit_code_errors(codes, containers, here):
    values = codes.get("values") or []
    if codes.get("operator") not in ("In", "NotIn"):
        yield f"{here}.operator", "In or NotIn"
    if not 1 <= len(values) <= 255:
        yield f"{here}.values", "1 to 255 values"
    if values != sorted(set(values)):
        yield f"{here}.values", "must be ascending and unique"
    if codes.get("operator") == "In" and 0 in values:
        yield f"{here}.values", "0 with In"
    if "containerName" in codes and codes["containerName"] not in containers:
        yield f"{here}.containerName", f"'{codes['containerName']}' is no container"


@rule("job.podFailurePolicy", "job_spec", BATCH + " validatePodFailurePolicy, "
      "validatePodFailurePolicyRuleOnExitCodes",
      "at most 20 rules; action FailJob, FailIndex (with backoffLimitPerIndex), Ignore or "
      "Count; one of onExitCodes and onPodConditions; exit codes In/NotIn, 1-255 values, "
      "ascending, unique, no 0 with In, containerName a container; conditions with a status")
def _pod_failure_policy(spec, target, path):
    rules = (spec.get("podFailurePolicy") or {}).get("rules") or []
    containers = {c.get("name") for c in spec.get("template", {}).get("spec", {}).get(
        "containers") or []}
    if len(rules) > 20:
        yield f"{path}.podFailurePolicy.rules", "at most 20"
    for index, entry in enumerate(rules):
        here = f"{path}.podFailurePolicy.rules[{index}]"
        actions = ["FailJob", "Ignore", "Count"]
        if spec.get("backoffLimitPerIndex") is not None:
            actions.append("FailIndex")
        if entry.get("action") not in actions:
            yield f"{here}.action", f"'{entry.get('action')}' is not one of {actions}"
        if ("onExitCodes" in entry) == ("onPodConditions" in entry):
            yield here, "exactly one of onExitCodes and onPodConditions"
        if "onExitCodes" in entry:
            yield from _exit_code_errors(entry["onExitCodes"], containers, f"{here}.onExitCodes")
        for c, condition in enumerate(entry.get("onPodConditions") or []):
            if not condition.get("type") or condition.get("status") not in (
                    "True", "False", "Unknown"):
                yield f"{here}.onPodConditions[{c}]", "a type and a status True/False/Unknown"


@rule("networkpolicy.spec", "network_policy", NETWORKING + " ValidateNetworkPolicySpec, "
      "ValidateNetworkPolicyPort, ValidateNetworkPolicyPeer",
      "policyTypes Ingress/Egress; ports TCP/UDP/SCTP, 1-65535 or a service name; each peer one "
      "of podSelector/namespaceSelector (together allowed) or ipBlock")
def _network_policy(spec, target, path):
    for index, kind in enumerate(spec.get("policyTypes") or []):
        if kind not in ("Ingress", "Egress"):
            yield f"{path}.policyTypes[{index}]", f"unsupported value '{kind}'"
    for r, entry in enumerate(spec.get("ingress") or []):
        for p, port in enumerate(entry.get("ports") or []):
            here = f"{path}.ingress[{r}].ports[{p}]"
            if port.get("protocol", "TCP") not in ("TCP", "UDP", "SCTP"):
                yield f"{here}.protocol", "TCP, UDP or SCTP"
            value = port.get("port")
            if isinstance(value, int) and not 1 <= value <= 65535:
                yield f"{here}.port", "1-65535"
            if isinstance(value, str) and not IANA_SVC_NAME.match(value):
                yield f"{here}.port", "not a service name"
        for f, peer in enumerate(entry.get("from") or []):
            selectors = [key for key in ("podSelector", "namespaceSelector") if key in peer]
            if not selectors and "ipBlock" not in peer:
                yield f"{path}.ingress[{r}].from[{f}]", "must specify a peer"
            if selectors and "ipBlock" in peer:
                yield f"{path}.ingress[{r}].from[{f}]", "ipBlock excludes selectors"


@rule("volcano.job", "volcano_job", VOLCANO_WEBHOOK + " (validateJobCreate, validatePolicies)",
      "task names unique DNS-1123 labels; minAvailable 0..total replicas; maxRetry >= 0; each "
      "policy an event or a non-zero exit code, not both, none twice")
def _volcano_job(spec, target, path):
    tasks = spec.get("tasks") or []
    names = [task.get("name", "") for task in tasks]
    for index, name in enumerate(names):
        if not DNS1123_LABEL.match(name) or names.count(name) > 1:
            yield f"{path}.tasks[{index}].name", f"'{name}' is not a unique DNS-1123 label"
    total = sum(task.get("replicas", 0) for task in tasks)
    if not 0 <= spec.get("minAvailable", 0) <= total:
        yield f"{path}.minAvailable", f"must be 0..{total}"
    if spec.get("maxRetry", 0) < 0:
        yield f"{path}.maxRetry", "must be >= 0"
    seen = set()
    for index, policy in enumerate(spec.get("policies") or []):
        here = f"{path}.policies[{index}]"
        has_event = "event" in policy or "events" in policy
        if has_event == ("exitCode" in policy):
            yield here, "one of event(s) and exitCode"
        if policy.get("exitCode") == 0:
            yield f"{here}.exitCode", "0 is not a valid error code"
        key = policy.get("exitCode", policy.get("event"))
        if key in seen:
            yield here, f"duplicate {key}"
        seen.add(key)


@rule("jobset.names", "jobset", JOBSET_WEBHOOK,
      "replicated job names DNS-1035 labels; every Job name <jobset>-<job>-<index> and (Indexed) "
      "pod name <jobset>-<job>-<index>-<pod>-abcde a DNS-1035 label (at most 63)")
def _jobset_names(jobset, target, path):
    name = jobset.get("metadata", {}).get("name", "")
    for index, job in enumerate(jobset.get("spec", {}).get("replicatedJobs") or []):
        here = f"{path}.spec.replicatedJobs[{index}]"
        job_name = f"{name}-{job.get('name')}-{job.get('replicas', 1) - 1}"
        if len(job_name) > 63 or not DNS1035_LABEL.match(job_name):
            yield f"{here}.name", f"Job name '{job_name}' is not a DNS-1035 label"
        spec = job.get("template", {}).get("spec", {})
        if spec.get("completionMode") == "Indexed" and spec.get("completions") is not None:
            pod = f"{job_name}-{spec['completions'] - 1}-abcde"
            if len(pod) > 63 or not DNS1035_LABEL.match(pod):
                yield f"{here}.name", f"pod name '{pod}' is not a DNS-1035 label"

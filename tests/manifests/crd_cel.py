"""Layer 2 of the manifest checks: a custom resource against its CRD's CEL rules
(x-kubernetes-validations), evaluated with cel-python the way the API server evaluates them
(apiextensions-apiserver, "Validation rules"): each rule at the schema node that carries it, with
`self` bound to the value there (after defaulting), for every value the node applies to (each
item of a list, each value of a map); a node whose value is absent runs no rule.

A rule that refers to `oldSelf` is a transition rule: the server runs it only on update. It is
evaluated here as an update that changes nothing (oldSelf = self), which a re-applied manifest is.
A rule cel-python cannot compile or evaluate (a Kubernetes CEL library function it lacks, say) is
never passed silently: it is recorded in `unevaluable` and the caller lists it.
"""

import re
from dataclasses import dataclass, field

import celpy

from crd_schema import apply_defaults

_OLD_SELF = re.compile(r"\boldSelf\b")


@dataclass
class CelRule:
    crd: str       # the CRD file's name
    version: str   # the CRD version
    path: str      # the schema path of the node that carries the rule
    rule: str
    message: str
    transition: bool  # refers to oldSelf: evaluated by the server on update only


@dataclass
class CelStats:
    """What the CEL layer did over every object it saw."""

    rules: dict = field(default_factory=dict)        # rule key -> CelRule, every rule seen
    evaluations: int = 0                             # rule evaluations that returned a bool
    evaluated_rules: set = field(default_factory=set)
    unevaluable: dict = field(default_factory=dict)  # rule key -> the reason


def collect_rules(schema, crd_name, version, path="openAPIV3Schema"):
    """Every x-kubernetes-validations rule of a schema with the path of its node."""
    rules = []
    for entry in schema.get("x-kubernetes-validations") or []:
        rules.append(CelRule(crd_name, version, path, entry["rule"], entry.get("message", ""),
                             bool(_OLD_SELF.search(entry["rule"]))
                             and not entry.get("optionalOldSelf")))
    for name, sub in (schema.get("properties") or {}).items():
        rules += collect_rules(sub, crd_name, version, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        rules += collect_rules(schema["items"], crd_name, version, f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        rules += collect_rules(schema["additionalProperties"], crd_name, version, f"{path}{{}}")
    return rules


class CelLayer:
    """Evaluates one CRD version's CEL rules on objects; errors as "PATH: message (rule)"."""

    name = "crd-cel"

    def __init__(self, crd_version, stats):
        self.crd = crd_version
        self.stats = stats
        self.env = celpy.Environment()
        self.programs = {}
        for rule in collect_rules(crd_version.schema, crd_version.path.name, crd_version.version):
            key = (rule.crd, rule.version, rule.path, rule.rule)
            stats.rules[key] = rule
            try:
                self.programs[key] = self.env.program(self.env.compile(rule.rule))
            except Exception as error:  # cel-python's parser raises several types
                stats.unevaluable[key] = f"cel-python cannot compile it: {error}"[:300]

    def errors(self, obj):
        obj = apply_defaults(obj, self.crd.schema)
        out = []
        self._walk(self.crd.schema, obj, "openAPIV3Schema", "", out)
        return out

    def _walk(self, schema, value, schema_path, value_path, out):
        for entry in schema.get("x-kubernetes-validations") or []:
            self._evaluate(entry, schema_path, value, value_path, out)
        if isinstance(value, dict):
            for name, sub in (schema.get("properties") or {}).items():
                if name in value:
                    self._walk(sub, value[name], f"{schema_path}.{name}",
                               f"{value_path}.{name}", out)
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                for name, item in value.items():
                    self._walk(extra, item, f"{schema_path}{{}}", f"{value_path}[{name}]", out)
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            for index, item in enumerate(value):
                self._walk(schema["items"], item, f"{schema_path}[]", f"{value_path}[{index}]",
                           out)

    def _evaluate(self, entry, schema_path, value, value_path, out):
        key = (self.crd.path.name, self.crd.version, schema_path, entry["rule"])
        program = self.programs.get(key)
        if program is None:
            return  # listed in stats.unevaluable
        activation = {"self": celpy.json_to_cel(value)}
        if _OLD_SELF.search(entry["rule"]):
            activation["oldSelf"] = celpy.json_to_cel(value)
        try:
            result = program.evaluate(activation)
        except Exception as error:
            self.stats.unevaluable[key] = f"cel-python cannot evaluate it: {error}"[:300]
            return
        if not isinstance(result, celpy.celtypes.BoolType):
            self.stats.unevaluable[key] = f"cel-python returned {type(result).__name__}"
            return
        self.stats.evaluations += 1
        self.stats.evaluated_rules.add(key)
        if not bool(result):
            where = value_path.lstrip(".") or "<root>"
            message = entry.get("message") or entry.get("messageExpression") or "rule failed"
            out.append(f"{where}: {message} (rule: {entry['rule']}) [crd-cel]")

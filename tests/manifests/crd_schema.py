"""Layer 1 of the manifest checks: a custom resource against its CRD's OpenAPI v3 schema.

The CRD's structural schema is turned into a JSON Schema that jsonschema checks the way the API
server prunes and validates (apiextensions-apiserver): a field the schema does not declare is
refused (the server would drop it silently), x-kubernetes-int-or-string takes an integer or a
string, x-kubernetes-preserve-unknown-fields keeps anything, nullable admits null. Defaults
(`default:`) are applied before validation, as the server does, so the CEL rules of layer 2 see
the object the server stores.
"""

import copy
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import yaml


@dataclass
class CrdVersion:
    """One served version of a CRD: group, kind, version and its OpenAPI v3 schema."""

    path: Path
    group: str
    kind: str
    version: str
    storage: bool
    schema: dict

    @property
    def api_version(self):
        return f"{self.group}/{self.version}"


def load_crd(path):
    """Every served version of the CRD in `path`."""
    crd = yaml.load(Path(path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    spec = crd["spec"]
    return [
        CrdVersion(Path(path), spec["group"], spec["names"]["kind"], v["name"],
                   bool(v.get("storage")), v["schema"]["openAPIV3Schema"])
        for v in spec["versions"] if v.get("served", True)
    ]


def _to_json_schema(node):
    """The JSON Schema equivalent of one structural-schema node (recursively)."""
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in ("properties", "patternProperties"):
            out[key] = {name: _to_json_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = _to_json_schema(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [_to_json_schema(sub) for sub in value]
        elif key.startswith("x-kubernetes-") or key in ("default", "description", "example",
                                                      "nullable", "format"):
            continue
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if out.get("type") == "object" and "additionalProperties" not in out and not node.get(
            "x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    return out


def apply_defaults(value, schema):
    """`value` with the schema's defaults filled in where a field is absent (a copy)."""
    value = copy.deepcopy(value)
    _default_in_place(value, schema)
    return value


def _default_in_place(value, schema):
    if isinstance(value, dict):
        for name, sub in (schema.get("properties") or {}).items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                _default_in_place(value[name], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for name in value:
                if name not in (schema.get("properties") or {}):
                    _default_in_place(value[name], extra)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default_in_place(item, schema["items"])


class SchemaLayer:
    """Checks objects against one CRD version's schema; errors as "PATH: message"."""

    name = "crd-schema"

    def __init__(self, crd_version):
        self.crd = crd_version
        schema = _to_json_schema(crd_version.schema)
        # The server owns apiVersion, kind and metadata's own schema (ObjectMeta).
        schema.setdefault("properties", {})["metadata"] = {"type": "object"}
        self.validator = jsonschema.Draft7Validator(schema)

    def errors(self, obj):
        out = []
        for error in sorted(self.validator.iter_errors(obj), key=lambda e: list(e.path)):
            where = ".".join(str(p) for p in error.absolute_path) or "<root>"
            out.append(f"{where}: {error.message[:300]} [crd-schema]")
        return out

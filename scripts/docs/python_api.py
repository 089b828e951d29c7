"""Markdown reference of a Python module of the hetrun package, from the imported, built package.

    python scripts/docs/python_api.py hetrun.pipeline

The compiled part (hetrun._core, pybind11) has no Python source, so static analysis cannot see its
docstrings; this reads them from the live objects: the module's docstring, then every name in its
__all__ (classes with their methods and properties, functions), in __all__'s order. pybind11 puts
a function's signature on the first line of its docstring; a Python function's comes from
inspect.signature. Output is deterministic (no addresses), so docs/reference/ can be checked
against it (scripts/docs/reference.py).
"""

import importlib
import inspect
import re
import sys

ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def clean(text):
    return ADDRESS.sub("", inspect.cleandoc(text or "")).strip()


def native_signature(name, obj):
    """pybind11's 'name(args) -> ret' first docstring line(s), and the rest of the docstring."""
    doc = clean(getattr(obj, "__doc__", ""))
    lines = doc.split("\n")
    sigs = []
    while lines and re.match(r"^(\d+\. )?" + re.escape(name) + r"\(", lines[0]):
        sigs.append(re.sub(r"^\d+\. ", "", lines.pop(0)))
        while lines and not lines[0].strip():
            lines.pop(0)
    if lines and lines[0].strip() == "Overloaded function.":
        lines.pop(0)
        rest = "\n".join(lines)
        found = re.findall(r"^\d+\. (" + re.escape(name) + r"\(.*)$", rest, re.M)
        body = re.sub(r"^\d+\. " + re.escape(name) + r"\(.*$", "", rest, flags=re.M)
        return found, clean(body)
    return sigs, "\n".join(lines).strip()


def signature(name, obj):
    try:
        return [name + str(inspect.signature(obj))], clean(obj.__doc__)
    except (TypeError, ValueError):
        return native_signature(name, obj)


def strip_self(sig):
    return re.sub(r"\(self(: [^,)]*)?(, )?", "(", sig, count=1)


def render_callable(out, name, obj, level, method=False, owner=""):
    sigs, body = signature(name, obj)
    if method:
        sigs = [strip_self(s) for s in sigs]
    shown = f"{owner}.{name}" if owner else name
    out.append("#" * level + f" `{shown}`\n")
    if sigs:
        out.append("```python\n" + "\n".join(sigs) + "\n```\n")
    if body or name != "__init__":  # a class's docstring describes its constructor
        out.append((body or "(no docstring)") + "\n")


def members(cls):
    own = []
    for name, value in cls.__dict__.items():
        if name.startswith("_") and name != "__init__":
            continue
        own.append((name, value))
    return sorted(own, key=lambda item: (item[0] != "__init__", item[0]))


def render_class(out, qualname, cls):
    out.append(f"## `{qualname}`\n")
    doc = clean(cls.__doc__)
    if doc:
        out.append(doc + "\n")
    for name, value in members(cls):
        if isinstance(value, property) or type(value).__name__ == "property":
            pdoc = clean(value.__doc__)
            out.append(f"### `{qualname}.{name}` (property)\n")
            out.append((pdoc or "(no docstring)") + "\n")
        elif isinstance(value, (staticmethod, classmethod)):
            render_callable(out, name, getattr(cls, name), 3, owner=qualname)
        elif callable(value):
            render_callable(out, name, value, 3, method=True, owner=qualname)
        elif not inspect.isclass(value):
            out.append(f"### `{qualname}.{name}`\n")
            out.append(f"Value: `{value!r}`\n")


def render(module_name):
    module = importlib.import_module(module_name)
    out = [f"Module `{module_name}`.\n", clean(module.__doc__) + "\n"]
    for name in getattr(module, "__all__", []):
        if name.startswith("__"):
            continue
        value = getattr(module, name)
        if inspect.ismodule(value):
            out.append(f"## `{name}`\n\nSubmodule `{value.__name__}`.\n")
        elif inspect.isclass(value):
            render_class(out, name, value)
        elif callable(value):
            render_callable(out, name, value, 2)
        else:
            out.append(f"## `{name}`\n\nValue: `{value!r}`\n")
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python_api.py MODULE")
    sys.stdout.write(render(sys.argv[1]))

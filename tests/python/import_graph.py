"""The import graph of a Python package read from its source with `ast`, and its cycles.

An edge A -> B is an import statement in module A, at module level or inside a function or class,
that loads module B of the same package: `import pkg.b`, `from pkg import b` (b a submodule),
`from pkg.b import x`, the relative forms (`from . import b`, `from .b import x`, `from .. import
b`) and importlib.import_module("pkg.b"). `from pkg import x` where x is no submodule is an edge
to pkg (its __init__). The parent packages Python initialises on the way (pkg for pkg.b) are no
edges: a partly initialised package is in sys.modules and serves its submodules, so only the
explicit targets can deadlock an import. Compiled modules (no .py source) are named by `native`.

    python tests/python/import_graph.py python/hetrun     # prints the graph, then any cycle
"""

from __future__ import annotations

import ast
import pathlib
import sys
from typing import Dict, Iterable, List, Optional

Graph = Dict[str, Dict[str, str]]  # module -> {imported module: "file:line" of the first import}


def module_names(package_dir: pathlib.Path) -> Dict[str, pathlib.Path]:
    """Every .py below package_dir by its dotted name (pkg/sub/__init__.py: pkg.sub)."""
    top = package_dir.name
    names = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join([top] + parts)] = path
    return names


def _import_module_target(node: ast.Call) -> Optional[str]:
    """The literal name of importlib.import_module("...") / import_module("..."), else None."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if called != "import_module" or not node.args:
        return None
    first = node.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


class _Resolver:
    def __init__(self, modules: Iterable[str]) -> None:
        self.modules = set(modules)

    def module(self, dotted: str) -> Optional[str]:
        """The longest prefix of dotted that is a module of the package (None: outside it)."""
        parts = dotted.split(".")
        for n in range(len(parts), 0, -1):
            name = ".".join(parts[:n])
            if name in self.modules:
                return name
        return None

    def base_of(self, importer: str, is_package: bool, node: ast.ImportFrom) -> Optional[str]:
        """The module a `from X import ...` reads from, relative levels resolved."""
        if node.level == 0:
            return node.module
        package = importer.split(".") if is_package else importer.split(".")[:-1]
        if node.level - 1 > len(package) - 1:
            return None  # beyond the top package: not ours
        package = package[:len(package) - (node.level - 1)]
        return ".".join(package + ([node.module] if node.module else []))

    def targets(self, importer: str, is_package: bool, node: ast.AST) -> List[str]:
        if isinstance(node, ast.Import):
            return [t for t in (self.module(a.name) for a in node.names) if t]
        if isinstance(node, ast.Call):
            name = _import_module_target(node)
            target = self.module(name) if name else None
            return [target] if target else []
        base = self.base_of(importer, is_package, node)
        base_module = self.module(base) if base else None
        if base_module is None:
            return []
        found = []
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            found.append(sub if base_module == base and sub in self.modules else base_module)
        return found


def build_graph(package_dir: pathlib.Path, native: Iterable[str] = ()) -> Graph:
    """The package's import graph (see the module docstring); native: dotted names of compiled
    submodules (no source: nodes without edges)."""
    package_dir = pathlib.Path(package_dir)
    paths = module_names(package_dir)
    resolver = _Resolver(list(paths) + list(native))
    graph: Graph = {name: {} for name in list(paths) + list(native)}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom, ast.Call)):
                continue
            for target in resolver.targets(name, is_package, node):
                if target != name:
                    graph[name].setdefault(target, f"{path}:{node.lineno}")
    return graph


def find_cycles(graph: Graph) -> List[List[str]]:
    """One cycle per back edge a depth-first walk (in sorted order) meets, each written from its
    first module back to it: [a, b, a]. Empty when the graph has none."""
    state: Dict[str, int] = {}  # 1: on the current path, 2: done
    path: List[str] = []
    cycles: List[List[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, {})):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


def describe(graph: Graph, cycle: List[str]) -> str:
    """a -> b -> a, each edge with the file and line of its import."""
    hops = [f"{a} -> {b} ({graph[a][b]})" for a, b in zip(cycle, cycle[1:])]
    return "; ".join(hops)


def main(argv: List[str]) -> int:
    package_dir = pathlib.Path(argv[1] if len(argv) > 1 else "python/hetrun")
    graph = build_graph(package_dir, native=[f"{package_dir.name}._core"])
    for module in sorted(graph):
        print(f"{module} -> {', '.join(sorted(graph[module])) or '(nothing)'}")
    cycles = find_cycles(graph)
    for cycle in cycles:
        print("cycle:", describe(graph, cycle))
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

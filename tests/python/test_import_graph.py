"""No import cycle in the hetrun package (docs/ARCHITECTURE.md §5.8): its import graph, read from
the source (tests/python/import_graph.py: module-level and function-level imports, absolute and
relative), has none; and the reader finds one on a small package that has one, however the import
is spelled."""

import pathlib
import textwrap

import pytest

from import_graph import build_graph, describe, find_cycles

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "hetrun"


def write_package(root: pathlib.Path, files: dict) -> pathlib.Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root / "pkg"


def test_the_hetrun_package_has_no_import_cycle():
    graph = build_graph(PACKAGE, native=["hetrun._core"])
    cycles = find_cycles(graph)
    assert not cycles, "import cycles in python/hetrun:\n" + "\n".join(
        describe(graph, c) for c in cycles)


def test_the_engines_import_the_interface_and_not_one_another():
    graph = build_graph(PACKAGE, native=["hetrun._core"])
    engines = [m for m in graph if m.startswith("hetrun.engines.") and m != "hetrun.engines.base"]
    assert {"hetrun.engines.ddp", "hetrun.engines.fsdp", "hetrun.engines.plain"} <= set(engines)
    for engine in engines:
        assert "hetrun.engines.base" in graph[engine], engine
        assert not [m for m in graph[engine] if m.startswith("hetrun.engines.")
                    and m != "hetrun.engines.base"], (engine, graph[engine])
    assert not [m for m in graph["hetrun.engines.base"] if m.startswith("hetrun.engines")]
    assert set(engines) <= set(graph["hetrun._tuner"])  # the tuner chooses


@pytest.mark.parametrize("spelling", [
    "from . import a",
    "from .a import A",
    "import pkg.a",
    "import pkg.a as alias",
    "from pkg import a",
    "from pkg.a import A",
    "importlib.import_module('pkg.a')",
])
def test_a_cycle_through_a_function_level_import_is_found(tmp_path, spelling):
    package = write_package(tmp_path, {
        "__init__.py": "",
        "a.py": "from pkg.b import helper\n\nA = 1\n",
        "b.py": f"""\
            import importlib


            def helper():
                {spelling}
            """,
    })
    graph = build_graph(package)
    assert find_cycles(graph) == [["pkg.a", "pkg.b", "pkg.a"]]
    assert describe(graph, ["pkg.a", "pkg.b", "pkg.a"]).endswith("b.py:5)")


def test_a_relative_import_from_a_subpackage_reaches_the_parent(tmp_path):
    package = write_package(tmp_path, {
        "__init__.py": "",
        "top.py": "from pkg.sub.leaf import f\n",
        "sub/__init__.py": "",
        "sub/leaf.py": "def f():\n    class C:\n        from .. import top\n",
    })
    assert find_cycles(build_graph(package)) == [["pkg.sub.leaf", "pkg.top", "pkg.sub.leaf"]]


def test_a_name_that_is_no_submodule_is_an_import_of_the_package(tmp_path):
    package = write_package(tmp_path, {
        "__init__.py": "from pkg.a import A\nVALUE = 1\n",
        "a.py": "def g():\n    from pkg import VALUE, _native\nA = 1\n",
    })
    graph = build_graph(package, native=["pkg._native"])
    assert set(graph["pkg.a"]) == {"pkg", "pkg._native"}  # VALUE: pkg's __init__
    assert find_cycles(graph) == [["pkg", "pkg.a", "pkg"]]


def test_an_acyclic_package_with_a_chooser_has_no_cycle(tmp_path):
    # The engines' layout: each engine imports the interface only; the chooser imports them all.
    package = write_package(tmp_path, {
        "__init__.py": "",
        "base.py": "class Engine:\n    pass\n",
        "one.py": "from pkg.base import Engine\n",
        "two.py": "from .base import Engine\n",
        "choose.py": "def pick():\n    from pkg import one, two\n    from . import base\n",
        "outside.py": "import os\nfrom os import path\nimport torch.nn\n",
    })
    graph = build_graph(package)
    assert find_cycles(graph) == []
    assert set(graph["pkg.choose"]) == {"pkg.one", "pkg.two", "pkg.base"}
    assert graph["pkg.outside"] == {}

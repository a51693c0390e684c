"""DESIGN.md's layering: no layer imports from a layer above it, every package has a layer, and no
module imports itself back through others (an import circle)."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest
import setuptools

SRC = Path(__file__).resolve().parents[2] / "src" / "kubesched"

#: Top to bottom, as in DESIGN.md "Layers". `harness` (the control plane and the differential and
#: fault harnesses, for our own tests) is on top: nothing in kubesched may import it.
LAYERS = [
    "harness",
    "cli",
    "testing",
    "simulate",
    "extender",
    "serving",
    "cluster",
    "scheduler",
    "plugins",
    "cel",
    "framework",
    "config",
    "api",
]


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out


@pytest.mark.parametrize("layer", LAYERS[1:])
def test_a_layer_imports_nothing_from_above(layer: str) -> None:
    above = LAYERS[: LAYERS.index(layer)]
    bad = [
        f"{path.relative_to(SRC)}: {module}"
        for path in sorted((SRC / layer).rglob("*.py"))
        for module in sorted(_imported_modules(path))
        if any(module == f"kubesched.{a}" or module.startswith(f"kubesched.{a}.") for a in above)
    ]
    assert bad == []


def test_every_package_has_a_layer() -> None:
    packages = sorted(p.name for p in SRC.iterdir() if (p / "__init__.py").is_file())
    assert packages == sorted(LAYERS)


def test_every_directory_of_modules_is_a_regular_package() -> None:
    """A directory without `__init__.py` is only a namespace package: setuptools ships it with a
    warning and a later `packages` setting could silently drop it from the wheel. (`simulate/demo` is
    a link to examples/demo, shipped as data.)"""
    bare = sorted(
        str(d.relative_to(SRC))
        for d in SRC.rglob("*")
        if d.is_dir() and not d.is_symlink() and any(d.glob("*.py")) and not (d / "__init__.py").is_file()
    )
    assert bare == []


def test_the_wheel_ships_testing_and_leaves_the_harness_out() -> None:
    find = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"][
        "find"
    ]
    shipped = setuptools.find_packages(where=str(SRC.parent), exclude=find.get("exclude", ()))
    assert "kubesched.testing" in shipped
    assert [p for p in shipped if p.startswith("kubesched.harness")] == []


# --------------------------------------------------------------------------- import circles
#
# What counts as an edge a -> b: an import of b that runs when a is imported or used, at module level
# or inside a function (a function-level import is the usual way to hide a circle, and the circle
# is still there when the function runs). Imports under `if TYPE_CHECKING:` never run and are left
# out: they are how annotations name a type from a module that imports this one. `from p import n`
# is an edge to `p.n` when that is a module, else to `p`. Importing `p.m` also runs `p/__init__.py`;
# that implicit edge is left out, since a package's `__init__` re-exporting its own modules is not
# a circle Python trips on.


def _modules(root: Path) -> dict[str, Path]:
    """Dotted module name → file, for every module under the package directory `root`."""
    out: dict[str, Path] = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.orelse:
                    visit_one(stmt)
            else:
                visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
        visit(node)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {m for m in found if m in known and m != module}


def import_circles(root: Path) -> list[list[str]]:
    """The import circles among the modules under `root`: each a strongly connected set of two or
    more modules (sorted), found by Tarjan's algorithm."""
    known = _modules(root)
    graph = {m: sorted(_runtime_imports(m, p, known)) for m, p in sorted(known.items())}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members: list[str] = []
            while not members or members[-1] != v:
                members.append(stack.pop())
                on_stack.discard(members[-1])
            if len(members) > 1:
                circles.append(sorted(members))

    for v in graph:
        if v not in index:
            connect(v)
    return sorted(circles)


def test_no_import_circle_in_kubesched() -> None:
    assert import_circles(SRC) == []


def test_a_circle_through_a_function_level_import_is_found_and_one_through_type_checking_is_not(
    tmp_path: Path,
) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from pkg.a import A\n")
    (pkg / "a.py").write_text("from pkg import b\nA = 1\n")
    (pkg / "b.py").write_text("def f():\n    from pkg.a import A\n    return A\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nfrom . import a\nif TYPE_CHECKING:\n    from pkg.d import D\n"
    )
    (pkg / "d.py").write_text("import pkg.c\nD = 1\n")
    assert import_circles(tmp_path / "pkg") == [["pkg.a", "pkg.b"]]
    (pkg / "c.py").write_text("from . import a\nfrom pkg.d import D\n")
    assert import_circles(tmp_path / "pkg") == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"]]

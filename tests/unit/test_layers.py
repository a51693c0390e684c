"""DESIGN.md's layering: no layer imports from a layer above it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "kubesched"

#: Top to bottom, as in DESIGN.md "Layers".
LAYERS = [
    "cli",
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

"""docs/layout.md names every room of src/kubesched (each directory holding Python modules), and no
room that is not there: a package added, moved or removed fails here until the code map says so."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
LAYOUT = ROOT / "docs" / "layout.md"


def _rooms_in_tree() -> set[str]:
    return {
        path.parent.relative_to(SRC).as_posix()
        for path in (SRC / "kubesched").rglob("*.py")
        if "__pycache__" not in path.parts
    }


def _rooms_on_page() -> list[str]:
    return re.findall(r"^### `(kubesched(?:/[\w/]+?)?)/?`$", LAYOUT.read_text(encoding="utf-8"), re.M)


def test_the_code_map_names_every_room_and_only_those() -> None:
    on_page = _rooms_on_page()
    assert len(on_page) == len(set(on_page)), "a room is named twice"
    in_tree = _rooms_in_tree()
    assert sorted(in_tree - set(on_page)) == [], "rooms missing from docs/layout.md"
    assert sorted(set(on_page) - in_tree) == [], "rooms in docs/layout.md that do not exist"


def test_the_code_map_gives_each_room_a_paragraph() -> None:
    sections = re.split(r"^### ", LAYOUT.read_text(encoding="utf-8"), flags=re.M)[1:]
    assert sections and all(len(s.strip().splitlines()) >= 3 for s in sections)


def test_the_layer_order_on_the_page_is_the_layer_tests() -> None:
    tree = ast.parse((ROOT / "tests" / "unit" / "test_layers.py").read_text(encoding="utf-8"))
    layers = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "LAYERS" for t in node.targets)
    )
    text = LAYOUT.read_text(encoding="utf-8")
    stated = re.search(r"top to bottom, are (.+?)\. A layer", text, re.S)
    assert stated is not None
    assert re.findall(r"`(\w+)`", stated.group(1)) == layers

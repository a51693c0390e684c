"""Inside simulate/, the rooms import only downward, as the layers of DESIGN.md do.

A room is a top-level module (report.py) or a package (replay/). The commands sit above the shared
pieces they reuse, and a command may reuse a command below it (replay reuses snapshot's pod
records, sweep runs compare), never one above.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.unit.test_layers import _imported_modules

SIMULATE = Path(__file__).resolve().parents[3] / "src" / "kubesched" / "simulate"
PREFIX = "kubesched.simulate."

#: Top to bottom.
ROOMS = [
    "trace",
    "record",
    "sweep",
    "capacity",
    "compare",
    "replay",
    "snapshot",
    "explain",
    "html",
    "virtual_time",
    "workloads",
    "scenario",
    "node_quantities",
    "held",
    "units",
    "progress",
    "report",
    "malloc",
]


def _room(path: Path) -> str:
    return path.relative_to(SIMULATE).parts[0].removesuffix(".py")


def _rooms_imported(path: Path) -> set[str]:
    modules = _imported_modules(path)
    return {m.removeprefix(PREFIX).split(".")[0] for m in modules if m.startswith(PREFIX)}


def _sources() -> list[Path]:
    return [p for p in sorted(SIMULATE.rglob("*.py")) if p.parent != SIMULATE or p.name != "__init__.py"]


def test_every_room_is_placed() -> None:
    assert sorted({_room(p) for p in _sources()}) == sorted(ROOMS)


@pytest.mark.parametrize("room", ROOMS)
def test_a_room_imports_nothing_from_above(room: str) -> None:
    above = set(ROOMS[: ROOMS.index(room)])
    bad = [
        f"{path.relative_to(SIMULATE)}: {imported}"
        for path in _sources()
        if _room(path) == room
        for imported in sorted(_rooms_imported(path) & above)
    ]
    assert bad == []

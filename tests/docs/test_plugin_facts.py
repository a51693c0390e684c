"""What the user guide and the README say of the default profile (how many plugins, which Score
weights) is what `kubesched config defaults` gives: the guide said 18 plugins after there were 20,
and left out DynamicResources' weight."""

from __future__ import annotations

import re
from pathlib import Path

from kubesched.config import default_config
from kubesched.plugins import default_registry

ROOT = Path(__file__).resolve().parents[2]


def _default_plugins() -> dict[str, int | None]:
    (profile,) = default_config(default_registry()).profiles
    return {p.name: p.weight for p in profile.plugins.multi_point.enabled}


def _flat(path: Path) -> str:
    return " ".join(path.read_text(encoding="utf-8").split())


def test_the_docs_count_the_default_profiles_plugins() -> None:
    count = len(_default_plugins())
    assert re.findall(r"kubesched ships all (\d+) of them", _flat(ROOT / "docs" / "user-guide.md")) == [
        str(count)
    ]
    assert re.findall(r"all (\d+) plugins of the v1\.37\.2 default profile", _flat(ROOT / "README.md")) == [
        str(count)
    ]


def test_the_user_guide_lists_every_default_score_weight() -> None:
    guide = _flat(ROOT / "docs" / "user-guide.md")
    (listed,) = re.findall(r"upstream's score weights \(([^)]*)\)", guide)
    shown = {name: int(weight) for name, weight in (item.rsplit(" ", 1) for item in listed.split(", "))}
    weighted = {name: weight for name, weight in _default_plugins().items() if weight}
    assert shown == weighted

"""`kubesched plugins`: built-in and installed plugins with their extension points."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubesched.cli import main

PLUGIN_MODULE = """
from kubesched.framework import Status


class NoFridays:
    name = "NoFridays"

    def filter(self, state, pod, node_info):
        return None

    def score(self, state, pod, node_info):
        return 0
"""


def installed_plugin(site: Path) -> None:
    """A distribution in `site` as pip would leave it: a module and a dist-info with the entry point."""
    (site / "nofridays.py").write_text(PLUGIN_MODULE)
    info = site / "nofridays-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: nofridays\nVersion: 1.2\n")
    (info / "entry_points.txt").write_text("[kubesched.plugins]\nNoFridays = nofridays:NoFridays\n")


def test_lists_builtin_and_installed_plugins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    installed_plugin(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["plugins", "-o", "json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["TaintToleration"] == {
        "name": "TaintToleration",
        "extensionPoints": ["filter", "preScore", "score"],
        "defaultProfile": "yes (score weight 3)",
        "args": None,
        "from": "built-in",
    }
    assert rows["DefaultPreemption"]["extensionPoints"] == ["preEnqueue", "postFilter"]
    assert rows["NodeResourcesFit"]["args"] == "NodeResourcesFitArgs"
    assert rows["GPUScheduler"]["defaultProfile"] is None  # opt-in
    assert rows["NoFridays"] == {
        "name": "NoFridays",
        "extensionPoints": ["filter", "score"],
        "defaultProfile": None,
        "args": None,
        "from": "nofridays 1.2",
    }
    names = list(rows)
    assert names.index("PrioritySort") < names.index("GPUScheduler") < names.index("NoFridays")

    monkeypatch.setenv("COLUMNS", "200")
    assert main(["plugins"]) == 0
    table = capsys.readouterr().out
    row = next(line for line in table.splitlines() if line.startswith("NoFridays"))
    assert [c.strip() for c in row.split("│")] == ["NoFridays", "filter, score", "-", "-", "nofridays 1.2"]

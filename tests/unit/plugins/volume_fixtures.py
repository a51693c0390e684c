"""Shared by the volume plugin tests: a Handle with listers, and a `kubesched simulate` run."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli import main
from kubesched.framework.node_table import NodeTable
from kubesched.testing.builders import make_table


class FakeHandle:
    """Listers over a fixed set of objects, and the snapshot the plugin may consult."""

    def __init__(self, objects: Sequence[Any] = (), snapshot: NodeTable | None = None) -> None:
        self._by_kind: dict[str, list[Any]] = {}
        for obj in objects:
            self._by_kind.setdefault(obj.kind, []).append(obj)
        self.snapshot = snapshot if snapshot is not None else make_table([])

    def lister(self, kind: str) -> list[Any]:
        return self._by_kind.get(kind, [])


#: A profile with only the plugin under test (multiPoint), plus the mandatory queue sort and binder.
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    queueSort:
      enabled: [{name: PrioritySort}]
    bind:
      enabled: [{name: DefaultBinder}]
    multiPoint:
      enabled: [{name: %s}]
      disabled: [{name: "*"}]
"""

NODES = """\
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {kubernetes.io/hostname: n2}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
"""


def simulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cluster: str, plugin: str, *, two_nodes: bool = True
) -> dict[str, Any]:
    """Run `kubesched simulate DIR --config CFG --explain --output json` after checking, with
    `kubesched config defaults CFG`, that the effective profile keeps only the wanted plugins.

    `cluster` is YAML (indentation is removed); `two_nodes` puts the plain nodes n1 and n2 first.
    """
    cluster_dir = tmp_path / "cluster"
    cluster_dir.mkdir()
    (cluster_dir / "objects.yaml").write_text((NODES if two_nodes else "") + textwrap.dedent(cluster))
    cfg = tmp_path / "sched.yaml"
    cfg.write_text(CONFIG % plugin)
    assert main(["config", "defaults", str(cfg)]) == 0
    effective = yaml.safe_load(capsys.readouterr().out)
    plugins = effective["profiles"][0]["plugins"]
    assert plugins["multiPoint"]["enabled"] == [{"name": plugin}]
    assert plugins["queueSort"]["enabled"] == [{"name": "PrioritySort"}]
    assert plugins["bind"]["enabled"] == [{"name": "DefaultBinder"}]
    assert main(["simulate", str(cluster_dir), "--config", str(cfg), "--explain", "--output", "json"]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report

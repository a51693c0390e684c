"""Shared by the volume plugin tests: a Handle with listers, and a `kubesched simulate` run."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from explain_harness import simulate_explain, single_plugin_config

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
    """Run `kubesched simulate --explain --output json` with a profile of only `plugin` (see
    `explain_harness.simulate_explain`, which also checks the effective profile).

    `cluster` is YAML (indentation is removed); `two_nodes` puts the plain nodes n1 and n2 first.
    """
    objects = (NODES if two_nodes else "") + textwrap.dedent(cluster)
    return simulate_explain(tmp_path, capsys, objects, single_plugin_config(plugin))

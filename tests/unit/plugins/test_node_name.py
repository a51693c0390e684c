"""NodeName Filter (upstream `pkg/scheduler/framework/plugins/nodename/node_name.go`): per-node and batch
forms."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.status import Code, Status
from kubesched.plugins.node_name import NodeName
from kubesched.testing.builders import make_node, make_pod, make_table

REASON = "node(s) didn't match the requested node name"


def _batch(plugin: NodeName, pod_node: str, nodes: NodeSet) -> list[Status | None]:
    res = plugin.filter_nodes(CycleState(), make_pod("p", node_name=pod_node), nodes)
    assert len(res.codes) == len(nodes)
    return [None if c < 0 else res.statuses[c] for c in res.codes]


def _per_node(plugin: NodeName, pod_node: str, nodes: NodeSet) -> list[Status | None]:
    pod = make_pod("p", node_name=pod_node)
    return [plugin.filter(CycleState(), pod, ni) for ni in nodes]


@pytest.mark.parametrize(
    ("pod_node", "node", "fits"),
    [("", "n1", True), ("n1", "n1", True), ("n2", "n1", False), ("N1", "n1", False)],
)
def test_filter(pod_node: str, node: str, fits: bool) -> None:
    table = make_table([make_node(node)])
    for got in (
        _per_node(NodeName(), pod_node, table.all())[0],
        _batch(NodeName(), pod_node, table.all())[0],
    ):
        if fits:
            assert got is None
        else:
            assert got is not None
            assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            assert got.message() == REASON


def test_batch_on_subset_and_unknown_name() -> None:
    table = make_table([make_node(f"n{i}") for i in range(4)])
    subset = NodeSet(table, np.array([1, 3], dtype=np.intp))
    assert [s is None for s in _batch(NodeName(), "n3", subset)] == [False, True]
    assert [s is None for s in _batch(NodeName(), "gone", table.all())] == [False] * 4


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), unique=True, max_size=5),
    st.sampled_from(["", "a", "b", "x"]),
    st.data(),
)
def test_batch_agrees_with_per_node(names: list[str], pod_node: str, data: st.DataObject) -> None:
    table: NodeTable = make_table([make_node(n) for n in names])
    rows = (
        data.draw(st.lists(st.integers(0, max(len(names) - 1, 0)), unique=True).map(sorted)) if names else []
    )
    nodes = NodeSet(table, np.array(rows, dtype=np.intp))
    assert _batch(NodeName(), pod_node, nodes) == _per_node(NodeName(), pod_node, nodes)

"""RowScores: NodeResourcesFit's and BalancedAllocation's remembered scores stay equal to a fresh
plugin's through a random sequence of pods added to and removed from the table (few rows changed,
scored one by one; many rows changed, scored in a batch), a new resource column and a new table."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.node_info import PodInfo
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.row_scores import RowScores
from kubesched.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation
from kubesched.plugins.node_resources_fit import NodeResourcesFit
from kubesched.testing.builders import make_node, make_pod, make_table

PLUGINS: list[type[Any]] = [NodeResourcesFit, NodeResourcesBalancedAllocation]


def _scores(plugin: Any, pod: Any, nodes: NodeSet) -> list[int]:
    state = CycleState()
    plugin.pre_score(state, pod, nodes)
    return list(plugin.score_nodes(state, pod, nodes).tolist())


def _table(rng: random.Random, n: int) -> NodeTable:
    nodes = [
        make_node(f"n{i}", cpu=str(rng.choice([2, 4, 8])), memory=f"{rng.choice([4, 16])}Gi")
        for i in range(n)
    ]
    table: NodeTable = make_table(nodes)
    return table


@pytest.mark.parametrize("plugin_type", PLUGINS)
@pytest.mark.parametrize("seed", range(4))
def test_remembered_scores_equal_fresh_ones_through_pod_changes(plugin_type: type[Any], seed: int) -> None:
    rng = random.Random(seed)
    table = _table(rng, 30)
    remembered = plugin_type()
    shapes = [
        make_pod(f"shape{i}", cpu=f"{rng.choice([100, 500, 1500])}m", memory=f"{rng.choice([1, 3])}Gi")
        for i in range(3)
    ]
    placed: list[tuple[int, str]] = []
    for step in range(60):
        pod = rng.choice(shapes)
        rows = np.asarray(sorted(rng.sample(range(len(table)), rng.choice([5, 30]))), dtype=np.intp)
        nodes = table.all() if len(rows) == len(table) else NodeSet(table, rows)
        assert _scores(remembered, pod, nodes) == _scores(plugin_type(), pod, nodes), step
        # Change a few rows (scored one by one next time) or many (scored in a batch).
        for _ in range(rng.choice([1, 2, 12])):
            if placed and rng.random() < 0.3:
                row, key = placed.pop(rng.randrange(len(placed)))
                table.remove_pod(row, key)
            else:
                row = rng.randrange(len(table))
                new = make_pod(
                    f"p{step}-{len(placed)}-{rng.random()}", cpu=f"{rng.choice([200, 700])}m", memory="1Gi"
                )
                table.add_pod(row, PodInfo(new))
                placed.append((row, PodInfo(new).key))


@pytest.mark.parametrize("plugin_type", PLUGINS)
def test_a_new_table_or_resource_column_is_scored_afresh(plugin_type: type[Any]) -> None:
    rng = random.Random(7)
    remembered = plugin_type()
    pod = make_pod("p", cpu="500m", memory="1Gi")
    table = _table(rng, 10)
    assert _scores(remembered, pod, table.all()) == _scores(plugin_type(), pod, table.all())
    table.ensure_resource("example.com/foo")  # new matrices
    table.add_pod(3, PodInfo(make_pod("q", cpu="3", memory="3Gi")))
    assert _scores(remembered, pod, table.all()) == _scores(plugin_type(), pod, table.all())
    other = _table(rng, 10)
    assert _scores(remembered, pod, other.all()) == _scores(plugin_type(), pod, other.all())


def test_only_changed_rows_are_computed_again() -> None:
    table = make_table([make_node(f"n{i}") for i in range(6)])
    asked: list[list[int]] = []

    def compute(nodes: NodeSet) -> Any:
        asked.append(nodes.rows.tolist())
        return np.asarray(nodes.rows, dtype=np.int64) * 10

    cache = RowScores()
    assert cache.scores(table.all(), "k", compute).tolist() == [0, 10, 20, 30, 40, 50]
    table.add_pod(4, PodInfo(make_pod("a", cpu="1")))
    table.add_pod(1, PodInfo(make_pod("b", cpu="1")))
    cache.scores(table.all(), "k", compute)
    assert asked == [[0, 1, 2, 3, 4, 5], [1, 4]]
    out = cache.scores(NodeSet(table, np.asarray([2, 5], dtype=np.intp)), "k", compute)
    assert out.tolist() == [20, 50] and not out.flags.writeable
    assert len(asked) == 2  # nothing changed: no computation

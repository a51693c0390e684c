"""NodeResourcesBalancedAllocation (upstream
`pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go`): hand-computed scores for two and more
resources under the v1.36+ change-in-balance formula, the best-effort Skip, args validation, and batch == per
node."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Node, Pod
from kubesched.errors import FieldErrors, InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.registry import decode_args
from kubesched.framework.status import Code
from kubesched.plugins.node_resources_balanced_allocation import (
    NodeResourcesBalancedAllocation,
    NodeResourcesBalancedAllocationArgs,
    balance_change_score,
    balance_score,
)
from kubesched.testing.builders import make_node, make_pod, make_table

MI = 1024**2
GI = 1024**3
FOO = "example.com/foo"


def _args(*names: str) -> NodeResourcesBalancedAllocationArgs:
    return msgspec.convert(
        {"resources": [{"name": n, "weight": 1} for n in names]}, NodeResourcesBalancedAllocationArgs
    )


def _score_both(plugin: NodeResourcesBalancedAllocation, pod: Pod, nodes: NodeSet) -> list[int]:
    state = CycleState()
    plugin.pre_score(state, pod, nodes)
    per_node = [plugin.score(state, pod, ni) for ni in nodes]
    batch = plugin.score_nodes(state, pod, nodes)
    assert batch.dtype == np.int64
    assert batch.tolist() == per_node
    return per_node


def _on(node: Node, *existing: Pod) -> NodeSet:
    placed = [
        msgspec.structs.replace(p, spec=msgspec.structs.replace(p.spec, node_name=node.name))
        for p in existing
    ]
    table: NodeTable = make_table([node], placed)
    return table.all()


SCORE_CASES: list[tuple[str, tuple[str, ...], Node, list[Pod], Pod, int]] = [
    # with: cpu (1+1)/4 = 0.5, memory (1+1)/8 = 0.25 -> std 0.125 -> int(87.5) = 87
    # without: .25/.125 -> std .0625 -> 93; 50 + (50 + 87 - 93) // 2 = 72
    (
        "two resources",
        (),
        make_node("n", cpu="4", memory="8Gi"),
        [make_pod("e", cpu="1", memory="1Gi")],
        make_pod("p", cpu="1", memory="1Gi"),
        72,
    ),
    # equal fractions -> 100, as balanced as the empty node (100): no change -> 75
    (
        "perfectly balanced",
        (),
        make_node("n", cpu="4", memory="8Gi"),
        [],
        make_pod("p", cpu="2", memory="4Gi"),
        75,
    ),
    # cpu 3/2 is capped at 1, memory 1/8: std (1 - 0.125)/2 = 0.4375 -> int(56.25) = 56;
    # without 100 -> 50 + (50 + 56 - 100) // 2 = 53
    (
        "fraction capped at 1",
        (),
        make_node("n", cpu="2", memory="8Gi"),
        [],
        make_pod("p", cpu="3", memory="1Gi"),
        53,
    ),
    # Real requests, not the 100m/200Mi defaults: the best-effort pods add nothing. 0.5/0.5 -> 100,
    # 0/0 without -> 100: 75
    (
        "real requests only",
        (),
        make_node("n", cpu="1", memory="1000Mi"),
        [make_pod(f"e{i}") for i in range(3)],
        make_pod("p", cpu="500m", memory="500Mi"),
        75,
    ),
    # cpu only requested: cpu 0.25, memory 0 -> std 0.125 -> 87; 50 + (50 + 87 - 100) // 2 = 68
    (
        "missing memory request is zero",
        (),
        make_node("n", cpu="4", memory="8Gi"),
        [],
        make_pod("p", cpu="1"),
        68,
    ),
    # Three resources: 0.25, 0.5, 0.75 -> mean 0.5, std sqrt(0.125/3) = 0.2041 -> int(79.58) = 79
    # -> 50 + (50 + 79 - 100) // 2 = 64
    (
        "three resources",
        ("cpu", "memory", FOO),
        make_node("n", cpu="4", memory="8Gi", extra={FOO: 4}),
        [],
        make_pod("p", cpu="1", memory="4Gi", extra={FOO: 3}),
        64,
    ),
    # Three resources configured, extended one not requested: back to two fractions 0.25/0.5 -> 87
    # -> 68 (the skipped resource is skipped without the pod as well)
    (
        "unrequested extended resource skipped",
        ("cpu", "memory", FOO),
        make_node("n", cpu="4", memory="8Gi", extra={FOO: 4}),
        [],
        make_pod("p", cpu="1", memory="4Gi"),
        68,
    ),
    # A resource the node lacks (allocatable 0) is skipped: one fraction left -> std 0 -> 100 -> 75
    (
        "zero allocatable skipped",
        ("cpu", "ephemeral-storage"),
        make_node("n", cpu="4"),
        [],
        make_pod("p", cpu="3", extra={"ephemeral-storage": "1Gi"}),
        75,
    ),
    # Four resources, existing requests counted: cpu 2/4=.5, mem 2/8=.25, eph 10/10=1, foo 1/4=.25
    # mean .5, squares .0625+0+.25+.0625 = .375 -> std sqrt(.09375) = .30619 -> int(69.38) = 69
    # without: .25, .125, .4, 0 -> std .1483 -> 85; 50 + (50 + 69 - 85) // 2 = 67
    (
        "four resources with existing pods",
        ("cpu", "memory", "ephemeral-storage", FOO),
        make_node("n", cpu="4", memory="8Gi", extra={FOO: 4, "ephemeral-storage": "10Gi"}),
        [make_pod("e", cpu="1", memory="1Gi", extra={"ephemeral-storage": "4Gi"})],
        make_pod("p", cpu="1", memory="1Gi", extra={FOO: 1, "ephemeral-storage": "6Gi"}),
        67,
    ),
]


@pytest.mark.parametrize(
    ("names", "node", "existing", "pod", "expected"),
    [case[1:] for case in SCORE_CASES],
    ids=[case[0] for case in SCORE_CASES],
)
def test_score(names: tuple[str, ...], node: Node, existing: list[Pod], pod: Pod, expected: int) -> None:
    plugin = NodeResourcesBalancedAllocation(_args(*names) if names else None)
    assert _score_both(plugin, pod, _on(node, *existing)) == [expected]


@pytest.mark.parametrize(
    ("fractions", "expected"),
    [
        ([], 100),
        ([0.3], 100),
        ([0.2, 0.8], 70),
        ([0.8, 0.2], 70),
        ([0.0, 1.0, 0.5], 59),  # std sqrt(1/6) = 0.408 -> 59
        ([1.0, 1.0, 1.0, 1.0], 100),
    ],
)
def test_balance_score(fractions: list[float], expected: int) -> None:
    assert balance_score(fractions) == expected


def test_pre_score_skips_best_effort_pods() -> None:
    plugin = NodeResourcesBalancedAllocation()
    nodes = make_table([make_node("a")]).all()
    state = CycleState()
    status = plugin.pre_score(state, make_pod("p"), nodes)
    assert status is not None
    assert status.code == Code.SKIP
    assert state.get("PreScoreNodeResourcesBalancedAllocation") is None
    # Requests only of resources it does not look at: still nothing to balance.
    status = plugin.pre_score(CycleState(), make_pod("p", extra={FOO: 1}), nodes)
    assert status is not None
    assert status.is_skip()


def test_pre_score_writes_state_for_a_pod_with_requests() -> None:
    plugin = NodeResourcesBalancedAllocation()
    state = CycleState()
    assert plugin.pre_score(state, make_pod("p", memory="1Gi"), make_table([make_node("a")]).all()) is None
    data = state.read("PreScoreNodeResourcesBalancedAllocation")
    assert data.clone() is data
    assert data.pod_requests == (0, GI)  # type: ignore[attr-defined]


def test_score_without_pre_score() -> None:
    plugin = NodeResourcesBalancedAllocation()
    table = make_table([make_node("a", cpu="4", memory="8Gi"), make_node("b", cpu="1", memory="8Gi")])
    pod = make_pod("p", cpu="1", memory="2Gi")
    # a: .25/.25 -> 100, was 100 -> 75; b: 1/.25 -> std .375 -> 62, was 100 -> 56
    assert plugin.score(CycleState(), pod, table.infos[1]) == 56
    assert plugin.score_nodes(CycleState(), pod, table.all()).tolist() == [75, 56]


# --------------------------------------------------------------------------- args


def test_args_defaults() -> None:
    args = NodeResourcesBalancedAllocationArgs()
    assert [(r.name, r.weight) for r in args.resources] == [("cpu", 1), ("memory", 1)]
    assert args.validate() == []
    empty = msgspec.convert({"resources": []}, NodeResourcesBalancedAllocationArgs)
    assert [(r.name, r.weight) for r in empty.resources] == [("cpu", 1), ("memory", 1)]
    unset_weight = msgspec.convert({"resources": [{"name": FOO}]}, NodeResourcesBalancedAllocationArgs)
    assert [(r.name, r.weight) for r in unset_weight.resources] == [(FOO, 1)]
    assert unset_weight.validate() == []


@pytest.mark.parametrize(
    ("resources", "errors"),
    [
        ([{"name": "cpu", "weight": 2}], [("resources[0].weight", "must be 1")]),
        ([{"name": "cpu", "weight": -1}], [("resources[0].weight", "must be 1")]),
        (
            [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": "cpu", "weight": 1}],
            [("resources[2].name", "duplicate value 'cpu'")],
        ),
        ([{"name": "", "weight": 1}], [("resources[0].name", "must not be empty")]),
        (
            [{"name": "cpu", "weight": 3}, {"name": "cpu", "weight": 1}],
            [("resources[0].weight", "must be 1"), ("resources[1].name", "duplicate value 'cpu'")],
        ),
    ],
)
def test_args_validation(resources: list[dict[str, Any]], errors: list[tuple[str, str]]) -> None:
    args = msgspec.convert({"resources": resources}, NodeResourcesBalancedAllocationArgs)
    got = args.validate()
    assert all(isinstance(e, InputError) for e in got)
    assert [(e.path, e.message) for e in got] == errors


def test_registry_and_constructor_reject_bad_args() -> None:
    with pytest.raises(InputError) as exc:
        decode_args(NodeResourcesBalancedAllocation, {"resources": [{"name": "cpu", "weight": 5}]})
    assert str(exc.value) == "args.resources[0].weight: must be 1"
    with pytest.raises(FieldErrors):
        NodeResourcesBalancedAllocation(_args("cpu", "cpu"))


# --------------------------------------------------------------------------- batch == per node

_POOL = ("cpu", "memory", "ephemeral-storage", FOO, "hugepages-2Mi")


def _random_pod(draw: st.DrawFn, name: str, node_name: str = "") -> Pod:
    extra: dict[str, str | int] = {}
    if draw(st.booleans()):
        extra["ephemeral-storage"] = str(draw(st.integers(0, 12)) * GI)
    if draw(st.booleans()):
        extra[FOO] = draw(st.integers(0, 5))
    if draw(st.integers(0, 3)) == 0:
        extra["hugepages-2Mi"] = f"{draw(st.integers(0, 4)) * 2}Mi"
    return make_pod(
        name,
        cpu=draw(st.one_of(st.none(), st.integers(0, 5000).map(lambda m: f"{m}m"))),
        memory=draw(st.one_of(st.none(), st.integers(0, 5000).map(lambda m: str(m * MI)))),
        extra=extra,
        node_name=node_name,
    )


@st.composite
def _cluster(draw: st.DrawFn) -> tuple[NodeSet, Pod]:
    n = draw(st.integers(1, 6))
    nodes = []
    for i in range(n):
        extra: dict[str, str | int] = {}
        if draw(st.booleans()):
            extra["ephemeral-storage"] = str(draw(st.integers(0, 30)) * GI)
        if draw(st.booleans()):
            extra[FOO] = draw(st.integers(0, 7))
        if draw(st.booleans()):
            extra["hugepages-2Mi"] = f"{draw(st.integers(0, 8)) * 2}Mi"
        nodes.append(
            make_node(
                f"n{i}",
                cpu=f"{draw(st.integers(0, 4000))}m",
                memory=str(draw(st.integers(0, 4000)) * MI),
                extra=extra,
            )
        )
    existing = [
        _random_pod(draw, f"e{j}", f"n{draw(st.integers(0, n - 1))}") for j in range(draw(st.integers(0, 8)))
    ]
    table: NodeTable = make_table(nodes, existing)
    rows = draw(st.lists(st.integers(0, n - 1), unique=True).map(sorted))
    return NodeSet(table, np.asarray(rows, dtype=np.intp)), _random_pod(draw, "p")


@settings(max_examples=200, deadline=None)
@given(_cluster(), st.lists(st.sampled_from(_POOL), unique=True, max_size=5))
def test_batch_agrees_with_per_node(cluster: tuple[NodeSet, Pod], names: list[str]) -> None:
    nodes, pod = cluster
    plugin = NodeResourcesBalancedAllocation(_args(*names) if names else None)
    scores = _score_both(plugin, pod, nodes)
    assert all(0 <= s <= 100 for s in scores)


@pytest.mark.parametrize(
    ("with_pod", "without_pod", "expected"),
    [
        (100, 100, 75),  # no change
        (50, 100, 50),  # balanced -> most imbalanced
        (100, 50, 100),  # most imbalanced -> balanced
        (87, 93, 72),  # Go's integer division: (50 + 87 - 93) / 2 = 22
        (93, 87, 78),
    ],
)
def test_balance_change_score(with_pod: int, without_pod: int, expected: int) -> None:
    assert balance_change_score(with_pod, without_pod) == expected


def test_balance_that_improves_wins_over_an_empty_node() -> None:
    """v1.37.2: a pod that evens out a lopsided node beats an empty node (75); the old formula
    (balance with the pod) ranked the empty node first."""
    plugin = NodeResourcesBalancedAllocation()
    empty = make_node("empty", cpu="4", memory="8Gi")
    lopsided = make_node("lopsided", cpu="4", memory="8Gi")
    busy = make_pod("e", cpu="2", memory="1Gi")
    busy = msgspec.structs.replace(busy, spec=msgspec.structs.replace(busy.spec, node_name="lopsided"))
    table = make_table([empty, lopsided], [busy])
    pod = make_pod("p", cpu="500m", memory="4Gi")
    # empty: .125/.5 -> 81 (was 100) -> 50 + 31 // 2 = 65
    # lopsided: .625/.625 -> 100 (was .5/.125 -> 81) -> 50 + 69 // 2 = 84
    assert _score_both(plugin, pod, table.all()) == [65, 84]

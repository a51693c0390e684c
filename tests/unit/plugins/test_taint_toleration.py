"""TaintToleration Filter / PreScore / Score / NormalizeScore (upstream
`pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Node, Pod, Taint, Toleration
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import QueueingHint, QueueingHintFn, Resource
from kubesched.framework.node_table import NodeSet, NodeTable
from kubesched.framework.status import Code, Status
from kubesched.plugins.taint_toleration import TaintToleration
from kubesched.testing.builders import make_node, make_pod, make_table

REASON = "node(s) had untolerated taint(s)"
NS, PNS, NE = "NoSchedule", "PreferNoSchedule", "NoExecute"


def T(key: str, value: str = "", effect: str = NS) -> Taint:  # noqa: N802
    return Taint(key=key, value=value, effect=effect)


def Tol(key: str = "", operator: str = "", value: str = "", effect: str = "") -> Toleration:  # noqa: N802
    return Toleration(key=key, operator=operator, value=value, effect=effect)


def _filter_both(taints: list[Taint], tolerations: list[Toleration]) -> tuple[Status | None, Status | None]:
    table = make_table([make_node("n", taints=taints)])
    pod = make_pod("p", tolerations=tolerations)
    plugin = TaintToleration()
    per_node = plugin.filter(CycleState(), pod, table.infos[0])
    res = plugin.filter_nodes(CycleState(), pod, table.all())
    batch = None if res.codes[0] < 0 else res.statuses[res.codes[0]]
    return per_node, batch


FILTER_CASES = [
    ("no taints", [], [], True),
    ("NoSchedule, no tolerations", [T("k")], [], False),
    ("NoExecute, no tolerations", [T("k", effect=NE)], [], False),
    ("PreferNoSchedule is ignored by Filter", [T("k", effect=PNS)], [], True),
    ("Equal key value effect", [T("k", "v")], [Tol("k", "Equal", "v", NS)], True),
    ("empty operator means Equal", [T("k", "v")], [Tol("k", "", "v", NS)], True),
    ("Equal value mismatch", [T("k", "v")], [Tol("k", "Equal", "w", NS)], False),
    ("Equal key mismatch", [T("k", "v")], [Tol("other", "Equal", "v", NS)], False),
    ("Exists ignores the value", [T("k", "v")], [Tol("k", "Exists", effect=NS)], True),
    ("Exists with empty key tolerates everything", [T("a"), T("b", "x", NE)], [Tol(operator="Exists")], True),
    ("empty key with Equal matches any key, by value", [T("k", "v")], [Tol("", "Equal", "v")], True),
    ("empty key with Equal, value mismatch", [T("k", "v")], [Tol("", "Equal", "w")], False),
    ("empty effect matches every effect", [T("k", "v", NE)], [Tol("k", "Equal", "v")], True),
    ("effect mismatch", [T("k", "v", NE)], [Tol("k", "Equal", "v", NS)], False),
    (
        "PreferNoSchedule toleration does not cover NoSchedule",
        [T("k")],
        [Tol("k", "Exists", effect=PNS)],
        False,
    ),
    ("one of two taints untolerated", [T("a"), T("b")], [Tol("a", "Exists")], False),
    ("both taints tolerated", [T("a"), T("b", effect=NE)], [Tol("a", "Exists"), Tol("b", "Exists")], True),
    (
        "untolerated PreferNoSchedule beside tolerated NoSchedule",
        [T("a"), T("b", effect=PNS)],
        [Tol("a", "Exists")],
        True,
    ),
    ("Gt: taint value greater", [T("k", "5")], [Tol("k", "Gt", "3")], True),
    ("Gt: taint value smaller", [T("k", "2")], [Tol("k", "Gt", "3")], False),
    ("Lt: taint value smaller", [T("k", "2")], [Tol("k", "Lt", "3")], True),
    ("unknown operator tolerates nothing", [T("k", "v")], [Tol("k", "Bogus", "v")], False),
    ("unschedulable taint", [T("node.kubernetes.io/unschedulable")], [], False),
]


@pytest.mark.parametrize(
    ("taints", "tolerations", "fits"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_filter(taints: list[Taint], tolerations: list[Toleration], fits: bool) -> None:
    for status in _filter_both(taints, tolerations):
        if fits:
            assert status is None
        else:
            assert status is not None
            assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            assert status.message() == REASON


def _scores(plugin: TaintToleration, pod: Pod, table: NodeTable) -> tuple[list[int], list[int], list[int]]:
    """(per-node raw, batch raw, batch normalized) over all nodes, through PreScore."""
    state = CycleState()
    nodes = table.all()
    assert plugin.pre_score(state, pod, nodes) is None
    per_node: list[int] = []
    for ni in nodes:
        s = plugin.score(state, pod, ni)
        assert isinstance(s, int)
        per_node.append(s)
    raw = plugin.score_nodes(state, pod, nodes)
    assert raw.dtype == np.int64
    normalized = raw.copy()
    assert plugin.normalize_score(state, pod, nodes, normalized) is None
    return per_node, raw.tolist(), normalized.tolist()


def test_score_counts_intolerable_prefer_no_schedule() -> None:
    table = make_table(
        [
            make_node("clean"),
            make_node("one", taints=[T("a", effect=PNS)]),
            make_node("two", taints=[T("a", effect=PNS), T("b", "x", PNS)]),
            make_node("hard-only", taints=[T("a"), T("b", effect=NE)]),  # not PreferNoSchedule: 0
            make_node("three", taints=[T("a", effect=PNS), T("b", "x", PNS), T("c", effect=PNS)]),
        ]
    )
    per_node, raw, normalized = _scores(TaintToleration(), make_pod("p"), table)
    assert per_node == raw == [0, 1, 2, 0, 3]
    assert normalized == [100, 67, 34, 100, 0]  # reverse: 100 - 100*s//max


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([], 2),
        ([Tol("a", "Exists", effect=PNS)], 1),
        ([Tol("a", "Exists")], 1),  # empty effect counts for PreferNoSchedule
        ([Tol("a", "Exists", effect=NS)], 2),  # a NoSchedule toleration is dropped by PreScore
        ([Tol("b", "Equal", "x", PNS)], 1),
        ([Tol("b", "Equal", "y", PNS)], 2),
        ([Tol(operator="Exists")], 0),
        ([Tol(operator="Exists", effect=NE)], 2),
    ],
)
def test_score_tolerations(tolerations: list[Toleration], expected: int) -> None:
    table = make_table([make_node("n", taints=[T("a", effect=PNS), T("b", "x", PNS)])])
    per_node, raw, _ = _scores(TaintToleration(), make_pod("p", tolerations=tolerations), table)
    assert per_node == raw == [expected]


def test_score_without_pre_score_state_falls_back() -> None:
    table = make_table([make_node("n", taints=[T("a", effect=PNS)])])
    pod = make_pod("p")
    plugin = TaintToleration()
    assert plugin.score(CycleState(), pod, table.infos[0]) == 1
    assert plugin.score_nodes(CycleState(), pod, table.all()).tolist() == [1]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [([0, 0], [100, 100]), ([0, 1, 2], [100, 50, 0]), ([3], [0]), ([1, 3], [67, 0])],
)
def test_normalize_is_reverse(raw: list[int], expected: list[int]) -> None:
    table = make_table([make_node(f"n{i}") for i in range(len(raw))])
    scores = np.array(raw, dtype=np.int64)
    TaintToleration().normalize_score(CycleState(), make_pod("p"), table.all(), scores)
    assert scores.tolist() == expected


def test_pre_score_with_no_nodes_writes_nothing() -> None:
    state = CycleState()
    table = make_table([])
    assert TaintToleration().pre_score(state, make_pod("p"), table.all()) is None
    assert state.get("PreScoreTaintToleration") is None


def _hints() -> dict[Resource, QueueingHintFn]:
    return {r.event.resource: r.hint for r in TaintToleration().events_to_register() if r.hint is not None}


_USER = [Toleration(key="dedicated", operator="Equal", value="user2", effect="NoSchedule")]


def _tainted(*values: str) -> Node:
    return make_node("a", taints=[Taint(key="dedicated", value=v, effect="NoSchedule") for v in values])


# The cases of v1.37.2's tainttoleration TestIsSchedulableAfterNodeChange.
@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (None, "not-a-node", QueueingHint.QUEUE),
        ("not-a-node", _tainted("user1"), QueueingHint.QUEUE),
        (None, _tainted("user1"), QueueingHint.SKIP),  # added, still untolerated
        (None, _tainted("user2"), QueueingHint.QUEUE),  # added, tolerated
        (_tainted("user1"), _tainted("user1", "user3"), QueueingHint.SKIP),
        (_tainted("user1"), _tainted("user2"), QueueingHint.QUEUE),
        (_tainted("user2"), _tainted(), QueueingHint.SKIP),  # was tolerated already
    ],
)
def test_node_hint(old: object, new: object, expected: QueueingHint) -> None:
    assert _hints()[Resource.NODE](make_pod("p", tolerations=_USER), old, new) is expected


def test_toleration_hint_always_queues() -> None:
    """Tolerations can only be added, so a new one always may help."""
    assert _hints()[Resource.TARGET_POD](make_pod("p"), make_pod("p"), make_pod("p", tolerations=_USER)) is (
        QueueingHint.QUEUE
    )


# --------------------------------------------------------------------------- batch == per node

_keys = st.sampled_from(["a", "b", "node.kubernetes.io/unschedulable"])
_values = st.sampled_from(["", "v", "w", "1", "5", "-3", "07"])
_effects = st.sampled_from([NS, PNS, NE])
taints_st = st.lists(st.builds(Taint, key=_keys, value=_values, effect=_effects), max_size=3)
tolerations_st = st.lists(
    st.builds(
        Toleration,
        key=st.sampled_from(["", "a", "b"]),
        operator=st.sampled_from(["", "Equal", "Exists", "Gt", "Lt", "Bogus"]),
        value=_values,
        effect=st.sampled_from(["", NS, PNS, NE]),
    ),
    max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(taints_st, max_size=6), tolerations_st, st.data())
def test_batch_agrees_with_per_node(
    node_taints: list[list[Taint]], tolerations: list[Toleration], data: st.DataObject
) -> None:
    table = make_table([make_node(f"n{i}", taints=t) for i, t in enumerate(node_taints)])
    rows = sorted(data.draw(st.sets(st.integers(0, len(node_taints) - 1))) if node_taints else set())
    nodes = NodeSet(table, np.array(rows, dtype=np.intp))
    pod = make_pod("p", tolerations=tolerations)
    plugin = TaintToleration()

    res = plugin.filter_nodes(CycleState(), pod, nodes)
    batch = [None if c < 0 else res.statuses[c] for c in res.codes]
    assert batch == [plugin.filter(CycleState(), pod, ni) for ni in nodes]

    state = CycleState()
    plugin.pre_score(state, pod, nodes)
    assert plugin.score_nodes(state, pod, nodes).tolist() == [plugin.score(state, pod, ni) for ni in nodes]

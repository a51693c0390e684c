"""NodeUnschedulable Filter (upstream
`pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go`): cordoned nodes and the
unschedulable toleration."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Toleration
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import QueueingHint, QueueingHintFn, Resource
from kubesched.framework.node_table import NodeSet
from kubesched.framework.status import Code, Status
from kubesched.plugins.node_unschedulable import NodeUnschedulable
from kubesched.testing.builders import make_node, make_pod, make_table

REASON = "node(s) were unschedulable"
KEY = "node.kubernetes.io/unschedulable"


def _both(unschedulable: bool, tolerations: list[Toleration]) -> list[Status | None]:
    table = make_table([make_node("n", unschedulable=unschedulable)])
    pod = make_pod("p", tolerations=tolerations)
    plugin = NodeUnschedulable()
    res = plugin.filter_nodes(CycleState(), pod, table.all())
    return [
        plugin.filter(CycleState(), pod, table.infos[0]),
        None if res.codes[0] < 0 else res.statuses[res.codes[0]],
    ]


CASES = [
    ("schedulable node", False, [], True),
    ("cordoned, no toleration", True, [], False),
    (
        "cordoned, Exists on the key",
        True,
        [Toleration(key=KEY, operator="Exists", effect="NoSchedule")],
        True,
    ),
    ("cordoned, Exists, empty effect", True, [Toleration(key=KEY, operator="Exists")], True),
    ("cordoned, tolerate everything", True, [Toleration(operator="Exists")], True),
    (
        "cordoned, Equal with empty value",
        True,
        [Toleration(key=KEY, operator="Equal", effect="NoSchedule")],
        True,
    ),
    ("cordoned, Equal with a value", True, [Toleration(key=KEY, operator="Equal", value="x")], False),
    ("cordoned, wrong effect", True, [Toleration(key=KEY, operator="Exists", effect="NoExecute")], False),
    (
        "cordoned, PreferNoSchedule effect",
        True,
        [Toleration(key=KEY, operator="Exists", effect="PreferNoSchedule")],
        False,
    ),
    ("cordoned, other key", True, [Toleration(key="other", operator="Exists")], False),
]


@pytest.mark.parametrize(
    ("unschedulable", "tolerations", "fits"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_filter(unschedulable: bool, tolerations: list[Toleration], fits: bool) -> None:
    for status in _both(unschedulable, tolerations):
        if fits:
            assert status is None
        else:
            assert status is not None
            assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            assert status.message() == REASON


def test_taint_alone_is_not_this_plugins_business() -> None:
    """A node tainted unschedulable but not cordoned passes here (TaintToleration handles the taint)."""
    from kubesched.api.objects import Taint

    table = make_table([make_node("n", taints=[Taint(key=KEY, effect="NoSchedule")])])
    assert NodeUnschedulable().filter(CycleState(), make_pod("p"), table.infos[0]) is None
    assert NodeUnschedulable().filter_nodes(CycleState(), make_pod("p"), table.all()).passed.tolist() == [
        True
    ]


def _hints() -> dict[Resource, QueueingHintFn]:
    return {r.event.resource: r.hint for r in NodeUnschedulable().events_to_register() if r.hint is not None}


# The cases of v1.37.2's nodeunschedulable TestIsSchedulableAfterNodeChange.
@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (None, "not-a-node", QueueingHint.QUEUE),
        ("not-a-node", make_node("a", unschedulable=True), QueueingHint.QUEUE),
        (None, make_node("a", unschedulable=True), QueueingHint.SKIP),
        (None, make_node("a"), QueueingHint.QUEUE),
        (make_node("a", unschedulable=True), make_node("a", unschedulable=True), QueueingHint.SKIP),
        (make_node("a"), make_node("a"), QueueingHint.SKIP),
        (make_node("a", unschedulable=True), make_node("a"), QueueingHint.QUEUE),
        (make_node("a"), make_node("a", unschedulable=True), QueueingHint.SKIP),
    ],
)
def test_node_hint(old: object, new: object, expected: QueueingHint) -> None:
    assert _hints()[Resource.NODE](make_pod("p"), old, new) is expected


# The cases of v1.37.2's TestIsSchedulableAfterPodTolerationChange.
@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([Toleration(key=KEY, operator="Exists", effect="NoSchedule")], QueueingHint.QUEUE),
        ([Toleration(operator="Exists")], QueueingHint.QUEUE),
        ([Toleration(key="other", operator="Exists", effect="NoSchedule")], QueueingHint.SKIP),
        ([Toleration(key=KEY, operator="Exists", effect="NoExecute")], QueueingHint.SKIP),
    ],
)
def test_toleration_hint(tolerations: list[Toleration], expected: QueueingHint) -> None:
    hint = _hints()[Resource.TARGET_POD]
    assert hint(make_pod("p"), make_pod("p"), make_pod("p", tolerations=tolerations)) is expected
    assert hint(make_pod("p"), make_pod("p"), "not-a-pod") is QueueingHint.QUEUE
    assert hint(make_pod("p"), "not-a-pod", make_pod("p")) is QueueingHint.QUEUE


tolerations_st = st.lists(
    st.builds(
        Toleration,
        key=st.sampled_from(["", KEY, "other"]),
        operator=st.sampled_from(["", "Equal", "Exists"]),
        value=st.sampled_from(["", "x"]),
        effect=st.sampled_from(["", "NoSchedule", "NoExecute", "PreferNoSchedule"]),
    ),
    max_size=3,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.booleans(), max_size=6), tolerations_st, st.data())
def test_batch_agrees_with_per_node(
    cordoned: list[bool], tolerations: list[Toleration], data: st.DataObject
) -> None:
    table = make_table([make_node(f"n{i}", unschedulable=c) for i, c in enumerate(cordoned)])
    rows = sorted(data.draw(st.sets(st.integers(0, len(cordoned) - 1))) if cordoned else set())
    nodes = NodeSet(table, np.array(rows, dtype=np.intp))
    pod = make_pod("p", tolerations=tolerations)
    plugin = NodeUnschedulable()
    res = plugin.filter_nodes(CycleState(), pod, nodes)
    assert [None if c < 0 else res.statuses[c] for c in res.codes] == [
        plugin.filter(CycleState(), pod, ni) for ni in nodes
    ]

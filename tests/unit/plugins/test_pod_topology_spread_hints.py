"""PodTopologySpread's requeueing: its three registrations and what each hint answers.

The cases are those of v1.37.2's podtopologyspread/plugin_test.go (node, assigned pod and target
pod hints), restated here with kubesched's builders, plus the soft-constraint and error cases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import pytest

from kubesched.api.objects import Node, Pod, Taint, Toleration
from kubesched.framework.events import ActionType, QueueingHint, QueueingHintFn, Resource
from kubesched.plugins.pod_topology_spread import PodTopologySpread
from kubesched.testing.builders import make_node, make_pod

FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}


def spread(
    key: str, selector: dict[str, Any] = FOO, when: str = "DoNotSchedule", **extra: Any
) -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": selector, **extra}


def pending(*constraints: dict[str, Any], labels: Mapping[str, str] | None = None) -> Pod:
    labels = {"foo": ""} if labels is None else labels
    return make_pod("p", labels=labels, spec={"topologySpreadConstraints": list(constraints)})


def other(
    labels: Mapping[str, str] | None = None, *, on: str = "", nominated: str = "", namespace: str = "default"
) -> Pod:
    p = make_pod("p2", labels=dict(labels or {}), node_name=on, namespace=namespace)
    if nominated:
        p = msgspec.structs.replace(
            p, status=msgspec.structs.replace(p.status, nominated_node_name=nominated)
        )
    return p


def node(labels: Mapping[str, str], taints: Sequence[Taint] = ()) -> Node:
    return make_node("node-a", labels=labels, taints=taints)


def hint(resource: Resource) -> QueueingHintFn:
    (reg,) = [r for r in PodTopologySpread().events_to_register() if r.event.resource == resource]
    assert reg.hint is not None
    return reg.hint


def test_registrations() -> None:
    """v1.37.2 registers three events, each with a hint."""
    regs = PodTopologySpread().events_to_register()
    assert [(r.event.resource, r.event.action, r.hint is not None) for r in regs] == [
        (Resource.ASSIGNED_POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE, True),
        (Resource.TARGET_POD, ActionType.UPDATE_POD_TOLERATION | ActionType.UPDATE_POD_LABEL, True),
        (
            Resource.NODE,
            ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT,
            True,
        ),
    ]


ZONE = spread("zone")
TWO = (spread("zone"), spread("node"))
TAINT_A = [Taint(key="aaa", value="bbb", effect="NoSchedule")]
TAINT_C = [Taint(key="ccc", value="bbb", effect="NoSchedule")]


@pytest.mark.parametrize(
    ("constraints", "old", "new", "expected"),
    [
        ((ZONE,), node({"zone": "zone1"}), node({"zone": "zone2"}), QueueingHint.QUEUE),
        ((ZONE,), node({"foo": "bar1"}), node({"foo": "bar2"}), QueueingHint.SKIP),
        (
            TWO,
            node({"zone": "z1", "node": "n1", "foo": "bar"}),
            node({"zone": "z1", "node": "n1"}),
            QueueingHint.SKIP,
        ),
        ((ZONE,), None, node({"foo": "bar"}), QueueingHint.SKIP),
        ((ZONE,), None, node({"zone": "zone1"}), QueueingHint.QUEUE),
        ((ZONE,), node({"foo": "bar"}), None, QueueingHint.SKIP),
        ((ZONE,), node({"zone": "zone1"}), None, QueueingHint.QUEUE),
        (TWO, None, node({"zone": "z1"}), QueueingHint.SKIP),  # only one key: no domain
        (TWO, None, node({"zone": "z1", "node": "n1"}), QueueingHint.QUEUE),
        (TWO, node({"zone": "z1"}), node({"zone": "z1"}), QueueingHint.SKIP),
        (TWO, node({"zone": "z1", "node": "n1"}), node({"zone": "z1", "node": "n2"}), QueueingHint.QUEUE),
        (
            TWO,
            node({"zone": "z1", "node": "n1"}, TAINT_A),
            node({"zone": "z1", "node": "n1"}, TAINT_C),
            QueueingHint.QUEUE,
        ),
        (TWO, node({"node": "n1"}, TAINT_A), node({"node": "n1"}, TAINT_C), QueueingHint.SKIP),
        # Beyond upstream's table: gaining or losing the last key flips whether the node counts.
        ((ZONE,), node({"zone": "zone1"}), node({}), QueueingHint.QUEUE),
        ((ZONE,), node({}), node({"zone": "zone1"}), QueueingHint.QUEUE),
        ((ZONE,), node({"zone": "zone1"}), node({"zone": "zone1"}, TAINT_A), QueueingHint.QUEUE),
        # Only DoNotSchedule constraints count: a soft one alone leaves none, so every node has
        # "all" keys (added: Queue) and no update changes anything (Skip).
        ((spread("zone", when="ScheduleAnyway"),), None, node({}), QueueingHint.QUEUE),
        (
            (spread("zone", when="ScheduleAnyway"),),
            node({"zone": "a"}),
            node({"zone": "b"}),
            QueueingHint.SKIP,
        ),
        ("not-a-node", None, None, QueueingHint.QUEUE),
    ],
)
def test_node_hint(constraints: Any, old: Any, new: Any, expected: QueueingHint) -> None:
    if constraints == "not-a-node":
        assert hint(Resource.NODE)(pending(ZONE), "not-a-node", None) is expected
        return
    assert hint(Resource.NODE)(pending(*constraints), old, new) is expected


FOO_ZONE_BAR_NODE = (spread("zone"), spread("node", BAR))


@pytest.mark.parametrize(
    ("constraints", "old", "new", "expected"),
    [
        ((ZONE,), None, other({"foo": ""}, on="fake-node"), QueueingHint.QUEUE),
        ((ZONE,), None, other({"foo": ""}), QueueingHint.SKIP),  # not bound
        ((ZONE,), other({"bar": ""}), other({"foo": ""}), QueueingHint.SKIP),  # not bound
        ((ZONE,), other({"foo": ""}), None, QueueingHint.SKIP),  # not bound
        ((ZONE,), None, other({"foo": ""}, on="fake-node", namespace="fake-namespace"), QueueingHint.SKIP),
        ((ZONE,), None, other({"bar": ""}, on="fake-node"), QueueingHint.SKIP),
        ((ZONE,), other({"foo": ""}, on="fake-node"), None, QueueingHint.QUEUE),
        ((ZONE,), other({"bar": ""}, nominated="fake-node"), None, QueueingHint.SKIP),
        ((ZONE,), other({"foo": ""}, nominated="fake-node"), None, QueueingHint.QUEUE),
        ((ZONE,), other({"bar": ""}, on="fake-node"), None, QueueingHint.SKIP),
        (
            (ZONE,),
            other({"foo": "", "bar": "bar1"}, on="fake-node"),
            other({"foo": "", "bar": "bar2"}, on="fake-node"),
            QueueingHint.SKIP,
        ),
        ((ZONE,), other({}, on="fake-node"), other({"foo": ""}, on="fake-node"), QueueingHint.QUEUE),
        ((ZONE,), other({"foo": ""}, on="fake-node"), other({}, on="fake-node"), QueueingHint.QUEUE),
        (
            (ZONE,),
            other({"foo": "foo1"}, on="fake-node"),
            other({"foo": "foo2"}, on="fake-node"),
            QueueingHint.SKIP,
        ),
        (
            FOO_ZONE_BAR_NODE,
            other({"foo": ""}, on="fake-node"),
            other({"foo": "", "bar": "bar2"}, on="fake-node"),
            QueueingHint.QUEUE,
        ),
        (
            FOO_ZONE_BAR_NODE,
            other({"foo": ""}, on="fake-node"),
            other({"foo": "", "baz": ""}, on="fake-node"),
            QueueingHint.SKIP,
        ),
        (
            FOO_ZONE_BAR_NODE,
            other({"foo": "", "bar": ""}, on="fake-node"),
            other({"foo": "", "bar": "bar2"}, on="fake-node"),
            QueueingHint.SKIP,
        ),
        # A soft constraint's selector is not weighed: the hints read what Filter rejects on.
        (
            (spread("zone", when="ScheduleAnyway"),),
            None,
            other({"foo": ""}, on="fake-node"),
            QueueingHint.SKIP,
        ),
    ],
)
def test_assigned_pod_hint(
    constraints: Any, old: Pod | None, new: Pod | None, expected: QueueingHint
) -> None:
    assert hint(Resource.ASSIGNED_POD)(pending(*constraints), old, new) is expected


def test_assigned_pod_hint_queues_on_what_is_not_a_pod() -> None:
    assert hint(Resource.ASSIGNED_POD)(pending(ZONE), "not-a-pod", None) is QueueingHint.QUEUE


HONOR_ZONE = (spread("zone", nodeTaintsPolicy="Honor"), spread("node", BAR))
IGNORE_ZONE = (spread("zone", nodeTaintsPolicy="Ignore"), spread("node", BAR))
UNSCHEDULABLE = Toleration(key="node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule")


def _self(labels: Mapping[str, str], tolerations: Sequence[Toleration] = ()) -> Pod:
    return make_pod("p", labels=labels, tolerations=tolerations)


@pytest.mark.parametrize(
    ("constraints", "old", "new", "expected"),
    [
        (HONOR_ZONE, _self({"foo": ""}), _self({"foo": ""}, [UNSCHEDULABLE]), QueueingHint.QUEUE),
        (IGNORE_ZONE, _self({"foo": ""}), _self({"foo": ""}, [UNSCHEDULABLE]), QueueingHint.SKIP),
        (IGNORE_ZONE, _self({}), _self({"foo": ""}), QueueingHint.QUEUE),
        (IGNORE_ZONE, _self({}), _self({"unrelated": ""}), QueueingHint.SKIP),
    ],
)
def test_target_pod_hint(constraints: Any, old: Pod, new: Pod, expected: QueueingHint) -> None:
    assert hint(Resource.TARGET_POD)(pending(*constraints), old, new) is expected

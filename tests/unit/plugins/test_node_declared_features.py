"""NodeDeclaredFeatures: what a pod requires, which nodes declare it, upstream's message."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.api.objects import Node, Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import QueueingHint, QueueingHintFn, Resource
from kubesched.framework.node_info import NodeInfo
from kubesched.framework.node_table import NodeTable
from kubesched.plugins.node_declared_features import NodeDeclaredFeatures, required_features


def pod(**spec: Any) -> Pod:
    return msgspec.convert({"metadata": {"name": "p", "namespace": "default"}, "spec": spec}, Pod)


def node(name: str, features: list[str]) -> Node:
    return msgspec.convert({"metadata": {"name": name}, "status": {"declaredFeatures": features}}, Node)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"containers": [{"name": "c"}]}, []),
        (
            {"hostNetwork": True, "hostUsers": False, "containers": [{"name": "c"}]},
            ["UserNamespacesHostNetworkSupport"],
        ),
        ({"hostNetwork": True, "containers": [{"name": "c"}]}, []),
        (
            {"containers": [{"name": "c", "restartPolicyRules": [{"action": "RestartAllContainers"}]}]},
            ["RestartAllContainersOnContainerExits"],
        ),
        ({"initContainers": [{"name": "i", "restartPolicyRules": [{"action": "Restart"}]}]}, []),
        (
            {"containers": [{"name": "c", "volumeMounts": [{"name": "v", "bindMountOptions": {}}]}]},
            ["VolumeBindMountOptions"],
        ),
    ],
)
def test_required_features(spec: dict[str, Any], expected: list[str]) -> None:
    assert required_features(pod(**spec)) == expected


def test_pods_requiring_nothing_skip() -> None:
    plugin = NodeDeclaredFeatures()
    status = plugin.pre_filter(CycleState(), pod(containers=[{"name": "c"}]), NodeTable([]).all())
    assert status is not None and status.is_skip()


def test_filter_names_the_missing_features_sorted() -> None:
    plugin = NodeDeclaredFeatures()
    p = pod(
        hostNetwork=True,
        hostUsers=False,
        containers=[{"name": "c", "restartPolicyRules": [{"action": "RestartAllContainers"}]}],
    )
    state = CycleState()
    table = NodeTable(
        [
            NodeInfo(
                node("all", ["RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport"])
            ),
            NodeInfo(node("one", ["UserNamespacesHostNetworkSupport", "SomethingElse"])),
            NodeInfo(node("none", [])),
        ]
    )
    assert plugin.pre_filter(state, p, table.all()) is None
    result = plugin.filter_nodes(state, p, table.all())
    verdicts = [None if c < 0 else result.statuses[c] for c in result.codes]
    assert verdicts[0] is None
    assert verdicts[1] is not None and verdicts[1].message() == (
        "node declared features check failed - unsatisfied requirements: RestartAllContainersOnContainerExits"
    )
    assert verdicts[2] is not None and verdicts[2].message() == (
        "node declared features check failed - unsatisfied requirements: "
        "RestartAllContainersOnContainerExits, UserNamespacesHostNetworkSupport"
    )
    assert str(verdicts[2].code) == "UnschedulableAndUnresolvable"


def _hints() -> dict[Resource, QueueingHintFn]:
    return {
        r.event.resource: r.hint for r in NodeDeclaredFeatures().events_to_register() if r.hint is not None
    }


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (None, "not-a-node", QueueingHint.QUEUE),
        (None, node("n", []), QueueingHint.QUEUE),  # added
        (node("n", ["A"]), node("n", ["A"]), QueueingHint.SKIP),
        (node("n", ["A"]), node("n", ["A", "B"]), QueueingHint.QUEUE),
        (node("n", ["A", "B"]), node("n", ["B", "A"]), QueueingHint.QUEUE),  # compared in order, as upstream
    ],
)
def test_node_hint(old: object, new: object, expected: QueueingHint) -> None:
    assert _hints()[Resource.NODE](pod(), old, new) is expected


# As v1.37.2's TestIsSchedulableAfterTargetPodUpdate: a requirement added or removed queues.
@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (pod(), pod(hostNetwork=True, hostUsers=False), QueueingHint.QUEUE),
        (pod(hostNetwork=True, hostUsers=False), pod(), QueueingHint.QUEUE),
        (pod(), pod(hostNetwork=True), QueueingHint.SKIP),
        ("not-a-pod", pod(), QueueingHint.QUEUE),
    ],
)
def test_pod_update_hint(old: object, new: object, expected: QueueingHint) -> None:
    assert _hints()[Resource.TARGET_POD](pod(), old, new) is expected

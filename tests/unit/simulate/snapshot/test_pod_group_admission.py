"""Pod groups in simulate: what the API server fills in on them before the scheduler reads them."""

from __future__ import annotations

import msgspec

from kubesched.api.cluster_objects import PriorityClass
from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Node, Pod
from kubesched.api.scheduling_groups import PodGroup
from kubesched.config import default_config
from kubesched.config.features import parse_feature_gates
from kubesched.plugins import default_registry
from kubesched.simulate.snapshot.run import simulate


def pod(spec: dict[str, object], name: str) -> Pod:
    return msgspec.convert({"metadata": {"name": name}, "spec": spec}, Pod)


def pod_group(spec: dict[str, object]) -> PodGroup:
    base = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    return msgspec.convert({"metadata": {"name": "g", "namespace": "default"}, "spec": base | spec}, PodGroup)


def test_a_hand_written_gang_with_a_priority_class_is_scheduled_as_after_kubectl_apply() -> None:
    """Its pods get the class's priority; the group without `spec.priority` used to read as 0, and
    the pod-group cycle refused the members for a priority unlike the group's."""
    high = msgspec.convert({"metadata": {"name": "high"}, "value": 1000}, PriorityClass)
    node = msgspec.convert(
        {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "4", "pods": "10"}}}, Node
    )
    members = [
        pod({"priorityClassName": "high", "schedulingGroup": {"podGroupName": "g"}}, name=f"w{i}")
        for i in range(2)
    ]
    objects = LoadedObjects(
        nodes=[node],
        priority_classes=[high],
        pods=members,
        scheduling_pod_groups=[pod_group({"priorityClassName": "high"})],
    )
    registry = default_registry(features=parse_feature_gates(["GenericWorkload=true"]))
    report = simulate(objects, default_config(registry), registry)
    assert [(g.result, g.message) for g in report.pod_groups] == [("Scheduled", "")]

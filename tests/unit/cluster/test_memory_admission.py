"""MemoryCluster fills in what the API server would: uid, namespace, priority, requests from limits."""

from __future__ import annotations

import uuid

import msgspec

from kubesched.api.cluster_objects import PriorityClass
from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Pod
from kubesched.api.resources import pod_requests
from kubesched.api.scheduling_groups import PodGroup as SchedulingPodGroup
from kubesched.cluster.memory import _UID_NAMESPACE, MemoryCluster, name_uid


def pod(spec: dict[str, object], name: str = "p") -> Pod:
    return msgspec.convert({"metadata": {"name": name}, "spec": spec}, Pod)


def test_requests_default_to_limits_per_container_and_init_container() -> None:
    p = pod(
        {
            "containers": [
                {
                    "name": "a",
                    "resources": {"limits": {"cpu": "2", "nvidia.com/gpu": 1}, "requests": {"cpu": "1"}},
                },
            ],
            "initContainers": [{"name": "i", "resources": {"limits": {"memory": "1Gi"}}}],
        }
    )
    admitted = MemoryCluster(LoadedObjects()).admit(p)
    assert admitted.spec.containers[0].resources.requests == {"cpu": "1", "nvidia.com/gpu": 1}
    assert admitted.spec.init_containers[0].resources.requests == {"memory": "1Gi"}
    assert pod_requests(admitted) == {"cpu": 1000, "nvidia.com/gpu": 1, "memory": 2**30}


def test_namespace_uid_and_priority_from_class() -> None:
    objects = LoadedObjects(
        priority_classes=[
            msgspec.convert(
                {"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"}, PriorityClass
            ),
            msgspec.convert({"metadata": {"name": "base"}, "value": 7, "globalDefault": True}, PriorityClass),
        ]
    )
    cluster = MemoryCluster(objects)
    high = cluster.admit(pod({"priorityClassName": "high"}))
    assert high.metadata.namespace == "default" and high.metadata.uid
    assert (high.spec.priority, high.spec.preemption_policy) == (1000, "Never")
    assert cluster.admit(pod({}, name="q")).spec.priority == 7
    assert cluster.admit(pod({"priority": 3}, name="r")).spec.priority == 3
    assert cluster.admit(pod({})).metadata.uid == high.metadata.uid  # stable per namespace/name


def pod_group(spec: dict[str, object], name: str = "g") -> SchedulingPodGroup:
    base = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    return msgspec.convert(
        {"metadata": {"name": name, "namespace": "default"}, "spec": base | spec}, SchedulingPodGroup
    )


def test_pod_group_priority_filled_from_its_class_or_the_lowest_global_default() -> None:
    classes = [
        msgspec.convert({"metadata": {"name": "high"}, "value": 1000}, PriorityClass),
        msgspec.convert({"metadata": {"name": "base"}, "value": 7, "globalDefault": True}, PriorityClass),
        msgspec.convert({"metadata": {"name": "also"}, "value": 5, "globalDefault": True}, PriorityClass),
    ]
    groups = [pod_group({"priorityClassName": "high"}), pod_group({}, name="plain")]
    cluster = MemoryCluster(LoadedObjects(priority_classes=classes, scheduling_pod_groups=groups))
    high, plain = cluster.groups.pod_group("default", "g"), cluster.groups.pod_group("default", "plain")
    assert high is not None and plain is not None
    assert (high.spec.priority, high.spec.priority_class_name) == (1000, "high")
    assert (plain.spec.priority, plain.spec.priority_class_name) == (5, "also")  # as admission names it
    assert cluster.admit(pod({}, name="q")).spec.priority == 5  # pods take the same default
    given = pod_group({"priority": 3})
    admitted = cluster.admit_group(given)
    assert admitted.spec is given.spec  # a priority given is kept
    assert admitted.metadata.uid  # the API server gives every object a uid (claims name it)
    unknown = pod_group({"priorityClassName": "nope"})
    assert cluster.admit_group(unknown).spec.priority is None  # the API server would refuse it


def test_name_uid_is_the_uuid5_of_the_name() -> None:
    # The fast path must give the very uid uuid.uuid5 gave before: reports and goldens name pods by it.
    for name in ("default/pod-000001", "team-a/web-0", "PodGroup:ns/g", "ns/ünïcode", ""):
        assert name_uid(name) == str(uuid.uuid5(_UID_NAMESPACE, name))

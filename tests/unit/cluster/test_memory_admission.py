"""MemoryCluster fills in what the API server would: uid, namespace, priority, requests from limits."""

from __future__ import annotations

import msgspec

from kubesched.api.cluster_objects import PriorityClass
from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Pod
from kubesched.api.resources import pod_requests
from kubesched.cluster.memory import MemoryCluster


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

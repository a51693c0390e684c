"""The scheduling.k8s.io Workload API against a real kube-apiserver serving it
(`--runtime-config=scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true` and the gates
GenericWorkload, TopologyAwareWorkloadScheduling, CompositePodGroup): Workloads, PodGroups,
CompositePodGroups and a pod's `spec.schedulingGroup` created through the API reach kubesched's
informer state (with each group's pods) and explain's snapshot, and what the server returns loads
strictly from a file. A server without the API (the session's) keeps working, gates on or off.

Checked on the binary: without GenericWorkload the server serves neither group version, and it drops
a pod's `schedulingGroup` silently; with it, a PodGroup's spec comes back defaulted
(`disruptionMode.single`, `priority: 0`).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kubesched.api.loader import load_documents
from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import (
    COMPOSITE_POD_GROUP_KEY,
    POD_GROUP_KEY,
    WORKLOAD_KEY,
    CompositePodGroup,
    PodGroup,
    Workload,
)
from kubesched.cluster.kube.client import KubeClient
from kubesched.cluster.kube.live import LiveCluster
from kubesched.cluster.kube.snapshot import read_snapshot
from kubesched.config import FeatureGates, default_config
from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.fake_nodes import ApiClient, create_namespace
from kubesched.plugins import default_registry
from kubesched.simulate.explain.run import kinds_read

GATES = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True, "CompositePodGroup": True}
RUNTIME_CONFIG = ("scheduling.k8s.io/v1beta1=true", "scheduling.k8s.io/v1alpha3=true")
V1BETA1 = "/apis/scheduling.k8s.io/v1beta1"


@pytest.fixture(scope="module")
def workload_plane() -> Iterator[ControlPlane]:
    with ControlPlane(runtime_config=RUNTIME_CONFIG, feature_gates=GATES) as cp:
        yield cp


def wait_until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _create_group_objects(api: ApiClient, ns: str) -> None:
    api.post(
        f"{V1BETA1}/namespaces/{ns}/workloads",
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "Workload",
            "metadata": {"name": "train"},
            "spec": {
                "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
                "podGroupTemplates": [
                    {
                        "name": "workers",
                        "schedulingPolicy": {"gang": {"minCount": 2}},
                        "schedulingConstraints": {"topology": [{"key": "example.com/rack"}]},
                    }
                ],
            },
        },
    )
    api.post(
        f"/apis/scheduling.k8s.io/v1alpha3/namespaces/{ns}/compositepodgroups",
        {
            "apiVersion": "scheduling.k8s.io/v1alpha3",
            "kind": "CompositePodGroup",
            "metadata": {"name": "all"},
            "spec": {
                "workloadRef": {"workloadName": "train", "templateName": "all"},
                "schedulingPolicy": {"gang": {"minGroupCount": 1}},
            },
        },
    )
    api.post(
        f"{V1BETA1}/namespaces/{ns}/podgroups",
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "train-workers"},
            "spec": {
                "workloadRef": {"workloadName": "train", "templateName": "workers"},
                "parentCompositePodGroupName": "all",
                "schedulingPolicy": {"gang": {"minCount": 2}},
                "schedulingConstraints": {"topology": [{"key": "example.com/rack"}]},
            },
        },
    )
    for i in range(2):
        api.post(
            f"/api/v1/namespaces/{ns}/pods",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"w{i}"},
                "spec": {
                    "schedulerName": "nobody",  # nothing binds them: this test reads, it does not schedule
                    "schedulingGroup": {"podGroupName": "train-workers"},
                    "containers": [{"name": "c", "image": "trainer"}],
                },
            },
        )


def _gated_registry() -> Any:
    return default_registry(entry_points=False, features=FeatureGates(explicit=GATES))


def test_objects_created_through_the_api_reach_the_informers_and_explains_snapshot(
    workload_plane: ControlPlane,
) -> None:
    api = ApiClient.for_control_plane(workload_plane)
    ns = f"it-{uuid.uuid4().hex[:8]}"
    create_namespace(api, ns)
    _create_group_objects(api, ns)
    registry = _gated_registry()
    with KubeClient.from_kubeconfig(str(workload_plane.kubeconfig_path), qps=-1, burst=1) as client:
        cluster = LiveCluster(default_config(registry), registry, client)
        cluster.start_informers()
        try:
            assert cluster.wait_for_sync(30)
            assert {POD_GROUP_KEY, WORKLOAD_KEY, COMPOSITE_POD_GROUP_KEY} <= set(cluster.informers)
            wait_until(lambda: len(cluster.groups.pods_of(ns, "train-workers")) == 2, 30, "the group's pods")
            group = cluster.groups.pod_group(ns, "train-workers")
            assert isinstance(group, PodGroup)
            assert (
                group.spec.scheduling_policy.gang is not None
                and group.spec.scheduling_policy.gang.min_count == 2
            )
            assert group.spec.parent_composite_pod_group_name == "all"
            assert group.spec.disruption_mode is not None and group.spec.disruption_mode.single is not None
            assert isinstance(cluster.groups.workload(ns, "train"), Workload)
            assert isinstance(cluster.groups.composite_pod_group(ns, "all"), CompositePodGroup)
            assert any(g.metadata.namespace == ns for g in cluster.lister(POD_GROUP_KEY))
            assert cluster.lister("PodGroup") == []  # scheduler-plugins' kind is another API
            # A later change arrives through the watch.
            api.post(
                f"{V1BETA1}/namespaces/{ns}/podgroups",
                {"metadata": {"name": "late"}, "spec": {"schedulingPolicy": {"basic": {}}}},
            )
            wait_until(lambda: cluster.groups.pod_group(ns, "late") is not None, 30, "the watched PodGroup")
        finally:
            cluster.stop(5)

        kinds = kinds_read(default_config(registry), registry)
        assert kinds is not None and POD_GROUP_KEY in kinds
        snap = read_snapshot(client, sorted(kinds), gates=registry.features)
    groups = [g for g in snap.objects.scheduling_pod_groups if g.metadata.namespace == ns]
    assert sorted(g.metadata.name for g in groups) == ["late", "train-workers"]
    assert [w.metadata.name for w in snap.objects.workloads if w.metadata.namespace == ns] == ["train"]
    assert [c.metadata.name for c in snap.objects.composite_pod_groups if c.metadata.namespace == ns] == [
        "all"
    ]
    pods = [p for p in snap.objects.pods if p.metadata.namespace == ns]
    assert {p.spec.scheduling_group.pod_group_name for p in pods if p.spec.scheduling_group} == {
        "train-workers"
    }


def test_what_the_server_returns_loads_strictly_from_a_file(workload_plane: ControlPlane) -> None:
    api = ApiClient.for_control_plane(workload_plane)
    ns = f"it-{uuid.uuid4().hex[:8]}"
    create_namespace(api, ns)
    _create_group_objects(api, ns)
    items: list[Any] = []
    for path in (
        f"{V1BETA1}/namespaces/{ns}/workloads",
        f"{V1BETA1}/namespaces/{ns}/podgroups",
        f"/apis/scheduling.k8s.io/v1alpha3/namespaces/{ns}/compositepodgroups",
        f"/apis/scheduling.k8s.io/v1alpha3/namespaces/{ns}/podgroups",
        f"/api/v1/namespaces/{ns}/pods",
    ):
        listed = api.get(path)
        version = path.split("/namespaces/")[0].removeprefix("/apis/").removeprefix("/api/")
        kind = listed["kind"].removesuffix("List")
        items += [{"apiVersion": version, "kind": kind, **item} for item in listed["items"]]
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})  # `kubectl get -o json`
    objects = load_documents(text, "server.json")
    assert [type(o).__name__ for o in objects] == [
        "Workload", "PodGroup", "CompositePodGroup", "PodGroup", "Pod", "Pod"
    ]  # fmt: skip
    v1alpha3_group = objects[3]
    assert isinstance(v1alpha3_group, PodGroup) and v1alpha3_group.api_version == "scheduling.k8s.io/v1alpha3"
    pod = objects[4]
    assert isinstance(pod, Pod) and pod.spec.scheduling_group is not None


def test_a_server_without_the_api_keeps_working(control_plane: ControlPlane) -> None:
    registry = _gated_registry()
    with KubeClient.from_kubeconfig(str(control_plane.kubeconfig_path), qps=-1, burst=1) as client:
        cluster = LiveCluster(default_config(registry), registry, client)
        try:
            keys = [rk.key for rk in cluster.discover()]
        finally:
            cluster.stop(1)
        assert "Pod" in keys and POD_GROUP_KEY not in keys
        snap = read_snapshot(client, [POD_GROUP_KEY, WORKLOAD_KEY], gates=registry.features)
    assert (
        "APIs this cluster does not serve, so it has none of their objects: "
        "PodGroup (scheduling.k8s.io/v1beta1), Workload (scheduling.k8s.io/v1beta1)"
    ) in snap.notes
    assert snap.objects.scheduling_pod_groups == []

"""The scheduling.k8s.io kinds in live mode: watched only with their feature gate on and when the
server serves them (a cluster without the API is never asked for them, not even by discovery);
their informer events and the pods' feed `LiveCluster.groups`."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from kube_fakes import pod_json

from kubesched.api.loader import LoadedObjects, load_documents
from kubesched.api.scheduling_groups import COMPOSITE_POD_GROUP_KEY, POD_GROUP_KEY, WORKLOAD_KEY, PodGroup
from kubesched.cluster.kube.client import ApiError, Response
from kubesched.cluster.kube.informer import KINDS
from kubesched.cluster.kube.live import LiveCluster
from kubesched.cluster.kube.snapshot import read_snapshot
from kubesched.config import FeatureGates, default_config
from kubesched.extender.state import ClusterState, LiveClusterState
from kubesched.plugins import default_registry

GATES_ON = FeatureGates(
    explicit={"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True, "CompositePodGroup": True}
)


class DiscoveryKube:
    """Serves the core kinds, and scheduling.k8s.io's when `api` says so; records what is asked."""

    def __init__(self, *, api: bool, forbidden: frozenset[str] = frozenset()) -> None:
        self.server = "https://fake"
        self.api = api
        self.forbidden = forbidden
        self.discovered: list[str] = []
        self.gets: list[str] = []

    def served_resources(self, group_version: str) -> set[str] | None:
        self.discovered.append(group_version)
        if group_version == "v1":
            return {"pods", "nodes"}
        if self.api and group_version == "scheduling.k8s.io/v1beta1":
            return {"podgroups", "podgroups/status", "workloads"}
        if self.api and group_version == "scheduling.k8s.io/v1alpha3":
            return {"compositepodgroups", "podgroups", "workloads"}
        return None

    def get(self, path: str, params: Any = None) -> Response:
        self.gets.append(path)
        if path.rpartition("/")[2] in self.forbidden:
            raise ApiError(403, "Forbidden", f"{path} is forbidden")
        return Response(200, b'{"metadata": {"resourceVersion": "1"}, "items": []}')


def _live(gates: FeatureGates, kube: DiscoveryKube) -> LiveCluster:
    registry = default_registry(entry_points=False, features=gates)
    return LiveCluster(default_config(registry), registry, kube)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("gates", "api", "watched"),
    [
        (FeatureGates(), True, []),
        (GATES_ON, False, []),
        (GATES_ON, True, [POD_GROUP_KEY, WORKLOAD_KEY, COMPOSITE_POD_GROUP_KEY]),
        (FeatureGates(explicit={"GenericWorkload": True}), True, [POD_GROUP_KEY, WORKLOAD_KEY]),
    ],
    ids=["gate-off", "not-served", "served", "composite-gate-off"],
)
def test_the_kinds_are_watched_only_with_the_gate_on_and_the_api_served(
    gates: FeatureGates, api: bool, watched: list[str]
) -> None:
    kube = DiscoveryKube(api=api)
    cluster = _live(gates, kube)
    try:
        keys = [rk.key for rk in cluster.discover()]
    finally:
        cluster.stop(1)
    assert [k for k in keys if k.startswith("scheduling.k8s.io/")] == watched
    assert "PodGroup" not in keys  # scheduler-plugins' CRD is not served here
    if not gates.enabled("GenericWorkload"):
        assert "scheduling.k8s.io/v1beta1" not in kube.discovered
        assert "scheduling.k8s.io/v1alpha3" not in kube.discovered


def test_a_kind_the_scheduler_may_not_list_is_skipped_with_the_permission_to_grant(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Upstream's kube-scheduler role grants no `workloads`: a scheduler run under it must not wait
    forever for an informer that cannot list."""
    cluster = _live(GATES_ON, DiscoveryKube(api=True, forbidden=frozenset({"workloads"})))
    try:
        keys = [rk.key for rk in cluster.discover()]
    finally:
        cluster.stop(1)
    assert POD_GROUP_KEY in keys and WORKLOAD_KEY not in keys
    assert "grant get/list/watch on workloads in API group scheduling.k8s.io" in caplog.text


def test_informer_events_and_pods_feed_the_groups() -> None:
    cluster = _live(GATES_ON, DiscoveryKube(api=True))
    try:
        handlers = cluster.feeds.handlers_for(POD_GROUP_KEY)
        assert handlers is not None
        group = PodGroup(metadata=msgspec.structs.replace(PodGroup().metadata, name="g", namespace="ml"))
        handlers.on_add(group)
        pod_handlers = cluster.feeds.handlers_for("Pod")
        assert pod_handlers is not None
        doc = pod_json("w0", scheduler="nobody")
        doc["metadata"]["namespace"] = "ml"
        doc["spec"]["schedulingGroup"] = {"podGroupName": "g"}
        pod = msgspec.convert(doc, KINDS["Pod"].type)
        pod_handlers.on_add(pod)
        assert cluster.groups.pod_group("ml", "g") is group
        assert cluster.groups.pods_of("ml", "g") == [pod]
        pod_handlers.on_delete(pod)
        handlers.on_delete(group)
        assert cluster.groups.pods_of("ml", "g") == []
        assert cluster.groups.pod_group("ml", "g") is None
    finally:
        cluster.stop(1)


@pytest.mark.parametrize("gates", [FeatureGates(), GATES_ON], ids=["gate-off", "gate-on"])
def test_explain_snapshot_and_extender_follow_the_gates(gates: FeatureGates) -> None:
    kube = DiscoveryKube(api=True)
    snap = read_snapshot(kube, list(KINDS), gates=gates)  # type: ignore[arg-type]
    listed = [path for path in kube.gets if "/scheduling.k8s.io/" in path]
    if gates.enabled("GenericWorkload"):
        assert {POD_GROUP_KEY, WORKLOAD_KEY, COMPOSITE_POD_GROUP_KEY} <= set(snap.kinds)
        assert any(path.endswith("/podgroups") for path in listed)
    else:
        assert listed == [] and not [k for k in snap.kinds if k.startswith("scheduling.k8s.io/")]
    state = LiveClusterState(kube, gates=gates)  # type: ignore[arg-type]
    kube.discovered.clear()
    state.start()
    try:
        asked = {"scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha3"} & set(kube.discovered)
        assert bool(asked) == gates.enabled("GenericWorkload")
        assert (POD_GROUP_KEY in state.informers) == gates.enabled("GenericWorkload")
    finally:
        state.stop()


def test_the_extenders_fixed_snapshot_has_the_groups_of_its_files() -> None:
    text = (
        "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: g, namespace: ml}\n"
        "spec: {schedulingPolicy: {gang: {minCount: 2}}}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: w0, namespace: ml}\n"
        "spec: {schedulingGroup: {podGroupName: g}, containers: [{name: c}]}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: done, namespace: ml}\n"
        "spec: {schedulingGroup: {podGroupName: g}, containers: [{name: c}]}\nstatus: {phase: Succeeded}\n"
    )
    objects = LoadedObjects()
    for obj in load_documents(text, "in.yaml"):
        objects.add(obj)
    state = ClusterState.from_objects(objects)
    (group,) = state.lister(POD_GROUP_KEY)
    assert isinstance(group, PodGroup) and state.groups.pod_group("ml", "g") is group
    assert [p.metadata.name for p in state.groups.pods_of("ml", "g")] == ["w0"]  # finished pods left out
    assert state.lister("PodGroup") == []

"""SchedulingGroups: the group objects by namespace/name and each PodGroup's pods, kept current by
the pod changes a cluster delivers; MemoryCluster keeps one from its input files on."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.loader import LoadedObjects, load_documents
from kubesched.api.meta import ObjectMeta
from kubesched.api.objects import Pod, PodSchedulingGroup, PodSpec
from kubesched.api.scheduling_groups import (
    COMPOSITE_POD_GROUP_KEY,
    POD_GROUP_KEY,
    WORKLOAD_KEY,
    CompositePodGroup,
    PodGroup,
    Workload,
)
from kubesched.cluster.memory import MemoryCluster
from kubesched.framework.pod_groups import SchedulingGroups, pod_group_of
from kubesched.testing.builders import make_node


def _pod(name: str, group: str | None, namespace: str = "ml") -> Pod:
    scheduling_group = None if group is None else PodSchedulingGroup(pod_group_name=group)
    return Pod(
        metadata=ObjectMeta(name=name, namespace=namespace, uid=f"uid-{namespace}-{name}"),
        spec=PodSpec(scheduling_group=scheduling_group),
    )


def _group(name: str, namespace: str = "ml") -> PodGroup:
    return PodGroup(metadata=ObjectMeta(name=name, namespace=namespace))


def test_pods_join_the_group_they_name_in_their_namespace() -> None:
    assert pod_group_of(_pod("a", "g")) == ("ml", "g")
    assert pod_group_of(_pod("a", None)) is None
    assert pod_group_of(_pod("a", "g", namespace="")) == ("default", "g")
    groups = SchedulingGroups([_group("g")], [_pod("a", "g"), _pod("b", None), _pod("c", "g", namespace="x")])
    assert [p.metadata.name for p in groups.pods_of("ml", "g")] == ["a"]
    assert [p.metadata.name for p in groups.pods_of("x", "g")] == ["c"]  # a group not created yet
    assert groups.pod_group("ml", "g") == _group("g")
    assert groups.pod_group("x", "g") is None
    assert groups.groups_with_pods() == [("ml", "g"), ("x", "g")]


def test_pod_changes_keep_the_members_current() -> None:
    groups = SchedulingGroups()
    a, b = _pod("a", "g"), _pod("b", "g")
    groups.on_pod_add(a)
    groups.on_pod_add(b)
    bound = msgspec.structs.replace(a, spec=msgspec.structs.replace(a.spec, node_name="n1"))
    groups.on_pod_update(a, bound)
    assert groups.pods_of("ml", "g") == [bound, b]
    moved = msgspec.structs.replace(b, spec=PodSpec(scheduling_group=PodSchedulingGroup(pod_group_name="h")))
    groups.on_pod_update(b, moved)
    assert groups.pods_of("ml", "g") == [bound]
    assert groups.pods_of("ml", "h") == [moved]
    groups.on_pod_delete(bound)
    assert groups.pods_of("ml", "g") == []
    assert groups.groups_with_pods() == [("ml", "h")]


def test_a_state_splits_the_members_into_scheduled_and_not_as_they_were_when_taken() -> None:
    """Bound (nodeName) and assumed pods are scheduled; the state is the group when it was taken:
    a pod joining later is not in it."""
    a, b, c = _pod("a", "g"), _pod("b", "g"), _pod("c", "g")
    bound = msgspec.structs.replace(a, spec=msgspec.structs.replace(a.spec, node_name="n1"))
    groups = SchedulingGroups([_group("g")], [bound, b, c])
    asked: list[str] = []

    def assumed(key: str) -> bool:
        asked.append(key)
        return key == "uid-ml-b"

    state = groups.state("ml", "g", assumed)
    assert state is not None and state.pod_group == _group("g")
    assert state.all_pods_count() == 3 and asked == []  # PreEnqueue's question asks no cache
    groups.on_pod_add(_pod("d", "g"))
    assert state.pods == (bound, b, c)
    assert state.scheduled == {"uid-ml-a", "uid-ml-b"} and state.scheduled_count() == 2
    assert state.unscheduled_pods() == [c]
    assert state.assumed_keys() == ["uid-ml-b"]
    assert groups.state("ml", "none", assumed) is None
    assert groups.state("ml", "g", assumed) is not state


def test_objects_are_put_replaced_and_removed_by_kind() -> None:
    groups = SchedulingGroups()
    workload = Workload(metadata=ObjectMeta(name="w", namespace="ml"))
    composite = CompositePodGroup(metadata=ObjectMeta(name="c", namespace="ml"))
    for obj in (workload, composite, _group("g")):
        groups.put(obj)
    assert groups.workload("ml", "w") is workload
    assert groups.composite_pod_group("ml", "c") is composite
    assert groups.lister(WORKLOAD_KEY) == [workload]
    assert groups.lister(COMPOSITE_POD_GROUP_KEY) == [composite]
    assert groups.lister("PodGroup") is None  # scheduler-plugins' kind is not these
    newer = msgspec.structs.replace(_group("g"), metadata=ObjectMeta(name="g", namespace="ml", generation=2))
    groups.put(newer)
    assert groups.lister(POD_GROUP_KEY) == [newer]
    groups.remove(newer)
    assert groups.pod_group("ml", "g") is None


def test_a_composites_children_are_the_groups_that_name_it_in_its_namespace() -> None:
    def child(kind: type[PodGroup] | type[CompositePodGroup], name: str, parent: str, ns: str = "ml") -> Any:
        obj = kind(metadata=ObjectMeta(name=name, namespace=ns))
        spec = msgspec.structs.replace(obj.spec, parent_composite_pod_group_name=parent)
        return msgspec.structs.replace(obj, spec=spec)

    a, b = child(PodGroup, "a", "top"), child(PodGroup, "b", "mid")
    mid, elsewhere = child(CompositePodGroup, "mid", "top"), child(PodGroup, "c", "top", ns="other")
    groups = SchedulingGroups(
        [a, b, mid, elsewhere, CompositePodGroup(metadata=ObjectMeta(name="top", namespace="ml"))]
    )
    assert groups.children_of("ml", "top") == ([a], [mid])
    assert groups.children_of("ml", "mid") == ([b], [])
    assert groups.children_of("other", "top") == ([elsewhere], [])
    assert groups.children_of("ml", "a") == ([], [])


MANIFESTS = """\
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: train}
spec: {schedulingPolicy: {gang: {minCount: 2}}}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: train}
spec: {minMember: 2}
---
apiVersion: v1
kind: Pod
metadata: {name: w0}
spec:
  schedulingGroup: {podGroupName: train}
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
"""


def test_memory_cluster_lists_the_native_kinds_apart_and_follows_pods() -> None:
    objects = LoadedObjects(nodes=[make_node("n1", cpu="4")])
    for obj in load_documents(MANIFESTS, "in.yaml"):
        objects.add(obj)
    cluster = MemoryCluster(objects)
    (native,) = cluster.lister(POD_GROUP_KEY)
    assert isinstance(native, PodGroup) and native.spec.scheduling_policy.gang is not None
    (plugins_group,) = cluster.lister("PodGroup")
    assert not isinstance(plugins_group, PodGroup)
    (w0,) = cluster.groups.pods_of("default", "train")
    assert w0.metadata.uid  # as admitted
    cluster.bind(w0, "n1")
    assert [p.spec.node_name for p in cluster.groups.pods_of("default", "train")] == ["n1"]
    created = cluster.create_pod(_pod("w1", "train", namespace="default"))
    assert [p.metadata.name for p in cluster.groups.pods_of("default", "train")] == ["w0", "w1"]
    cluster.delete_pod(created, reason="test", message="")
    assert [p.metadata.name for p in cluster.groups.pods_of("default", "train")] == ["w0"]


_NAMES = st.sampled_from(["a", "b", "c", "d"])
_GROUPS = st.sampled_from([None, "g", "h"])
_OPS = st.lists(
    st.tuples(st.sampled_from(["add", "update", "delete"]), _NAMES, _GROUPS, st.booleans()), max_size=30
)


@settings(max_examples=200, deadline=None)
@given(ops=_OPS)
def test_the_members_are_what_the_delivered_pods_say(ops: list[tuple[str, str, str | None, bool]]) -> None:
    """Any sequence of pod changes (as a cluster delivers them: updates and deletes of pods it holds)
    leaves each group with exactly the live pods that name it, in the order they first joined."""
    groups = SchedulingGroups()
    live: dict[str, Pod] = {}
    joined: dict[str, int] = {}
    clock = 0
    for op, name, group, bound in ops:
        clock += 1
        pod = _pod(name, group)
        if bound:
            pod = msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name="n1"))
        old = live.get(name)
        if op == "delete":
            if old is not None:
                groups.on_pod_delete(old)
                del live[name]
            continue
        if old is None:
            groups.on_pod_add(pod)
        else:
            groups.on_pod_update(old, pod)
        if old is None or pod_group_of(old) != pod_group_of(pod):
            joined[name] = clock
        live[name] = pod
    for group in ("g", "h"):
        expected = sorted(
            (p for p in live.values() if pod_group_of(p) == ("ml", group)),
            key=lambda p: joined[p.metadata.name],
        )
        assert groups.pods_of("ml", group) == expected
    assert set(groups.groups_with_pods()) == {pod_group_of(p) for p in live.values()} - {None}
